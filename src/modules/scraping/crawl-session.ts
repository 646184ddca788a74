/**
 * The state one crawl shares across its Crawlee crawler, whichever the scrape type: its own memory-only
 * Configuration and request queue, counters, the page budget (`maxPages`), robots.txt, retries with
 * backoff, failure messages, the SSRF stop, and abort. Engines (crawl-static/api/dynamic) only fetch
 * and read pages; their shared handler (crawl-handler.ts) hands pages to `deliver` and next-page URLs
 * to `enqueue`.
 */
import os from 'node:os';
import {
  type AutoscaledPoolOptions,
  Configuration,
  log as crawleeLog,
  Log,
  LogLevel,
  type Request,
} from '@crawlee/core';
import { type SsrfBlockedError, ssrfCause } from '../../shared/ssrf.ts';
import { type LinkPolicy, linkPolicy, sitemapLocations } from './follow.ts';
import { FetchError, PageFetcher } from './http-client.ts';
import { abortableSleep, HostLimiter } from './politeness.ts';
import { InMemoryRequestQueue } from './request-queue.ts';
import { RobotsCache } from './robots.ts';
import {
  CrawlError,
  type CrawledPage,
  type CrawlHooks,
  type CrawlResult,
  type CrawlSettings,
} from './scraping.types.ts';
import type { ParsedSelectors } from './selectors.ts';

// Crawlee's own chatter (per-request retries, statistics) stays off stdout; failures reach the job instead.
crawleeLog.setLevel(LogLevel.WARNING);
const quietLog = new Log({ level: LogLevel.OFF, prefix: 'Quarry' });

/** The reason every in-flight operation sees when a crawl stops (abort or a fatal error). */
export class CrawlAbortedError extends Error {
  constructor() {
    super('The crawl was stopped');
    this.name = 'CrawlAbortedError';
  }
}

/** A page that was fetched but could not be extracted (not retried: the same bytes fail the same way). */
export class PageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PageError';
  }
}

const BACKOFF_BASE_MS = 300;
/** Sitemaps read at most per crawl (an index and the sitemaps it names). */
const MAX_SITEMAPS = 10;
const SITEMAP_MAX_BYTES = 16 * 1024 * 1024;
const BACKOFF_MAX_MS = 15_000;
/** How long runCrawl waits for in-flight handlers (already cancelled) to settle after a stop. */
const DRAIN_MS = 1_000;

/**
 * Crawlee pool options that run `concurrency` requests from the start and hold it there: by default the pool
 * starts at 1 and grows 5 % per 10 s. The bench's bare Crawlee baselines use the same, so both sides of its
 * ratios run at the same concurrency.
 */
export function pinnedConcurrency(concurrency: number, pool: AutoscaledPoolOptions = {}) {
  return {
    minConcurrency: concurrency,
    maxConcurrency: concurrency,
    autoscaledPoolOptions: { ...pool, desiredConcurrency: concurrency },
  };
}

/** Exponential backoff with ±50 % jitter; a server's Retry-After wins when it is longer (capped). */
export function backoffMs(retry: number, retryAfterMs?: number): number {
  const exp = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** retry);
  const jittered = exp * (0.5 + Math.random());
  return Math.min(BACKOFF_MAX_MS * 2, Math.max(jittered, retryAfterMs ?? 0));
}

export function ssrfCrawlError(blocked: SsrfBlockedError, url: string): CrawlError {
  return new CrawlError('ssrf', `${blocked.message} (while fetching ${url})`);
}

function isRetryable(error: unknown): boolean {
  if (error instanceof FetchError) return error.retryable;
  if (error instanceof PageError || error instanceof CrawlAbortedError || error instanceof CrawlError) return false;
  return true;
}

const SESSION_PREFIX = /^Detected a session error, rotating session\.\.\.\s*/;

/** The message a failed page leaves: what went wrong, and after how many attempts. */
function failureMessage(url: string, error: unknown, attempts: number): string {
  const base =
    error instanceof FetchError || error instanceof PageError
      ? error.message
      : `GET ${url} failed: ${
          String((error as Error)?.message ?? error)
            .replace(SESSION_PREFIX, '')
            .split('\n')[0]
        }`;
  if (attempts <= 1) return base;
  return error instanceof FetchError && error.status
    ? `${base} after ${attempts} attempts`
    : `${base} (${attempts} attempts)`;
}

const normalizeUrl = (raw: string, base: string): string | undefined => {
  try {
    const u = new URL(raw, base);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return undefined;
    u.hash = '';
    return u.href;
  } catch {
    return undefined;
  }
};

export class CrawlSession {
  readonly settings: CrawlSettings;
  readonly hooks: CrawlHooks;
  readonly parsed: ParsedSelectors;
  /** One Configuration per crawl: memory-only storage, its own event manager. */
  readonly config: Configuration;
  readonly controller = new AbortController();
  readonly limiter: HostLimiter;
  readonly fetcher: PageFetcher;
  readonly robots?: RobotsCache;
  /** A site crawl's link rules (`settings.follow`). */
  readonly links?: LinkPolicy;
  /** The crawl's own queue (request-queue.ts: why not Crawlee's RequestQueue). */
  readonly queue = new InMemoryRequestQueue();
  visited = 0;
  failed = 0;
  planned = 0;
  #firstFailure?: string;
  #fatal?: unknown;
  #userAborted = false;
  readonly #stoppers: Array<() => unknown> = [];
  readonly #active = new Set<Promise<unknown>>();
  #enqueueChain: Promise<unknown> = Promise.resolve();
  readonly #onUserAbort = () => {
    this.#userAborted = true;
    this.#stop();
  };

  constructor(settings: CrawlSettings, hooks: CrawlHooks, parsed: ParsedSelectors, accept: string) {
    this.settings = settings;
    this.hooks = hooks;
    this.parsed = parsed;
    this.config = new Configuration({
      persistStorage: false,
      // Never purge: with the default, Crawlee would delete ./storage folders in the working directory.
      purgeOnStart: false,
      storageClientOptions: { persistStorage: false, writeMetadata: false },
      // System snapshots drive autoscaling, which a fixed concurrency does not use; each one spawns `ps`.
      systemInfoIntervalMillis: 60_000,
      // Crawlee's own default (a quarter of the memory), given so that its start measures nothing: otherwise each
      // crawl's start spawns `ps` for the total (about 1 % of a 500-page export's main-thread time).
      memoryMbytes: Math.floor(os.totalmem() / 4 / 1024 ** 2),
    });
    this.limiter = new HostLimiter(settings.domainConcurrency, settings.domainDelayMs);
    this.fetcher = new PageFetcher({
      userAgent: settings.userAgent,
      accept,
      allowPrivateNetwork: settings.allowPrivateNetwork,
      proxyUrls: settings.proxyUrls,
      timeoutMs: settings.requestTimeoutSecs * 1000,
      signal: this.controller.signal,
      limiter: this.limiter,
      connections: Math.max(1, Math.min(settings.maxConcurrency, settings.domainConcurrency)),
    });
    if (settings.respectRobotsTxt) {
      this.robots = new RobotsCache(
        (url) => this.fetcher.text(url),
        settings.userAgent,
        (origin, rules) => {
          if (rules.crawlDelayMs) this.limiter.raiseDelay(new URL(origin).host, rules.crawlDelayMs);
        },
      );
    }
    if (settings.follow) this.links = linkPolicy(new URL(settings.url), settings.follow);
    if (hooks.signal.aborted) this.#onUserAbort();
    else hooks.signal.addEventListener('abort', this.#onUserAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** True once the crawl was aborted or failed fatally: nothing more may be fetched or delivered. */
  get stopped(): boolean {
    return this.controller.signal.aborted;
  }

  /**
   * Stops `crawler` with the crawl. Crawlee's `abort()` settles a pool only once its `run()` has begun: a pool aborted
   * between its creation and its run is marked stopped, never checks its queue again, and `crawler.run()` waits
   * forever with its timers alive. So a pool is aborted only once it has asked for a task (it is running then); a
   * stop before that ends the run through the pool's own checks, which find no task and the crawl finished.
   */
  stopsPoolOf(crawler: { autoscaledPool?: { abort(): Promise<void> } }): void {
    this.onStop(() => (this.#poolRunning ? crawler.autoscaledPool?.abort() : undefined));
  }

  #poolRunning = false;
  readonly #isTaskReady = async (): Promise<boolean> => {
    this.#poolRunning = true;
    return !this.stopped && !(await this.queue.isEmpty());
  };
  readonly #isFinished = async (): Promise<boolean> => this.stopped || (await this.queue.isFinished());

  /** Registers what stops the engine (the crawler's pool, the browser). */
  onStop(stop: () => unknown): void {
    if (this.stopped) void Promise.resolve().then(stop);
    else this.#stoppers.push(stop);
  }

  #stop(): void {
    if (this.stopped) return;
    this.controller.abort(new CrawlAbortedError());
    this.#runStoppers();
  }

  /** Stoppers may run more than once: the error handlers run them again for a request in flight at the stop. */
  #runStoppers(): void {
    for (const stop of this.#stoppers) {
      try {
        void Promise.resolve(stop()).catch(() => {});
      } catch {
        // A stopper that throws must not keep the others from running.
      }
    }
  }

  /** Stops the crawl because of `error`; runCrawl rethrows it. */
  fail(error: unknown): void {
    if (!this.stopped) this.#fatal ??= error;
    this.#stop();
  }

  /** Plans the start URL (already checked against robots.txt and the SSRF guard). */
  async open(): Promise<void> {
    await this.queue.addRequest({ url: this.settings.url, userData: { depth: 0, start: true } });
    this.planned = 1;
    if (this.settings.extraUrls?.length) await this.enqueue(this.settings.extraUrls, this.settings.url);
    if (this.settings.follow?.sitemap) await this.#planSitemap();
  }

  /** A site crawl's /sitemap.xml (and the sitemaps an index names): its pages are planned at depth 0. */
  async #planSitemap(): Promise<void> {
    const pending = [new URL('/sitemap.xml', this.settings.url).href];
    for (let read = 0; pending.length && read < MAX_SITEMAPS && !this.stopped; read++) {
      const at = pending.shift()!;
      let body: string;
      try {
        const answer = await this.fetcher.text(at, SITEMAP_MAX_BYTES);
        if (answer.status < 200 || answer.status >= 300) continue;
        body = answer.body;
      } catch (error) {
        if (error instanceof CrawlAbortedError) throw error;
        continue; // No sitemap (or an unreachable one): the crawl follows links as usual.
      }
      const { pages, sitemaps } = sitemapLocations(body);
      pending.push(...sitemaps.filter((u) => URL.canParse(u) && this.links?.takes(new URL(u)) !== false));
      const taken = pages.filter((u) => URL.canParse(u) && this.links?.takes(new URL(u)) !== false);
      await this.enqueue(taken, at);
    }
  }

  /** A site crawl: plans the links of a page at `depth` that the link rules follow. */
  follow(links: string[], base: string, depth: number): Promise<void> {
    if (!this.links || depth + 1 > (this.settings.follow?.maxDepth ?? 0)) return Promise.resolve();
    const taken: string[] = [];
    for (const raw of links) {
      const url = normalizeUrl(raw, base);
      if (url && this.links.follows(new URL(url), depth)) taken.push(url);
    }
    return this.enqueue(taken, base, depth + 1);
  }

  /** Plans next-page URLs: http(s) only, deduplicated, allowed by robots.txt, never beyond maxPages. */
  enqueue(urls: string[], base: string, depth = 0): Promise<void> {
    // Serialised so two pages finishing together cannot both take the last slot of the budget.
    const run = this.#enqueueChain.then(async () => {
      for (const raw of urls) {
        if (this.stopped || this.planned >= this.settings.maxPages) return;
        const url = normalizeUrl(raw, base);
        if (!url) continue;
        if (this.robots && !(await this.robots.isAllowed(url))) continue;
        const { wasAlreadyPresent } = await this.queue.addRequest({ url, userData: { depth } });
        if (!wasAlreadyPresent) this.planned++;
      }
    });
    this.#enqueueChain = run.catch(() => {});
    return run;
  }

  /** Hands a page to the job (awaited: back-pressure), then reports progress. */
  async deliver(page: CrawledPage): Promise<void> {
    if (this.stopped) throw new CrawlAbortedError();
    try {
      await this.hooks.onPage(page);
    } catch (error) {
      // Storage failing is the job's failure, not the page's.
      this.fail(error);
      throw new CrawlAbortedError();
    }
    this.visited++;
    this.#progress();
  }

  #progress(): void {
    try {
      this.hooks.onProgress?.({ pagesVisited: this.visited, pagesFailed: this.failed, pagesPlanned: this.planned });
    } catch {
      // A progress listener's error must not fail pages.
    }
  }

  /** Keeps count of running handlers so runCrawl can let them settle after a stop. */
  track<T>(work: Promise<T>): Promise<T> {
    this.#active.add(work);
    void work.finally(() => this.#active.delete(work)).catch(() => {});
    return work;
  }

  /**
   * Whether the guard refused an address on the way to `request` (never retried). That fails the crawl, except for
   * a page a site crawl found (a link or a sitemap entry of the site): one such link fails that page only.
   */
  #ssrfBlocked(request: Request, error: Error): boolean {
    const blocked = ssrfCause(error);
    if (blocked && (!this.settings.follow || request.userData.start)) this.fail(ssrfCrawlError(blocked, request.url));
    return !!blocked;
  }

  /** Crawlee `errorHandler`: runs before a retry; decides whether there is one and waits the backoff. */
  readonly errorHandler = async ({ request }: { request: Request }, error: Error): Promise<void> => {
    const blocked = this.#ssrfBlocked(request, error);
    if (this.stopped) this.#runStoppers();
    if (this.stopped || blocked || !isRetryable(error)) {
      request.noRetry = true;
      return;
    }
    const retryAfter = error instanceof FetchError ? error.retryAfterMs : undefined;
    await abortableSleep(backoffMs(request.retryCount, retryAfter), this.signal).catch(() => {});
  };

  /** Crawlee `failedRequestHandler`: the page failed for good. */
  readonly failedRequestHandler = async ({ request }: { request: Request }, error: Error): Promise<void> => {
    this.#ssrfBlocked(request, error);
    if (this.stopped) return this.#runStoppers();
    this.failed++;
    const message = failureMessage(request.url, error, request.retryCount + 1);
    this.#firstFailure ??= message;
    if (this.hooks.onPageFailed) {
      try {
        await this.hooks.onPageFailed(request.url, message);
      } catch (storing) {
        this.fail(storing);
        return;
      }
    }
    this.#progress();
  };

  /** Options every engine's crawler shares. */
  crawlerOptions(concurrency: number) {
    return {
      // As `requestQueue`: Crawlee 3.18 types a `requestManager` option but its option validation rejects it.
      requestQueue: this.queue as never,
      maxRequestsPerCrawl: this.settings.maxPages,
      maxRequestRetries: this.settings.maxRetries,
      // No sessions, cookies or fingerprints: a source is one site crawled politely, not an anti-bot contest.
      useSessionPool: false,
      persistCookiesPerSession: false,
      ...pinnedConcurrency(concurrency, {
        maybeRunIntervalSecs: 0.05,
        loggingIntervalSecs: null,
        // Crawlee's defaults with only a request queue, and true to a stop (stopsPoolOf).
        isTaskReadyFunction: this.#isTaskReady,
        isFinishedFunction: this.#isFinished,
      }),
      statusMessageLoggingInterval: 3600,
      statisticsOptions: { logIntervalSecs: 3600, saveErrorSnapshots: false, persistenceOptions: { enable: false } },
      log: quietLog,
      errorHandler: this.errorHandler,
      failedRequestHandler: this.failedRequestHandler,
    };
  }

  /** After the crawler returned: let cancelled work settle, close connections, and give the verdict. */
  async finish(runError?: unknown): Promise<CrawlResult> {
    this.hooks.signal.removeEventListener('abort', this.#onUserAbort);
    if (this.#active.size) {
      await Promise.race([Promise.allSettled([...this.#active]), new Promise((r) => setTimeout(r, DRAIN_MS).unref())]);
    }
    // Nothing leaves after this: the keep-alive pool is destroyed and every later request refused. The stoppers run
    // too: a browser whose launch ends only now (the run failed meanwhile) is closed as it registers.
    this.#stop();
    await this.fetcher.close();
    if (this.#fatal) throw this.#fatal;
    const result = { pagesVisited: this.visited, pagesFailed: this.failed, aborted: this.#userAborted };
    if (this.#userAborted) return result;
    if (runError)
      throw runError instanceof CrawlError
        ? runError
        : new CrawlError('other', `The crawl failed: ${(runError as Error)?.message ?? runError}`);
    if (this.visited === 0 && this.failed > 0)
      throw new CrawlError('all_failed', this.#firstFailure ?? 'Every page failed');
    return result;
  }
}
