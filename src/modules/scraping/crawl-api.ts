/**
 * API: Crawlee's HttpCrawler over our undici client, the JSON body extracted with JSONPath / dotted
 * paths, pagination by the `nextPage` JSONPath.
 */
import { HttpCrawler } from '@crawlee/http';
import { extractFromJson } from './extract-json.ts';
import { CrawlAbortedError, PageError, type CrawlSession } from './crawl-session.ts';
import { backstopSecs, extractionError } from './crawl-static.ts';
import { CrawleeHttpClient } from './http-client.ts';
import { CrawlError } from './scraping.types.ts';

const JSON_TYPES = ['application/json', 'text/json', 'application/ld+json', 'application/vnd.api+json', 'application/problem+json', 'text/plain'];

export async function runApiCrawl(session: CrawlSession): Promise<void> {
  const concurrency = Math.max(1, session.settings.maxConcurrency);
  const crawler = new HttpCrawler(
    {
      ...session.crawlerOptions(concurrency),
      ...backstopSecs(session, concurrency),
      additionalMimeTypes: JSON_TYPES,
      httpClient: new CrawleeHttpClient(session.fetcher),
      requestHandler: (ctx) =>
        session.track(
          (async () => {
            if (session.stopped) throw new CrawlAbortedError();
            const url = ctx.request.loadedUrl ?? ctx.request.url;
            let json: unknown;
            try {
              json = JSON.parse(Buffer.isBuffer(ctx.body) ? ctx.body.toString('utf8') : String(ctx.body));
            } catch {
              throw new PageError(`GET ${url} did not answer JSON (${ctx.contentType?.type ?? 'no content type'})`);
            }
            let extracted;
            try {
              extracted = extractFromJson(json, session.parsed, url);
            } catch (error) {
              const e = extractionError(error, url);
              if (e instanceof CrawlError) session.fail(e);
              throw e;
            }
            await session.enqueue(extracted.nextPageUrls, url);
            await session.deliver({ url, items: extracted.items });
          })(),
        ),
    },
    session.config,
  );
  session.onStop(() => crawler.autoscaledPool?.abort());
  await crawler.run();
}
