/**
 * The worker-thread side of the embedded database (src/db/pglite-worker.ts is the other side): this
 * thread owns the PGlite instance, so PostgreSQL's work (WASM, synchronous) never stalls the
 * service's event loop. One message per statement; a transaction holds PGlite's own transaction lock
 * until the main thread ends it, so every other statement queues behind it, as it would in-process. A `pipeline`
 * (src/db/pipeline.ts) is a whole transaction in one message: the lock is held for its SQL only.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import type { HostReply, HostRequest, QueryOptions, WorkerOpenOptions } from './pglite-protocol.ts';
import { runPipeline } from './pipeline.ts';

const port = parentPort!;
const options = workerData as WorkerOpenOptions;
const reply = (message: HostReply) => port.postMessage(message);

/** What a driver error carries (SQLSTATE, constraint…): structured clone keeps only message and stack. */
function errorOf(err: unknown): { message: string; name: string; props: Record<string, unknown> } {
  if (!(err instanceof Error)) return { message: String(err), name: 'Error', props: {} };
  const props: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(err)) {
    if (value === undefined || typeof value === 'function' || key === 'cause') continue;
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) continue;
    props[key] = value;
  }
  return { message: err.message, name: err.name, props };
}

/** The caller's own parsers run on the main thread: here the columns they name come back as text. */
function pgliteOptions(opts: QueryOptions | undefined) {
  if (!opts) return undefined;
  const parsers = opts.rawTypes?.length
    ? Object.fromEntries(opts.rawTypes.map((t) => [t, (v: string) => v]))
    : undefined;
  return { rowMode: opts.rowMode, paramTypes: opts.paramTypes, blob: opts.blob, ...(parsers ? { parsers } : {}) };
}

/** A result as the main thread can receive it (a blob a COPY TO wrote is not carried: nothing here writes one). */
const strip = <T extends { blob?: unknown }>({ blob: _blob, ...result }: T) => result;

const db = await PGlite.create(
  options.dataDir
    ? { dataDir: options.dataDir, postgresqlconf: options.postgresqlconf }
    : { loadDataDir: options.loadDataDir },
).catch((err) => {
  reply({ id: 0, ok: false, error: errorOf(err) });
  throw err;
});

const transactions = new Map<number, { tx: Transaction; end(commit: boolean): void; done: Promise<void> }>();
const unlistens = new Map<string, () => Promise<void>>();
let nextTx = 1;
/** Thrown inside PGlite's transaction to make it roll back; not an error of the caller's. */
const ROLLBACK = Symbol('rollback');

function target(tx: number | undefined): Pick<Transaction, 'query' | 'exec'> {
  if (tx === undefined) return db;
  const open = transactions.get(tx);
  if (!open) throw new Error('Transaction is closed');
  return open.tx;
}

async function handle(req: HostRequest): Promise<unknown> {
  switch (req.op) {
    case 'query':
      return strip(await target(req.tx).query(req.sql, req.params, pgliteOptions(req.options)));
    case 'exec':
      return (await target(req.tx).exec(req.sql, req.blob ? { blob: req.blob } : undefined)).map(strip);
    case 'pipeline':
      return await runPipeline(db, req.steps);
    case 'begin': {
      const txId = nextTx++;
      let settle: (commit: boolean) => void = () => {};
      const held = new Promise<void>((resolve, reject) => {
        settle = (commit) => (commit ? resolve() : reject(ROLLBACK));
      });
      // Answers once the transaction is open; it ends (COMMIT or ROLLBACK) when the main thread says so.
      return await new Promise<number>((opened, failed) => {
        const entry = { tx: undefined as unknown as Transaction, end: settle, done: Promise.resolve() };
        entry.done = db
          .transaction(async (tx) => {
            entry.tx = tx;
            transactions.set(txId, entry);
            opened(txId);
            await held;
          })
          .catch((err) => {
            if (err !== ROLLBACK) throw err;
          })
          .finally(() => transactions.delete(txId));
        entry.done.catch(failed); // BEGIN itself failed: the callback never ran
      });
    }
    case 'end': {
      const open = transactions.get(req.tx);
      if (!open) throw new Error('Transaction is closed');
      open.end(req.commit);
      await open.done;
      return null;
    }
    case 'listen': {
      if (!unlistens.has(req.channel))
        unlistens.set(
          req.channel,
          await db.listen(req.channel, (payload) => port.postMessage({ notify: req.channel, payload })),
        );
      return null;
    }
    case 'unlisten': {
      const unlisten = unlistens.get(req.channel);
      unlistens.delete(req.channel);
      await unlisten?.();
      return null;
    }
    case 'dump':
      return await db.dumpDataDir(req.compression);
    case 'close':
      await db.close();
      return null;
  }
}

port.on('message', (req: HostRequest) => {
  handle(req).then(
    (value) => reply({ id: req.id, ok: true, value }),
    (err) => reply({ id: req.id, ok: false, error: errorOf(err) }),
  );
});
reply({ id: 0, ok: true, value: null });
