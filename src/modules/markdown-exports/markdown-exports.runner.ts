/**
 * Runs markdown exports in this process (docs/scraping.md "Markdown exports"): claims the export's row, crawls the site
 * on the scraping engine (robots.txt, politeness, the SSRF guard, cancellation), converts each page with mdream
 * and stores it in batches, charging `markdown_pages` per page stored; heartbeats let another worker take over
 * the export of a dead one (recovery below), and a run taken over stores only pages it had not stored yet.
 */
import type { AppDeps } from '../../deps.ts';
import { QUEUES } from '../../queue/queues.ts';
import { AppError } from '../../shared/errors.ts';
import { newWorkerId, RECOVERY_MAX_ATTEMPTS, staleBefore, sweepLoop } from '../../shared/recovery-sweep.ts';
import { createProxyProfileService } from '../proxy-profiles/index.ts';
import { CrawlError, type CrawledPage, type CrawlSettings, loadRunCrawl, type RunCrawl } from '../scraping/index.ts';
import type { ConvertedPage } from './markdown-convert.ts';
import { ConvertError, createConvertPool, defaultConvertThreads } from './markdown-convert-pool.ts';
import { type MarkdownExportRow, markdownExportRepository, type StoredPage } from './markdown-exports.repository.ts';
import {
  emitExportCompleted,
  MARKDOWN_CANCEL_CHANNEL,
  type MarkdownExportService,
  publishExportUpdate,
} from './markdown-exports.service.ts';

export const HEARTBEAT_MS = 5_000;
export const STALE_AFTER_MS = 30_000;
const PROGRESS_EVERY_MS = 500;
/** Pages stored per transaction; a batch is also written after FLUSH_MS. */
const BATCH = 25;
const FLUSH_MS = 250;

/** Crawl settings of an export: the operator's SCRAPER_* settings, the export's own link rules. */
export function exportCrawlSettings(
  row: MarkdownExportRow,
  config: AppDeps['config'],
  retryUrls?: string[],
  proxyUrls?: string[],
) {
  const o = row.options;
  const dynamic = row.scrapeType === 'DYNAMIC';
  const [first, ...rest] = retryUrls ?? [row.startUrl];
  return {
    url: first ?? row.startUrl,
    extraUrls: rest,
    scrapeType: row.scrapeType,
    selectors: {},
    maxPages: retryUrls ? retryUrls.length : o.maxPages,
    respectRobotsTxt: o.respectRobotsTxt,
    userAgent: config.SCRAPER_USER_AGENT,
    proxyUrls,
    maxConcurrency: dynamic ? config.SCRAPER_BROWSER_CONCURRENCY : config.SCRAPER_CONCURRENCY,
    domainConcurrency: config.SCRAPER_DOMAIN_CONCURRENCY,
    domainDelayMs: config.SCRAPER_DOMAIN_DELAY_MS,
    requestTimeoutSecs: config.SCRAPER_REQUEST_TIMEOUT_SECS,
    maxRetries: config.SCRAPER_MAX_RETRIES,
    allowPrivateNetwork: config.ALLOW_PRIVATE_NETWORK,
    chromiumPath: config.CHROMIUM_PATH,
    follow: {
      // A retry fetches the failed pages only: no links, no sitemap.
      maxDepth: retryUrls ? 0 : o.maxDepth,
      includePaths: o.includePaths,
      excludePaths: o.excludePaths,
      sameSiteOnly: o.sameSiteOnly,
      sitemap: !retryUrls && o.sitemap,
    },
  } satisfies CrawlSettings;
}

const outOfCredits = (pages: number) =>
  `Out of credits after ${pages} pages: the pages exported so far are kept. ` +
  'Buy credits (POST /api/credits/checkout), then retry the export.';

export function createMarkdownExportRunner(deps: AppDeps, options: { runCrawl?: RunCrawl } = {}) {
  const repo = markdownExportRepository(deps.db);
  const proxyProfiles = createProxyProfileService(deps);
  const workerId = newWorkerId();
  const running = new Map<string, AbortController>();
  let stopping = false;
  const pool = createConvertPool(deps.config.MARKDOWN_CONVERT_THREADS ?? defaultConvertThreads(), {
    timeLimitMs: deps.config.MARKDOWN_CONVERT_TIMEOUT_MS,
  });
  const publish = (row: MarkdownExportRow) => publishExportUpdate(deps.notifier, row);

  async function run(exportId: string): Promise<void> {
    if (stopping) return;
    const row = await repo.claim(exportId, workerId, deps.clock.now());
    if (!row) return; // cancelled, deleted, finished or held by a live worker
    await publish(row);
    const log = deps.logger.child({ exportId, workerId });
    const controller = new AbortController();
    running.set(exportId, controller);
    const base = await repo.pageCounts(exportId);
    let done = base.done;
    let failed = base.failed;
    let planned = 1;
    let progress = 0;
    let lastWrite = 0;
    let writing: Promise<unknown> = Promise.resolve();
    let broke = false;
    let stored = 0;
    const beat = () =>
      (writing = writing.then(async () => {
        lastWrite = Date.now();
        const r = await repo
          .heartbeat(exportId, workerId, deps.clock.now(), { progress, pagesDone: done, pagesFailed: failed })
          .catch((err) => void log.warn({ err }, 'heartbeat failed'));
        if (r === undefined && !controller.signal.aborted) controller.abort(new Error('no longer running here'));
        if (r) await publish(r);
      }));
    const timer = setInterval(beat, HEARTBEAT_MS);
    timer.unref();

    // Pages are converted as they arrive and stored BATCH at a time; each batch pays for its new pages.
    let buffer: StoredPage[] = [];
    let flushing: Promise<void> = Promise.resolve();
    const flushNow = (): Promise<void> => {
      const batch = buffer;
      buffer = [];
      flushing = flushing.then(async () => {
        if (!batch.length || broke) return;
        await deps.db.transaction(async (tx) => {
          const fresh = await markdownExportRepository(tx).storePages(exportId, row.userId, batch, deps.clock.now());
          if (!fresh.length) return;
          const paid = await deps.credits.spend(tx, row.userId, 'markdown_pages', fresh.length, {
            partial: true,
            reason: `markdown export ${exportId}`,
          });
          if (paid.paidUnits < fresh.length) {
            broke = true;
            throw new AppError('INSUFFICIENT_CREDITS', 'out of credits');
          }
          stored += fresh.length;
        });
      });
      return flushing.catch((error) => {
        if (error instanceof AppError && error.code === 'INSUFFICIENT_CREDITS') {
          broke = true;
          controller.abort(new Error('out of credits'));
          return;
        }
        throw error;
      });
    };
    const flushTimer = setInterval(() => void flushNow().catch(() => {}), FLUSH_MS);
    flushTimer.unref();
    const onPage = async (page: CrawledPage) => {
      let converted: ConvertedPage;
      try {
        converted = await pool.convert(page.html ?? '', page.url, row.options.onlyMainContent);
      } catch (error) {
        // A page that cannot be converted (in time) is that page's failure; a closed pool stops the export.
        if (!(error instanceof ConvertError)) throw error;
        await repo.storeFailure(exportId, row.userId, page.url, error.message, deps.clock.now());
        return;
      }
      buffer.push({ url: page.url, title: converted.title, markdown: converted.markdown, depth: page.depth ?? 0 });
      if (buffer.length >= BATCH) await flushNow();
    };

    const finish = async (fields: Parameters<typeof repo.finish>[3], completed: boolean) => {
      const counts = await repo.pageCounts(exportId);
      const end = await deps.db.transaction(async (tx) => {
        const r = await markdownExportRepository(tx).finish(exportId, workerId, deps.clock.now(), {
          ...fields,
          pagesDone: counts.done,
          pagesFailed: counts.failed,
        });
        if (r && completed) await emitExportCompleted(tx, r);
        return r;
      });
      if (end) await publish(end);
    };

    try {
      await deps.credits.assert(deps.db, row.userId, 'markdown_pages', 1);
      const retryUrls = row.retryFailedOnly ? await repo.failedUrls(exportId) : undefined;
      const crawl = options.runCrawl ?? (await loadRunCrawl());
      const proxyUrls = await proxyProfiles.crawlProxyUrls(row.userId, row.proxyProfileId);
      const settings = exportCrawlSettings(row, deps.config, retryUrls?.length ? retryUrls : undefined, proxyUrls);
      const result = await crawl(settings, {
        signal: controller.signal,
        onPage,
        onPageFailed: (url, message) => repo.storeFailure(exportId, row.userId, url, message, deps.clock.now()),
        onProgress: (p) => {
          planned = Math.max(planned, p.pagesPlanned);
          done = base.done + p.pagesVisited;
          // A retry's pages were counted failed already: each one exported is one failure less.
          failed = retryUrls?.length ? Math.max(0, base.failed - p.pagesVisited) : base.failed + p.pagesFailed;
          progress = Math.max(progress, Math.min(99, Math.floor((100 * (p.pagesVisited + p.pagesFailed)) / planned)));
          if (Date.now() - lastWrite >= PROGRESS_EVERY_MS) void beat();
        },
      });
      await flushNow();
      await writing;
      if (broke) return await finish({ status: 'FAILED', error: outOfCredits(stored) }, false);
      if (result.aborted || controller.signal.aborted) {
        if (stopping) await release(exportId);
        return;
      }
      await finish({ status: 'COMPLETED', progress: 100, error: null }, true);
      log.info({ pages: result.pagesVisited, failed: result.pagesFailed }, 'markdown export completed');
    } catch (error) {
      await flushNow().catch((err) => void log.error({ err }, 'could not store the last pages'));
      await writing;
      if (broke || (error instanceof AppError && error.code === 'INSUFFICIENT_CREDITS'))
        return await finish({ status: 'FAILED', error: outOfCredits(stored) }, false);
      if (controller.signal.aborted) {
        if (stopping) await release(exportId);
        return;
      }
      if (!(error instanceof CrawlError)) log.error({ err: error }, 'markdown export crashed');
      const message =
        error instanceof CrawlError ? error.message : 'The export stopped on an internal error; it can be retried.';
      await finish({ status: 'FAILED', error: message }, false).catch(
        (err) => void log.error({ err }, 'could not mark the export failed'),
      );
    } finally {
      clearInterval(timer);
      clearInterval(flushTimer);
      running.delete(exportId);
    }
  }

  async function release(exportId: string): Promise<void> {
    const row = await repo.release(exportId, workerId, deps.clock.now()).catch(() => undefined);
    if (row) await deps.boss.send(QUEUES.markdownExport, { exportId }).catch(() => {});
  }

  return {
    run,
    async start(): Promise<void> {
      await deps.notifier.subscribe(MARKDOWN_CANCEL_CHANNEL, (id) => running.get(id)?.abort(new Error('cancelled')));
      deps.notifier.onReconnect(() => {
        for (const [id, controller] of running) {
          repo.findById(id).then(
            (r) => (!r || r.status === 'CANCELLED' ? controller.abort(new Error('cancelled')) : undefined),
            () => {},
          );
        }
      });
    },
    async stop(): Promise<void> {
      stopping = true;
      for (const controller of running.values()) controller.abort(new Error('worker shutting down'));
      const deadline = Date.now() + 5_000;
      while (running.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await pool.close();
    },
  };
}

/**
 * Crash recovery: a RUNNING export whose heartbeat stopped goes back to PENDING (and to the queue) or, after
 * RECOVERY_MAX_ATTEMPTS, fails; the embedded database's single process requeues every RUNNING export at start.
 */
export function createMarkdownExportRecovery(deps: AppDeps, service: Pick<MarkdownExportService, 'enqueue'>) {
  const repo = markdownExportRepository(deps.db);
  async function sweep() {
    const now = deps.clock.now();
    const { failed, requeued } = await repo.recoverStale(staleBefore(now, STALE_AFTER_MS), now, RECOVERY_MAX_ATTEMPTS);
    for (const row of [...failed, ...requeued]) await publishExportUpdate(deps.notifier, row);
    for (const row of requeued) await service.enqueue(row.id);
    return { failed: failed.map((r) => r.id), requeued: requeued.map((r) => r.id) };
  }
  return {
    sweep,
    async recoverOrphans(): Promise<void> {
      for (const id of await repo.requeueAllRunning(deps.clock.now())) await service.enqueue(id);
    },
    ...sweepLoop(deps.logger, 'markdown export recovery sweep', sweep),
  };
}
