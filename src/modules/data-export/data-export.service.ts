import type { AppDeps } from '../../deps.ts';
import { QUEUES } from '../../queue/queues.ts';
import { DAY_MS } from '../../shared/clock.ts';
import { AppError, notFound } from '../../shared/errors.ts';
import { emitEvent } from '../../shared/events.ts';
import { findOwned } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { rateLimitError } from '../../shared/rate-limit.ts';
import { buildExportFile } from './data-export.builder.ts';
import { dataExportRepository } from './data-export.repository.ts';
import { type ExportFormat, toExportView } from './data-export.schemas.ts';

/** Limits (docs/api.md, API conventions): 3 accepted export requests per rolling week per user; files kept 7 days. */
export const EXPORT_LIMIT = 3;
export const EXPORT_WINDOW_MS = 7 * DAY_MS;
export const EXPORT_DOWNLOAD_MS = 7 * DAY_MS;

export interface DataExportJob {
  exportId: string;
  userId: string;
}

export function createDataExportService(deps: Pick<AppDeps, 'db' | 'clock' | 'boss' | 'logger'>) {
  const repo = dataExportRepository(deps.db);
  return {
    /** Accepts a request (within the weekly limit) and queues the file's generation. */
    async request(userId: string, format: ExportFormat) {
      const now = deps.clock.now();
      const result = await repo.createWithinLimit({
        userId,
        format,
        now,
        since: new Date(now.getTime() - EXPORT_WINDOW_MS),
        limit: EXPORT_LIMIT,
      });
      if (!result.ok) throw rateLimitError(result.oldest.getTime() + EXPORT_WINDOW_MS - now.getTime());
      const job: DataExportJob = { exportId: result.row.id, userId };
      try {
        await deps.boss.send(QUEUES.dataExport, job, { singletonKey: result.row.id });
      } catch (err) {
        // Not queued: not accepted either, so it must not count against the limit.
        await repo.remove(result.row.id).catch(() => {});
        deps.logger.error({ err }, 'could not queue data export');
        throw new AppError('SERVICE_UNAVAILABLE', 'The export could not be queued; try again later');
      }
      return toExportView(result.row);
    },

    async list(userId: string, page: { limit: number; cursor?: string }) {
      const { items, nextCursor } = pageOf(
        await repo.listForUser(userId, decodeCursor(page.cursor), page.limit + 1),
        page.limit,
      );
      return { exports: items.map(toExportView), nextCursor };
    },

    /** The file of a COMPLETED, unexpired export of the caller; 404 for anything else. */
    async download(userId: string, requestId: string) {
      const row = await findOwned(requestId, 'Export', (key) => repo.findForUser(userId, key));
      const now = deps.clock.now().getTime();
      if (row.status !== 'COMPLETED' || !row.content || !row.downloadExpiry || row.downloadExpiry.getTime() <= now) {
        throw notFound('Export');
      }
      return {
        content: row.content,
        contentType: row.contentType ?? 'application/octet-stream',
        fileName: row.fileName ?? `quarry-export-${row.id}`,
      };
    },

    /** pg-boss handler body: builds and stores the file. Retried by pg-boss; FAILED after the last attempt. */
    async generate(job: DataExportJob, attempt: { retryCount: number; retryLimit: number }) {
      if (!(await repo.claim(job.exportId))) return; // gone (user purged) or already done
      const meta = await repo.findMeta(job.exportId);
      if (!meta) return;
      try {
        const file = await buildExportFile(deps.db, meta.userId, meta.format, deps.clock.now());
        const completedAt = deps.clock.now();
        const expiry = new Date(completedAt.getTime() + EXPORT_DOWNLOAD_MS);
        // The file and its `export.completed` event (docs/webhooks-and-credits.md, Webhooks) commit together.
        await deps.db.transaction(async (tx) => {
          await dataExportRepository(tx).complete(meta.id, file, completedAt, expiry);
          await emitEvent(tx, meta.userId, 'export.completed', {
            exportId: meta.id,
            format: meta.format,
            fileName: file.fileName,
            downloadExpiresAt: expiry.toISOString(),
            completedAt: completedAt.toISOString(),
          });
        });
      } catch (err) {
        const final = attempt.retryCount >= attempt.retryLimit;
        await repo.fail(meta.id, err instanceof Error ? err.message : String(err), final).catch(() => {});
        throw err;
      }
    },
  };
}
