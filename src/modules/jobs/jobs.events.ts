import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../deps.ts';
import { createUpdateStreams } from '../../shared/sse.ts';
import { type JobRow, jobRepository } from './jobs.repository.ts';
import { JOB_UPDATE_CHANNEL, jobUpdatePayload } from './jobs.service.ts';

/**
 * Server-Sent Events of one job (`event: job`, data {id, status, progress, leadsFound, pagesVisited,
 * error}), sent on every change until the job is finished; `event: deleted` if it disappears.
 */
export function createJobEventStreams(app: FastifyInstance, deps: Pick<AppDeps, 'db' | 'notifier'>) {
  const repo = jobRepository(deps.db);
  return createUpdateStreams<JobRow>(app, deps.notifier, {
    channel: JOB_UPDATE_CHANNEL,
    event: 'job',
    terminal: new Set(['COMPLETED', 'FAILED', 'CANCELLED']),
    load: (id) => repo.findById(id),
    payload: jobUpdatePayload,
  });
}
