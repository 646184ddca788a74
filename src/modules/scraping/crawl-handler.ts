/**
 * The request handler every engine (crawl-static/api/dynamic) shares. An engine says only how its
 * response is read (`load`) and how items and next-page URLs come out of it (`extract`); the rest
 * (the stop check, which errors fail the page and which the crawl, planning next pages, delivering
 * the page) is the same for all.
 */
import { CrawlAbortedError, type CrawlSession, PageError } from './crawl-session.ts';
import type { ExtractOptions, ExtractResult } from './postprocess.ts';
import { CrawlError } from './scraping.types.ts';

/** How one engine reads a page. */
export interface PageReader<Ctx, Loaded> {
  /** The page's URL after redirects. */
  urlOf(ctx: Ctx): string;
  /** The response as `extract` reads it, once checked (content type, status, waitFor): its errors fail the page. */
  load(ctx: Ctx, url: string): Loaded | Promise<Loaded>;
  /** The page's items and next-page URLs (and text when `opts.collectText`). */
  extract(loaded: Loaded, url: string, opts: ExtractOptions): ExtractResult | Promise<ExtractResult>;
  /** A site crawl (`settings.follow`): the page's HTML and the links on it, instead of `extract`. */
  document?(ctx: Ctx, loaded: Loaded): Promise<{ html: string; links: string[] }>;
}

/** A site crawl's page: its HTML delivered, its links followed by the crawl's link rules. */
async function sitePage<Ctx, Loaded>(
  session: CrawlSession,
  reader: PageReader<Ctx, Loaded>,
  ctx: Ctx,
  loaded: Loaded,
  url: string,
): Promise<void> {
  if (!reader.document) throw new CrawlError('other', 'This scrape type cannot crawl a site');
  const depth = Number((ctx as { request?: { userData?: { depth?: unknown } } }).request?.userData?.depth ?? 0);
  let doc: { html: string; links: string[] };
  try {
    doc = await reader.document(ctx, loaded);
  } catch (error) {
    if (session.stopped) throw new CrawlAbortedError();
    throw extractionError(error, url);
  }
  await session.follow(doc.links, url, depth);
  await session.deliver({ url, items: [], html: doc.html, depth });
}

/**
 * Extraction errors: a selector that cannot work is the crawl's failure (every page would fail
 * alike); anything else fails just this page.
 */
export function extractionError(error: unknown, url: string): Error {
  if (error instanceof CrawlError || error instanceof CrawlAbortedError) return error;
  return new PageError(`Extracting ${url} failed: ${(error as Error)?.message ?? error}`);
}

/** Crawlee's backstop timeouts: ours (per request, in the client) fire first; waiting for politeness does not count. */
export function backstopSecs(
  session: CrawlSession,
  concurrency: number,
): { navigationTimeoutSecs: number; requestHandlerTimeoutSecs: number } {
  const politenessWaitSecs = Math.ceil((session.settings.domainDelayMs * concurrency) / 1000);
  return {
    navigationTimeoutSecs: session.settings.requestTimeoutSecs + politenessWaitSecs + 30,
    // Includes storing the page (onPage back-pressure): a slow database must not fail pages.
    requestHandlerTimeoutSecs: Math.max(300, session.settings.requestTimeoutSecs * 4),
  };
}

/** Crawlee's `requestHandler` for an engine reading pages with `reader`. */
export function pageHandler<Ctx, Loaded>(
  session: CrawlSession,
  reader: PageReader<Ctx, Loaded>,
): (ctx: Ctx) => Promise<void> {
  const opts: ExtractOptions = { collectText: !!session.settings.collectPageText };
  return (ctx) =>
    session.track(
      (async () => {
        if (session.stopped) throw new CrawlAbortedError();
        const url = reader.urlOf(ctx);
        const loaded = await reader.load(ctx, url);
        if (session.settings.follow) return sitePage(session, reader, ctx, loaded, url);
        let extracted: ExtractResult;
        try {
          extracted = await reader.extract(loaded, url, opts);
        } catch (error) {
          if (session.stopped) throw new CrawlAbortedError();
          const e = extractionError(error, url);
          if (e instanceof CrawlError) session.fail(e);
          throw e;
        }
        await session.enqueue(extracted.nextPageUrls, url);
        const { items, text } = extracted;
        await session.deliver({ url, items, ...(text !== undefined ? { text } : {}) });
      })(),
    );
}
