/**
 * Runs pushes in this process (docs/destinations.md): claims the push's row, reads the selected leads newest first
 * in batches (the leads list's own filter and keyset, through the leads module's face) and writes each batch to the
 * target, reading the next batch meanwhile. After each batch the last lead id delivered is recorded: a run taken
 * over after a crash (heartbeats, src/shared/recovery-sweep.ts) continues after it, and the batch it may repeat
 * is idempotent at the target (the lead id as primary key, upsert on email, the same S3 key or webhook-id).
 */
import type { AppDeps } from '../../deps.ts';
import { QUEUES } from '../../queue/queues.ts';
import { encodeCursor } from '../../shared/pagination.ts';
import { newWorkerId, RECOVERY_MAX_ATTEMPTS, staleBefore, sweepLoop } from '../../shared/recovery-sweep.ts';
import { createLeadCopyOut, createLeadService, type LeadCopyOut, type listLeadsQuery } from '../leads/index.ts';
import { destinationSecrets, targetOf } from './destinations.open.ts';
import { destinationRepository, type PushRow } from './destinations.repository.ts';
import { type DestinationService, emitPushFinished } from './destinations.service.ts';
import { type CopySource, LEAD_COLUMNS, type PushLead, type Target, TargetError } from './destinations.target.ts';

export const HEARTBEAT_MS = 5_000;
export const STALE_AFTER_MS = 30_000;
/** Above every lead id: where a push of given ids starts. */
const TOP = 'g';

interface Batch {
  /** Writes the batch as part `part` and answers how many leads it delivered. */
  send?: (part: number) => Promise<number>;
  /** The last id of the batch (the cursor to record), undefined when it is empty. */
  lastId?: string;
  /** Given ids that name no lead any more (deleted since the push was made). */
  missing: number;
  end: boolean;
}

const pick = (l: PushLead): PushLead => ({
  id: l.id,
  firstName: l.firstName,
  lastName: l.lastName,
  email: l.email,
  phone: l.phone,
  company: l.company,
  jobTitle: l.jobTitle,
  status: l.status,
  tags: l.tags,
  sourceUrl: l.sourceUrl,
  createdAt: l.createdAt,
});

/** A batch of leads read here, encoded at once (while the last batch is written), sent when its turn comes. */
function encoded(target: Target, leads: PushLead[], rest: Omit<Batch, 'send'>): Batch {
  if (!leads.length) return rest;
  const body = target.encode(leads);
  return { ...rest, send: (part) => target.write(body, part).then(() => leads.length) };
}

type PushFilter = Omit<ReturnType<typeof listLeadsQuery.parse>, 'limit' | 'cursor'>;

/**
 * A filtered push from PostgreSQL to a target taking COPY streams: each batch is an id range of the list (its lower
 * end found by one indexed query while the last batch is written), streamed by COPY from the leads table into the
 * target's COPY without becoming objects here.
 */
function copiedBatches(copyOut: LeadCopyOut, target: Target, push: PushRow, filter: PushFilter) {
  if (copyOut.columns.map(([c]) => c).join() !== LEAD_COLUMNS.map(([c]) => c).join())
    throw new Error('the leads COPY columns are not the destination columns');
  const writeCopy = target.writeCopy!.bind(target);
  return async (before: string): Promise<Batch> => {
    const [range, encoding] = await Promise.all([
      copyOut.boundary(push.userId, filter, before, target.batchSize),
      copyOut.encoding(),
    ]);
    if (!range) return { missing: 0, end: true };
    const source: CopySource = {
      columns: copyOut.columns,
      encoding,
      open: (format) => copyOut.open(push.userId, filter, before, range.boundary, format),
    };
    return {
      send: (part) => writeCopy(source, part),
      lastId: range.boundary,
      missing: 0,
      end: range.count < target.batchSize,
    };
  };
}

/** The batches of a push, each the `size` leads after `before` in id order, newest first. */
function leadBatches(deps: Pick<AppDeps, 'db' | 'clock' | 'database'>, push: PushRow, target: Target) {
  const size = target.batchSize;
  const leads = createLeadService(deps);
  const selection = push.selection;
  if ('leadIds' in selection) {
    const ids = [...selection.leadIds].sort().reverse();
    return async (before: string): Promise<Batch> => {
      const chunk = ids.filter((id) => id < before).slice(0, size);
      // One statement per batch; a lead deleted since the push was made is counted as missing.
      const found = (await leads.listByIds(push.userId, chunk)).map(pick);
      const rest = { lastId: chunk.at(-1), missing: chunk.length - found.length, end: chunk.length < size };
      return encoded(target, found, rest);
    };
  }
  const filter = selection.filter as PushFilter;
  const copyOut = target.writeCopy && createLeadCopyOut(deps);
  if (copyOut) return copiedBatches(copyOut, target, push, filter);
  return async (before: string): Promise<Batch> => {
    const page = await leads.list(push.userId, { ...filter, limit: size, cursor: encodeCursor(before) });
    return encoded(target, page.leads, { lastId: page.leads.at(-1)?.id, missing: 0, end: page.nextCursor === null });
  };
}

export function createDestinationPushRunner(deps: AppDeps) {
  const repo = destinationRepository(deps.db);
  const secrets = destinationSecrets(deps.config);
  const workerId = newWorkerId();
  const running = new Set<string>();
  let stopping = false;

  async function run(pushId: string): Promise<void> {
    if (stopping) return;
    const push = await repo.claim(pushId, workerId, deps.clock.now());
    if (!push) return; // finished, deleted, or held by a live worker
    const log = deps.logger.child({ pushId, workerId });
    running.add(pushId);
    let lost = false;
    const timer = setInterval(() => {
      repo.heartbeat(pushId, workerId, deps.clock.now()).then(
        (held) => void (held || (lost = true)),
        (err) => void log.warn({ err }, 'heartbeat failed'),
      );
    }, HEARTBEAT_MS);
    timer.unref();
    const finish = (fields: { status: 'COMPLETED' | 'FAILED'; total?: number; error?: string | null }) =>
      deps.db.transaction(async (tx) => {
        const row = await destinationRepository(tx).finish(pushId, workerId, deps.clock.now(), fields);
        if (row) await emitPushFinished(tx, row);
        return row;
      });

    let progress = { pushed: push.pushed, failed: push.failed, parts: push.parts, cursor: push.cursor };
    const destination = await repo.findById(push.destinationId);
    const target = destination
      ? targetOf(secrets.open(destination), deps.config, {
          pushId,
          destinationId: push.destinationId,
          mode: push.mode,
        })
      : undefined;
    let recording: Promise<void> = Promise.resolve();
    try {
      if (!target) return; // deleted with its pushes
      const next = leadBatches(deps, push, target);
      await target.open();
      // The next batch is read (and encoded, or its range found) while the last one is written.
      const read = (before: string) => {
        const batch = next(before);
        batch.catch(() => {}); // awaited in turn; a failed write before must not leave it unhandled
        return batch;
      };
      let reading = read(push.cursor ?? ('leadIds' in push.selection ? TOP : push.id));
      for (;;) {
        const batch = await reading;
        if (!batch.end && batch.lastId) reading = read(batch.lastId);
        const sent = batch.send ? await batch.send(progress.parts + 1) : 0;
        if (batch.lastId) {
          progress = {
            pushed: progress.pushed + sent,
            failed: progress.failed + batch.missing,
            parts: progress.parts + (batch.send ? 1 : 0),
            cursor: batch.lastId,
          };
          // Recorded while the next batch goes out: a record that lags behind a crash only repeats a batch.
          const at = { ...progress };
          recording = recording.then(async () => {
            if (!(await repo.advance(pushId, workerId, deps.clock.now(), at))) lost = true;
          });
          recording.catch(() => {});
        }
        if (batch.end || !batch.lastId) await recording;
        if (lost || stopping) {
          await recording;
          // Taken over, deleted, or shutting down: stop where the cursor says; a shutdown hands the push back.
          if (!lost) await release(pushId);
          return;
        }
        if (batch.end || !batch.lastId) break;
      }
      const total = 'leadIds' in push.selection ? push.total! : progress.pushed;
      await finish({ status: 'COMPLETED', total, error: null });
      log.info({ pushed: progress.pushed, parts: progress.parts }, 'destination push completed');
    } catch (error) {
      await recording.catch(() => {}); // the batches delivered before the failure stay recorded
      if (!(error instanceof TargetError)) log.error({ err: error }, 'destination push crashed');
      const message =
        error instanceof TargetError ? error.message : 'The push stopped on an internal error; it can be retried.';
      await finish({ status: 'FAILED', error: message }).catch(
        (err) => void log.error({ err }, 'could not mark the push failed'),
      );
    } finally {
      clearInterval(timer);
      running.delete(pushId);
      await target?.close();
    }
  }

  async function release(pushId: string): Promise<void> {
    const row = await repo.release(pushId, workerId, deps.clock.now()).catch(() => undefined);
    if (row) await deps.boss.send(QUEUES.destinationPush, { pushId }).catch(() => {});
  }

  return {
    run,
    async stop(): Promise<void> {
      stopping = true;
      const deadline = Date.now() + 10_000;
      while (running.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    },
  };
}

/**
 * Crash recovery: a RUNNING push whose heartbeat stopped goes back to PENDING (and to the queue) or, after
 * RECOVERY_MAX_ATTEMPTS, fails; the embedded database's single process requeues every RUNNING push at start.
 */
export function createDestinationPushRecovery(deps: AppDeps, service: Pick<DestinationService, 'enqueue'>) {
  const repo = destinationRepository(deps.db);
  /** A PENDING push this long untouched is sent to the queue again (its first message may never have left). */
  const PENDING_RESEND_MS = 5 * 60_000;
  async function sweep() {
    const now = deps.clock.now();
    const { failed, requeued } = await repo.recoverStale(staleBefore(now, STALE_AFTER_MS), now, RECOVERY_MAX_ATTEMPTS);
    if (failed.length)
      await deps.db.transaction(async (tx) => {
        for (const row of failed) await emitPushFinished(tx, row);
      });
    for (const row of requeued) await service.enqueue(row.id);
    const resent = await repo.touchStalePending(new Date(now.getTime() - PENDING_RESEND_MS), now);
    for (const id of resent) await service.enqueue(id);
    return { failed: failed.map((r) => r.id), requeued: [...requeued.map((r) => r.id), ...resent] };
  }
  return {
    sweep,
    async recoverOrphans(): Promise<void> {
      for (const id of await repo.requeueAllRunning(deps.clock.now())) await service.enqueue(id);
    },
    ...sweepLoop(deps.logger, 'destination push recovery sweep', sweep),
  };
}
