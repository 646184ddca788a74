/**
 * `runCrawl`: the scraping engine's entry point (scraping.types.ts has the contract). Checks what can
 * be checked before any request leaves (URL, selectors, the SSRF guard on the start host, Chromium,
 * robots.txt for the start URL), then runs the scrape type's Crawlee crawler on a fresh CrawlSession.
 */
import fs from 'node:fs/promises';
import { assertPublicHost, SsrfBlockedError } from '../../shared/ssrf.ts';
import { runApiCrawl } from './crawl-api.ts';
import { runDynamicCrawl } from './crawl-dynamic.ts';
import { CrawlSession, ssrfCrawlError } from './crawl-session.ts';
import { runStaticCrawl } from './crawl-static.ts';
import { HTML_ACCEPT, JSON_ACCEPT } from './http-client.ts';
import { robotsToken } from './robots.ts';
import { CrawlError, type CrawlResult, type RunCrawl } from './scraping.types.ts';
import { parseSelectors, validateSelectors } from './selectors.ts';

/** Throws CrawlError('browser_unavailable') when the Chromium binary is missing or not executable. */
export async function assertChromium(chromiumPath: string): Promise<void> {
  try {
    await fs.access(chromiumPath, fs.constants.X_OK);
  } catch {
    throw new CrawlError(
      'browser_unavailable',
      `Chromium not found at ${chromiumPath}: install it (apt-get install chromium) or set CHROMIUM_PATH`,
    );
  }
}

function startUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CrawlError('other', `Not a valid URL: ${raw}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new CrawlError('other', `Only http and https URLs can be crawled, not ${url.protocol} (${raw})`);
  return url;
}

export const runCrawl: RunCrawl = async (settings, hooks): Promise<CrawlResult> => {
  const url = startUrl(settings.url);
  const problems = validateSelectors(settings.selectors, settings.scrapeType);
  if (problems.length)
    throw new CrawlError('invalid_selector', problems.map((p) => `${p.field}: ${p.message}`).join('; '));
  const parsed = parseSelectors(settings.selectors, settings.scrapeType);
  if (hooks.signal.aborted) return { pagesVisited: 0, pagesFailed: 0, aborted: true };

  // Refuse a private start address before anything is sent (later hops are checked as they connect).
  try {
    await assertPublicHost(url.hostname, settings.allowPrivateNetwork, url.href);
  } catch (error) {
    if (error instanceof SsrfBlockedError) throw ssrfCrawlError(error, url.href);
    // Unresolvable names fail as pages do, with the fetch's own message.
  }
  if (settings.scrapeType === 'DYNAMIC') await assertChromium(settings.chromiumPath);

  const session = new CrawlSession(
    { ...settings, url: url.href },
    hooks,
    parsed,
    settings.scrapeType === 'API' ? JSON_ACCEPT : HTML_ACCEPT,
  );
  let runError: unknown;
  try {
    if (session.robots && !session.stopped && !(await session.robots.isAllowed(url.href))) {
      throw new CrawlError(
        'robots',
        `${url.href} is disallowed by robots.txt for ${robotsToken(settings.userAgent)} ` +
          '(turn off respecting robots.txt for this source to crawl it anyway)',
      );
    }
    await session.open();
    if (!session.stopped) {
      if (settings.scrapeType === 'STATIC') await runStaticCrawl(session);
      else if (settings.scrapeType === 'API') await runApiCrawl(session);
      else await runDynamicCrawl(session);
    }
  } catch (error) {
    if (error instanceof CrawlError && (error.kind === 'robots' || error.kind === 'browser_unavailable')) {
      await session.finish().catch(() => {});
      throw error;
    }
    runError = error;
  }
  return session.finish(runError);
};
