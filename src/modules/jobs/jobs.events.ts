import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppDeps } from '../../deps.ts';
import { openEventStream } from '../../shared/sse.ts';
import { type JobRow, jobRepository } from './jobs.repository.ts';
import { JOB_UPDATE_CHANNEL, jobUpdatePayload } from './jobs.service.ts';

const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED']);
/** Fallback poll for a lost notification; NOTIFY carries every update itself. */
const POLL_MS = 5_000;
const KEEPALIVE_MS = 15_000;

/**
 * Server-Sent Events of one job (`event: job`, data {id, status, progress, leadsFound, pagesVisited,
 * error}), sent on every change until the job is finished; `event: deleted` if it disappears.
 */
export function createJobEventStreams(app: FastifyInstance, deps: Pick<AppDeps, 'db' | 'notifier'>) {
  const repo = jobRepository(deps.db);
  const open = new Set<() => void>();
  // Streams never end by themselves while a job runs: close them so shutdown is not held up.
  app.addHook('preClose', async () => {
    for (const end of [...open]) end();
  });

  return async function stream(reply: FastifyReply, first: JobRow): Promise<void> {
    const events = openEventStream(reply);
    const raw = events.raw;
    let last = '';
    let ended = false;
    const cleanups: Array<() => void> = [];
    const end = () => {
      if (ended) return;
      ended = true;
      for (const cleanup of cleanups) cleanup();
      open.delete(end);
      raw.end();
    };
    open.add(end);
    const send = (payload: string, status: string) => {
      if (ended || payload === last) return;
      last = payload;
      events.sendText('job', payload);
      if (TERMINAL.has(status)) end();
    };
    const refresh = async () => {
      const row = await repo.findById(first.id).catch(() => undefined);
      if (ended) return;
      if (!row) {
        events.send('deleted', { id: first.id });
        return end();
      }
      send(jobUpdatePayload(row), row.status);
    };

    raw.on('close', end);
    events.retry(2000);
    send(jobUpdatePayload(first), first.status);
    if (ended) return;
    // The notification is the update: no read per event and subscriber.
    const unsubscribe = await deps.notifier.subscribe(JOB_UPDATE_CHANNEL, (payload) => {
      const update = JSON.parse(payload) as { id: string; status: string };
      if (update.id === first.id) send(payload, update.status);
    });
    const poll = setInterval(() => void refresh(), POLL_MS);
    // Updates sent while the listener was down are lost: read the job again at once.
    const offReconnect = deps.notifier.onReconnect(() => void refresh());
    cleanups.push(unsubscribe, offReconnect, () => clearInterval(poll), events.keepAlive(KEEPALIVE_MS));
    if (ended) for (const cleanup of cleanups) cleanup();
  };
}
