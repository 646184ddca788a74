import type { Db, Tx } from '../../db/client.ts';
import type { AppDeps } from '../../deps.ts';
import { QUEUES } from '../../queue/queues.ts';
import { AppError, notFound } from '../../shared/errors.ts';
import { emitEvent } from '../../shared/events.ts';
import { findOwned } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { createProxyProfileService } from '../proxy-profiles/index.ts';
import {
  type MarkdownExportRow,
  type MarkdownPageRow,
  markdownExportRepository,
} from './markdown-exports.repository.ts';
import type {
  CreateMarkdownExportInput,
  ListPagesQuery,
  MarkdownExportView,
  MarkdownPageView,
} from './markdown-exports.schemas.ts';

/** NOTIFY channels: a cancel reaches the process running the export; updates feed the SSE streams. */
export const MARKDOWN_CANCEL_CHANNEL = 'quarry_markdown_export_cancel';
export const MARKDOWN_UPDATE_CHANNEL = 'quarry_markdown_export_update';

export interface MarkdownExportMessage {
  exportId: string;
}

export const toExportView = (r: MarkdownExportRow): MarkdownExportView => ({
  id: r.id,
  status: r.status,
  startUrl: r.startUrl,
  scrapeType: r.scrapeType,
  ...r.options,
  proxyProfileId: r.proxyProfileId,
  progress: r.progress,
  pagesDone: r.pagesDone,
  pagesFailed: r.pagesFailed,
  error: r.error,
  attempts: r.attempts,
  startedAt: r.startedAt?.toISOString() ?? null,
  finishedAt: r.finishedAt?.toISOString() ?? null,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

export const toPageView = (p: MarkdownPageRow): MarkdownPageView => ({
  id: p.id,
  url: p.url,
  status: p.status,
  title: p.title,
  markdown: p.markdown,
  depth: p.depth,
  error: p.error,
  fetchedAt: p.fetchedAt.toISOString(),
});

/** What an SSE subscriber receives on every change. */
export const exportUpdatePayload = (r: MarkdownExportRow) =>
  JSON.stringify({
    id: r.id,
    status: r.status,
    progress: r.progress,
    pagesDone: r.pagesDone,
    pagesFailed: r.pagesFailed,
    error: r.error,
  });

export const publishExportUpdate = (notifier: AppDeps['notifier'], row: MarkdownExportRow) =>
  notifier.publish(MARKDOWN_UPDATE_CHANNEL, exportUpdatePayload(row)).catch(() => {});

/** The `markdown_export.completed` webhook event, in the transaction that completes the export. */
export function emitExportCompleted(tx: Db | Tx, row: MarkdownExportRow): Promise<void> {
  return emitEvent(tx, row.userId, 'markdown_export.completed', {
    exportId: row.id,
    startUrl: row.startUrl,
    pagesDone: row.pagesDone,
    pagesFailed: row.pagesFailed,
    startedAt: row.startedAt?.toISOString() ?? null,
    finishedAt: (row.finishedAt ?? row.updatedAt).toISOString(),
  });
}

export type MarkdownExportService = ReturnType<typeof createMarkdownExportService>;

export function createMarkdownExportService(
  deps: Pick<AppDeps, 'db' | 'clock' | 'boss' | 'notifier' | 'credits' | 'config'>,
) {
  const repo = markdownExportRepository(deps.db);
  const proxyProfiles = createProxyProfileService(deps);
  const enqueue = (exportId: string) =>
    deps.boss.send(QUEUES.markdownExport, { exportId } satisfies MarkdownExportMessage);
  const owned = (userId: string, id: string) => findOwned(id, 'Markdown export', (key) => repo.find(userId, key));

  async function cancel(userId: string, id: string): Promise<MarkdownExportRow | undefined> {
    const current = await owned(userId, id);
    const cancelled = await repo.cancel(userId, current.id, deps.clock.now());
    if (!cancelled) return undefined;
    await deps.notifier.publish(MARKDOWN_CANCEL_CHANNEL, cancelled.id);
    await publishExportUpdate(deps.notifier, cancelled);
    return cancelled;
  }

  return {
    enqueue,
    owned,

    async create(userId: string, input: CreateMarkdownExportInput): Promise<MarkdownExportView> {
      await deps.credits.assert(deps.db, userId, 'markdown_pages', 1);
      const proxyProfileId = input.proxyProfileId
        ? await proxyProfiles.assertOwned(userId, input.proxyProfileId)
        : null;
      const now = deps.clock.now();
      const row = await repo.insert({
        userId,
        startUrl: input.startUrl,
        scrapeType: input.scrapeType,
        proxyProfileId,
        options: {
          maxPages: input.maxPages,
          maxDepth: input.maxDepth,
          includePaths: input.includePaths,
          excludePaths: input.excludePaths,
          sitemap: input.sitemap,
          sameSiteOnly: input.sameSiteOnly,
          onlyMainContent: input.onlyMainContent,
          respectRobotsTxt: input.respectRobotsTxt,
        },
        createdAt: now,
        updatedAt: now,
      });
      await enqueue(row.id);
      return toExportView(row);
    },

    async list(userId: string, query: { limit: number; cursor?: string }) {
      const rows = await repo.list(userId, query.limit, decodeCursor(query.cursor));
      const { items, nextCursor } = pageOf(rows, query.limit);
      return { exports: items.map(toExportView), nextCursor };
    },

    get: async (userId: string, id: string) => toExportView(await owned(userId, id)),

    /** PENDING or RUNNING: cancelled (kept) and its crawl stopped; finished: deleted with its pages. */
    async cancelOrDelete(userId: string, id: string): Promise<'cancelled' | 'deleted'> {
      if (await cancel(userId, id)) return 'cancelled';
      if (await repo.deleteFinished(userId, id.toLowerCase())) return 'deleted';
      throw notFound('Markdown export');
    },

    /**
     * A finished export with FAILED pages fetches those again (and only those); a FAILED export without pages
     * (its start URL failed) runs again. Anything else: 400 INVALID_STATUS.
     */
    async retry(userId: string, id: string): Promise<MarkdownExportView> {
      const current = await owned(userId, id);
      const failedPages = current.status === 'RUNNING' || current.status === 'PENDING' ? 0 : current.pagesFailed;
      const rerun = current.status === 'FAILED' && current.pagesDone === 0 && failedPages === 0;
      if (!failedPages && !rerun)
        throw new AppError(
          'INVALID_STATUS',
          current.status === 'RUNNING' || current.status === 'PENDING'
            ? `The export is ${current.status}; retry it once it has finished`
            : 'The export has no failed pages to retry',
        );
      await deps.credits.assert(deps.db, userId, 'markdown_pages', 1);
      const row = await repo.requeue(userId, current.id, failedPages > 0, deps.clock.now());
      if (!row) throw new AppError('INVALID_STATUS', 'The export changed meanwhile; read it again');
      await enqueue(row.id);
      await publishExportUpdate(deps.notifier, row);
      return toExportView(row);
    },

    async pages(userId: string, id: string, query: ListPagesQuery) {
      const current = await owned(userId, id);
      const rows = await repo.listPages(current.id, query.limit, decodeCursor(query.cursor), query.status);
      const { items, nextCursor } = pageOf(rows, query.limit);
      return { pages: items.map(toPageView), nextCursor };
    },

    /** The exported pages, read in batches (a download of a big export never holds one huge result). */
    async *exportedPages(exportId: string): AsyncGenerator<MarkdownPageRow> {
      let after: string | undefined;
      for (;;) {
        const batch = await repo.okPages(exportId, 500, after);
        yield* batch;
        if (batch.length < 500) return;
        after = batch[batch.length - 1]!.id;
      }
    },
  };
}
