/**
 * The embedded database in a worker thread (PGLITE_WORKER: by default `auto`, on with 2+ cores): PGlite runs PostgreSQL as
 * synchronous WASM, so in the service's own thread every statement stalls HTTP and crawls alike. Here
 * a worker thread owns the instance (src/db/pglite-host.ts) and this proxy offers what drizzle-orm's
 * PGlite driver, pg-boss's `fromPglite` and the notifier use: `query`, `exec` (with a COPY's `blob`),
 * `transaction`, `listen`, `dumpDataDir`, `close`, and `pipeline` (a whole write transaction). One message per
 * statement (PGliteWorker, made for browsers, sends one per protocol message and elects a leader over
 * BroadcastChannel: several per statement).
 */
import { Worker } from 'node:worker_threads';
import type { PGlite, QueryOptions, Results, Transaction } from '@electric-sql/pglite';
import type {
  HostError,
  QueryOptions as HostQueryOptions,
  HostReply,
  HostRequest,
  WorkerOpenOptions,
} from './pglite-protocol.ts';
import type { PipelineOutcome, PipelineStep } from './pipeline.ts';

type Request = HostRequest extends infer R ? (R extends HostRequest ? Omit<R, 'id'> : never) : never;

/**
 * The part of PGlite the service uses; the in-process instance and the worker proxy both offer it. The proxy adds
 * `pipeline` (a write transaction in one message); in the process `runPipeline` does the same.
 */
export type EmbeddedDatabase = Pick<PGlite, 'query' | 'exec' | 'transaction' | 'listen' | 'dumpDataDir' | 'close'> & {
  pipeline?(steps: PipelineStep[]): Promise<PipelineOutcome>;
};

/** A driver error rebuilt on this side, with its SQLSTATE and the rest of its fields. */
function rebuild(error: HostError): Error {
  const err = new Error(error.message);
  err.name = error.name;
  Object.assign(err, error.props);
  return err;
}

/** Lost the worker: every statement fails as on a lost connection (SQLSTATE 08006), never hangs. */
const workerGone = (why: string) =>
  Object.assign(new Error(`the embedded database's worker thread stopped: ${why}`), { code: '08006' });

/** Applies the caller's parsers (drizzle's keep timestamps as text) to the columns of the types they name. */
function parsed<T>(result: Results<T>, parsers: QueryOptions['parsers']): Results<T> {
  if (!parsers || !result.fields.length) return result;
  const byType = parsers as Record<number, ((value: string, typeId: number) => unknown) | undefined>;
  const columns = result.fields.flatMap((f, i) => {
    const parse = byType[f.dataTypeID];
    return parse ? [{ key: Array.isArray(result.rows[0]) ? i : f.name, parse, type: f.dataTypeID }] : [];
  });
  if (!columns.length) return result;
  for (const row of result.rows as Record<string | number, unknown>[]) {
    for (const { key, parse, type } of columns) {
      const value = row[key];
      if (typeof value === 'string') row[key] = parse(value, type);
    }
  }
  return result;
}

function hostOptions(options: QueryOptions | undefined): HostQueryOptions | undefined {
  if (!options) return undefined;
  return {
    rowMode: options.rowMode,
    paramTypes: options.paramTypes,
    rawTypes: options.parsers ? Object.keys(options.parsers).map(Number) : undefined,
    blob: options.blob,
  };
}

export async function openPgliteWorker(options: WorkerOpenOptions): Promise<EmbeddedDatabase> {
  const worker = new Worker(new URL('./pglite-host.ts', import.meta.url), { workerData: options });
  const pending = new Map<number, { resolve(value: unknown): void; reject(err: Error): void }>();
  const listeners = new Map<string, Set<(payload: string) => void>>();
  let nextId = 1;
  let gone: Error | undefined;

  // The worker keeps the process alive only while a statement is under way (as the in-process instance does).
  const settle = () => {
    if (pending.size === 0) worker.unref();
  };
  const ready = new Promise<void>((resolve, reject) => {
    pending.set(0, { resolve: () => resolve(), reject });
  });
  const fail = (err: Error) => {
    gone ??= err;
    for (const p of pending.values()) p.reject(gone);
    pending.clear();
  };
  worker.on('message', (message: HostReply) => {
    if ('notify' in message) {
      for (const listener of listeners.get(message.notify) ?? []) listener(message.payload);
      return;
    }
    const waiting = pending.get(message.id);
    if (!waiting) return;
    pending.delete(message.id);
    settle();
    if (message.ok) waiting.resolve(message.value);
    else waiting.reject(rebuild(message.error));
  });
  worker.on('error', (err) => fail(workerGone(err.message)));
  worker.on('exit', (code) => fail(workerGone(`exit code ${code}`)));

  const call = <T>(request: Request): Promise<T> => {
    if (gone) return Promise.reject(gone);
    const id = nextId++;
    if (pending.size === 0) worker.ref();
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ ...request, id });
    });
  };

  const query = async <T>(sql: string, params?: unknown[], opts?: QueryOptions, tx?: number) =>
    parsed(await call<Results<T>>({ op: 'query', sql, params, options: hostOptions(opts), tx }), opts?.parsers);
  // A COPY's blob goes as it is: structured clone hands the worker a reference to a Blob's bytes, not a copy.
  const exec = (sql: string, opts?: QueryOptions, tx?: number) =>
    call<Results[]>({ op: 'exec', sql, tx, blob: opts?.blob });

  const listen = async (channel: string, callback: (payload: string) => void) => {
    const set = listeners.get(channel) ?? new Set();
    listeners.set(channel, set);
    if (!set.size) await call({ op: 'listen', channel });
    set.add(callback);
    return async () => {
      set.delete(callback);
      if (!set.size && listeners.get(channel) === set) {
        listeners.delete(channel);
        await call({ op: 'unlisten', channel });
      }
    };
  };

  async function transaction<T>(callback: (tx: Transaction) => Promise<T>): Promise<T> {
    const txId = await call<number>({ op: 'begin' });
    let closed = false;
    const open = () => {
      if (closed) throw new Error('Transaction is closed');
    };
    const tx = {
      query: async <R>(sql: string, params?: unknown[], opts?: QueryOptions) => {
        open();
        return query<R>(sql, params, opts, txId);
      },
      exec: async (sql: string, opts?: QueryOptions) => {
        open();
        return exec(sql, opts, txId);
      },
      sql: async () => {
        throw new Error('tx.sql is not offered by the embedded database worker; use tx.query');
      },
      rollback: async () => {
        open();
        closed = true;
        await call({ op: 'end', tx: txId, commit: false });
      },
      listen,
      get closed() {
        return closed;
      },
    } as unknown as Transaction;
    let result: T;
    try {
      result = await callback(tx);
    } catch (err) {
      if (!closed) {
        closed = true;
        await call({ op: 'end', tx: txId, commit: false }).catch(() => {});
      }
      throw err;
    }
    if (!closed) {
      closed = true;
      await call({ op: 'end', tx: txId, commit: true });
    }
    return result;
  }

  try {
    await ready;
  } catch (err) {
    await worker.terminate();
    throw err;
  }
  settle();
  return {
    query: query as PGlite['query'],
    exec: ((sql: string, opts?: QueryOptions) => exec(sql, opts)) as PGlite['exec'],
    transaction: transaction as PGlite['transaction'],
    listen: listen as PGlite['listen'],
    dumpDataDir: ((compression) => call({ op: 'dump', compression })) as PGlite['dumpDataDir'],
    pipeline: (steps) => call<PipelineOutcome>({ op: 'pipeline', steps }),
    async close() {
      if (gone) return;
      try {
        await call({ op: 'close' });
      } finally {
        fail(workerGone('closed'));
        await worker.terminate();
      }
    },
  };
}
