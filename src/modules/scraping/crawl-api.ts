/**
 * API: Crawlee's HttpCrawler over our undici client, the JSON body extracted with JSONPath / dotted
 * paths, pagination by the `nextPage` JSONPath.
 */
import { HttpCrawler, type HttpCrawlingContext } from '@crawlee/http';
import { backstopSecs, pageHandler } from './crawl-handler.ts';
import { type CrawlSession, PageError } from './crawl-session.ts';
import { extractFromJson } from './extract-json.ts';
import { CrawleeHttpClient } from './http-client.ts';

const JSON_TYPES = [
  'application/json',
  'text/json',
  'application/ld+json',
  'application/vnd.api+json',
  'application/problem+json',
  'text/plain',
];

/** What the handler reads of Crawlee's context (the whole context's typing does not fit a plain handler). */
type JsonResponse = Pick<HttpCrawlingContext, 'request' | 'body' | 'contentType'>;

export async function runApiCrawl(session: CrawlSession): Promise<void> {
  const concurrency = Math.max(1, session.settings.maxConcurrency);
  const crawler = new HttpCrawler(
    {
      ...session.crawlerOptions(concurrency),
      ...backstopSecs(session, concurrency),
      additionalMimeTypes: JSON_TYPES,
      httpClient: new CrawleeHttpClient(session.fetcher),
      requestHandler: pageHandler(session, {
        urlOf: (ctx: JsonResponse) => ctx.request.loadedUrl ?? ctx.request.url,
        load: (ctx, url): unknown => {
          try {
            return JSON.parse(Buffer.isBuffer(ctx.body) ? ctx.body.toString('utf8') : String(ctx.body));
          } catch {
            throw new PageError(`GET ${url} did not answer JSON (${ctx.contentType?.type ?? 'no content type'})`);
          }
        },
        extract: (json, url) => extractFromJson(json, session.parsed, url),
      }),
    },
    session.config,
  );
  session.stopsPoolOf(crawler);
  await crawler.run();
}
