/**
 * The contract between the scraping engine (crawl + extract) and the jobs that run it. The engine
 * knows nothing of the database: it fetches, extracts and reports; the job runner stores.
 */

export type ScrapeType = 'STATIC' | 'DYNAMIC' | 'API';

export interface CrawlSettings {
  /** Start URL. */
  url: string;
  scrapeType: ScrapeType;
  /** The selector convention (docs/selectors.md): item, lead fields, custom fields, nextPage, waitFor. */
  selectors: Record<string, string>;
  /** Pages fetched at most (start page included). */
  maxPages: number;
  respectRobotsTxt: boolean;
  userAgent: string;
  /**
   * Proxies to go out through (http(s):// or socks5://user:pass@host:port): SCRAPER_PROXY_URL, or a proxy
   * profile's endpoints, taken in turn per request (one entry: always that one).
   */
  proxyUrls?: string[];
  /** Parallel requests for the whole crawl. */
  maxConcurrency: number;
  /** Parallel requests to one host. */
  domainConcurrency: number;
  /** Pause between two requests to the same host, in ms (politeness). */
  domainDelayMs: number;
  requestTimeoutSecs: number;
  /** Retries of a failed request, with exponential backoff. */
  maxRetries: number;
  /** ALLOW_PRIVATE_NETWORK: without it loopback/private/link-local/metadata addresses are refused. */
  allowPrivateNetwork: boolean;
  /** Chromium binary for DYNAMIC. */
  chromiumPath: string;
  /** Collect each page's visible text (for AI profile extraction); off keeps memory flat. */
  collectPageText?: boolean;
  /**
   * A site crawl (markdown exports): every page's HTML is delivered (`CrawledPage.html`, no selectors are
   * applied) and its links are followed as this says, instead of the `nextPage` selector.
   */
  follow?: FollowLinks;
  /** More URLs to fetch besides `url` (a retry of failed pages), planned at depth 0. */
  extraUrls?: string[];
}

/** How a site crawl follows links (scraping/follow.ts decides). */
export interface FollowLinks {
  /** Links are followed this many hops from the start URL (0: the start page, and sitemap pages, only). */
  maxDepth: number;
  /** Path globs a followed URL must match one of (empty: any). */
  includePaths: string[];
  /** Path globs that exclude a URL. */
  excludePaths: string[];
  /** Only the start URL's host (a leading `www.` aside). */
  sameSiteOnly: boolean;
  /** Also plan the URLs of the site's /sitemap.xml (and sitemap indexes it names), at depth 0. */
  sitemap: boolean;
}

/** One extracted item (one lead's container, or the whole page without `item`). */
export interface ExtractedItem {
  /** Trimmed values keyed by selector key (lead fields and custom fields); empty values omitted. */
  fields: Record<string, string>;
  /** For each field key, the selector string that produced the value. */
  matchedSelectors: Record<string, string>;
  /**
   * False when the element holding the email (or, without email, the item) was hidden (display:none, visibility:hidden,
   * hidden attribute, aria-hidden).
   */
  visible: boolean;
  /** The item's text, when `collectPageText` is set (for AI profile fields). */
  text?: string;
}

export interface CrawledPage {
  url: string;
  items: ExtractedItem[];
  /** The whole page's text (only with `collectPageText`). */
  text?: string;
  /** The page's HTML (a site crawl, `follow`: rendered DOM for DYNAMIC). */
  html?: string;
  /** Hops from the start URL (a site crawl). */
  depth?: number;
}

export interface CrawlProgress {
  pagesVisited: number;
  pagesFailed: number;
  /** Pages known so far (visited + queued), never above maxPages. */
  pagesPlanned: number;
}

export interface CrawlHooks {
  /** Called once per successfully processed page, awaited (back-pressure: the crawl waits for storage). */
  onPage(page: CrawledPage): Promise<void>;
  /** Called after each page (success or final failure). */
  onProgress?(progress: CrawlProgress): void;
  /** Called, awaited, once per page that failed for good (not when the crawl was stopped). */
  onPageFailed?(url: string, message: string): Promise<void>;
  /** Aborting stops the crawl: no new request leaves after abort, in-flight ones are cancelled. */
  signal: AbortSignal;
}

export interface CrawlResult {
  pagesVisited: number;
  pagesFailed: number;
  /** True when the signal aborted the crawl. */
  aborted: boolean;
}

/**
 * Thrown when the crawl as a whole fails: the start URL is refused by the SSRF guard or robots.txt,
 * or every page failed. `message` is shown to the user as the job's error; it names the URL and,
 * for the SSRF guard, the refused address.
 */
export class CrawlError extends Error {
  readonly kind: 'ssrf' | 'robots' | 'all_failed' | 'invalid_selector' | 'browser_unavailable' | 'other';
  constructor(kind: CrawlError['kind'], message: string) {
    super(message);
    this.name = 'CrawlError';
    this.kind = kind;
  }
}

export type RunCrawl = (settings: CrawlSettings, hooks: CrawlHooks) => Promise<CrawlResult>;
