import type { AppDeps } from '../../deps.ts';
import { QUEUES } from '../../queue/queues.ts';
import { coalesced } from '../../shared/coalesced.ts';
import { AppError } from '../../shared/errors.ts';
import { newWorkerId } from '../../shared/recovery-sweep.ts';
import { createLeadWriter, type LeadWriter } from '../leads/index.ts';
import { createProfileTypeService } from '../profile-types/index.ts';
import { createProxyProfileService } from '../proxy-profiles/index.ts';
import { CrawlError, type CrawlProgress, type CrawlSettings, loadRunCrawl, type RunCrawl } from '../scraping/index.ts';
import type { CrawlOptions, SourceRow } from '../sources/index.ts';
import { createSourceService } from '../sources/index.ts';
import { type JobRow, jobRepository } from './jobs.repository.ts';
import { emitJobEvent, JOB_CANCEL_CHANNEL, publishJobUpdate } from './jobs.service.ts';

/** A running job writes its heartbeat this often; one silent for STALE_AFTER_MS belongs to a dead worker. */
export const HEARTBEAT_MS = 5_000;
export const STALE_AFTER_MS = 30_000;
/** Progress rows and SSE updates at most this often per job. */
const PROGRESS_EVERY_MS = 500;

/** Crawl settings for a source: the operator's SCRAPER_* settings, narrowed by the source's own. */
export function crawlSettingsFor(
  source: SourceRow,
  config: AppDeps['config'],
  collectPageText: boolean,
  proxyUrls?: string[],
): CrawlSettings {
  const o = source.options as CrawlOptions;
  const dynamic = source.scrapeType === 'DYNAMIC';
  return {
    url: source.url,
    scrapeType: source.scrapeType,
    selectors: source.selectors,
    maxPages: source.maxPages ?? config.SCRAPER_MAX_PAGES,
    respectRobotsTxt: source.respectRobotsTxt,
    userAgent: o.userAgent ?? config.SCRAPER_USER_AGENT,
    proxyUrls,
    maxConcurrency: dynamic ? config.SCRAPER_BROWSER_CONCURRENCY : config.SCRAPER_CONCURRENCY,
    domainConcurrency: Math.min(
      o.domainConcurrency ?? config.SCRAPER_DOMAIN_CONCURRENCY,
      config.SCRAPER_DOMAIN_CONCURRENCY,
    ),
    domainDelayMs: Math.max(o.domainDelayMs ?? 0, config.SCRAPER_DOMAIN_DELAY_MS),
    requestTimeoutSecs: o.requestTimeoutSecs ?? config.SCRAPER_REQUEST_TIMEOUT_SECS,
    maxRetries: o.maxRetries ?? config.SCRAPER_MAX_RETRIES,
    allowPrivateNetwork: config.ALLOW_PRIVATE_NETWORK,
    chromiumPath: config.CHROMIUM_PATH,
    collectPageText,
  };
}

/** The `error` of a job stopped because the balance ran out (README "Credits"). */
export const outOfCreditsError = (pages: number) =>
  pages > 0
    ? `Out of credits after ${pages} pages: the leads found so far are kept. ` +
      'Buy credits (POST /api/credits/checkout), then retry the job.'
    : 'Out of credits: the balance cannot pay for a page. ' +
      'Buy credits (POST /api/credits/checkout), then retry the job.';

const progressPercent = (p: CrawlProgress) =>
  Math.min(99, Math.floor((100 * (p.pagesVisited + p.pagesFailed)) / Math.max(p.pagesPlanned, 1)));

export type JobRunner = ReturnType<typeof createJobRunner>;

/**
 * Runs scrape jobs in this process: claims the job row, crawls with heartbeats, stores leads as
 * they are found, and stops within moments of a cancel (NOTIFY) or of losing the row.
 */
export function createJobRunner(deps: AppDeps, options: { runCrawl?: RunCrawl } = {}) {
  // Crawlee and Playwright load on the first job, not at start-up (start time and idle memory).
  const loadCrawl = async (): Promise<RunCrawl> => options.runCrawl ?? (await loadRunCrawl());
  const repo = jobRepository(deps.db);
  const sourceService = createSourceService(deps);
  const profileTypeService = createProfileTypeService(deps);
  const proxyProfiles = createProxyProfileService(deps);
  const workerId = newWorkerId();
  const running = new Map<string, AbortController>();
  let stopping = false;

  const publish = (row: JobRow) => publishJobUpdate(deps.notifier, row);
  /** A state change of the job and its webhook event, in one transaction. */
  const withEvent = (change: (r: ReturnType<typeof jobRepository>) => Promise<JobRow | undefined>) =>
    deps.db.transaction(async (tx) => {
      const row = await change(jobRepository(tx));
      if (row) await emitJobEvent(tx, row);
      return row;
    });

  async function load(job: JobRow) {
    const source = await sourceService.findForJob(job.userId, job.sourceId);
    if (!source) return undefined;
    const type = source.profileTypeId ? await profileTypeService.find(job.userId, source.profileTypeId) : undefined;
    return { source, profileType: type && { id: type.id, fields: type.fields } };
  }

  async function run(jobId: string): Promise<void> {
    if (stopping) return;
    const now = deps.clock.now();
    const job = await withEvent((r) => r.claim(jobId, workerId, now, new Date(now.getTime() - STALE_AFTER_MS)));
    if (!job) return; // cancelled, finished, deleted, or held by a live worker: nothing to do
    await publish(job);
    const log = deps.logger.child({ jobId, sourceId: job.sourceId, workerId });
    const controller = new AbortController();
    running.set(jobId, controller);
    let progress: CrawlProgress = { pagesVisited: 0, pagesFailed: 0, pagesPlanned: 1 };
    let percent = 0;
    let leadsFound = await repo.countLeads(jobId);
    let lastWrite = 0;
    /** Heartbeat + progress, coalesced while the database is busy; losing the row (cancel, takeover) stops the crawl. */
    const heartbeat = coalesced(
      async () => {
        lastWrite = Date.now();
        const row = await repo
          .heartbeat(jobId, workerId, deps.clock.now(), {
            progress: percent,
            pagesVisited: progress.pagesVisited,
            pagesFailed: progress.pagesFailed,
            leadsFound,
          })
          .catch((err) => void log.warn({ err }, 'heartbeat failed'));
        if (row === undefined && !controller.signal.aborted)
          controller.abort(new Error('job is no longer running here'));
        if (row) await publish(row);
      },
      // A job whose heartbeat stops is taken over by another worker: a failed beat is logged, the next one runs.
      (err) => void log.warn({ err }, 'heartbeat failed'),
    );
    const beat = heartbeat.run;
    const timer = setInterval(beat, HEARTBEAT_MS);
    timer.unref();
    let writer: LeadWriter | undefined;
    let outOfCredits = false;
    const fail = async (error: string) => {
      const failed = await withEvent((r) =>
        r.finish(jobId, workerId, deps.clock.now(), {
          status: 'FAILED',
          error,
          pagesVisited: progress.pagesVisited,
          pagesFailed: progress.pagesFailed,
          leadsFound,
        }),
      ).catch((err) => void log.error({ err }, 'could not mark the job failed'));
      if (failed) await publish(failed);
    };

    try {
      const loaded = await load(job);
      if (!loaded) return; // the source was deleted (its jobs with it)
      const { source, profileType } = loaded;
      // The balance may have been spent since the job was queued.
      await deps.credits.assert(deps.db, job.userId, 'pages', 1);
      await sourceService.markRun(job.userId, source.id, now);
      // Leads are written in batches; leadsFound counts those inserted, as each batch commits.
      const store = createLeadWriter(
        deps,
        { userId: job.userId, sourceId: source.id, jobId, profileType },
        {
          onStored: (n) => (leadsFound += n),
          onOutOfCredits: () => {
            outOfCredits = true;
            controller.abort(new Error('out of credits'));
          },
        },
      );
      writer = store;
      const crawl = await loadCrawl();
      const proxyUrls = await proxyProfiles.crawlProxyUrls(job.userId, source.proxyProfileId);
      const settings = crawlSettingsFor(source, deps.config, !!profileType && deps.ai.configured, proxyUrls);
      const result = await crawl(settings, {
        signal: controller.signal,
        onPage: (page) => store.add(page),
        onProgress: (p) => {
          // The plan grows as links are found; a progress bar must not go back.
          percent = Math.max(percent, progressPercent(p));
          progress = p;
          if (Date.now() - lastWrite >= PROGRESS_EVERY_MS) beat();
        },
      });
      // What is still buffered is stored before the job's final state and count are written.
      await store.close();
      await heartbeat.settled();
      if (outOfCredits) {
        progress = { ...progress, pagesVisited: result.pagesVisited, pagesFailed: result.pagesFailed };
        await fail(outOfCreditsError(result.pagesVisited));
        log.info({ pages: result.pagesVisited, leadsFound }, 'scrape job stopped: out of credits');
        return;
      }
      if (result.aborted || controller.signal.aborted) {
        await repo.setLeadsFound(jobId, workerId, leadsFound).catch(() => {});
        if (stopping) await release(jobId);
        return;
      }
      const done = await withEvent((r) =>
        r.finish(jobId, workerId, deps.clock.now(), {
          status: 'COMPLETED',
          progress: 100,
          pagesVisited: result.pagesVisited,
          pagesFailed: result.pagesFailed,
          leadsFound,
        }),
      );
      if (done) await publish(done);
      log.info({ pages: result.pagesVisited, failed: result.pagesFailed, leadsFound }, 'scrape job completed');
    } catch (error) {
      await writer?.close().catch((err) => void log.error({ err }, 'could not store the last leads'));
      await heartbeat.settled();
      if (outOfCredits || (error instanceof AppError && error.code === 'INSUFFICIENT_CREDITS')) {
        await fail(outOfCreditsError(progress.pagesVisited));
        return;
      }
      if (controller.signal.aborted) {
        await repo.setLeadsFound(jobId, workerId, leadsFound).catch(() => {});
        if (stopping) await release(jobId);
        return;
      }
      const message =
        error instanceof CrawlError ? error.message : 'The job stopped on an internal error; it can be retried.';
      if (!(error instanceof CrawlError)) log.error({ err: error }, 'scrape job crashed');
      await fail(message);
    } finally {
      clearInterval(timer);
      running.delete(jobId);
    }
  }

  /** A job interrupted by shutdown goes back to PENDING for another worker (or the next start). */
  async function release(jobId: string): Promise<void> {
    const row = await repo.release(jobId, workerId, deps.clock.now()).catch(() => undefined);
    if (row) await deps.boss.send(QUEUES.scrape, { jobId }).catch(() => {});
  }

  return {
    workerId,
    run,
    /** Listens for cancels addressed to jobs running here. */
    async start(): Promise<void> {
      await deps.notifier.subscribe(JOB_CANCEL_CHANNEL, (jobId) => running.get(jobId)?.abort(new Error('cancelled')));
      // Cancels sent while the listener was down are lost: look at the jobs running here again.
      deps.notifier.onReconnect(() => {
        for (const [jobId, controller] of running) {
          const abortIfGone = (row: JobRow | undefined) => {
            if (!row || row.status === 'CANCELLED') controller.abort(new Error('cancelled'));
          };
          repo.findById(jobId).then(abortIfGone, () => {});
        }
      });
    },
    /** Stops every crawl of this process and hands the jobs back (graceful shutdown). */
    async stop(): Promise<void> {
      stopping = true;
      for (const controller of running.values()) controller.abort(new Error('worker shutting down'));
      const deadline = Date.now() + 5_000;
      while (running.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    },
    runningCount: () => running.size,
  };
}
