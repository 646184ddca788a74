/**
 * STATIC: Crawlee's CheerioCrawler over our undici client (http-client.ts), extraction with the
 * selector convention over the `$` it parsed.
 */
import type { IncomingMessage } from 'node:http';
import { text } from 'node:stream/consumers';
import { CheerioCrawler, type CheerioCrawlingContext } from '@crawlee/cheerio';
import { type CheerioAPI, load } from 'cheerio';
import { backstopSecs, pageHandler } from './crawl-handler.ts';
import { type CrawlSession, PageError } from './crawl-session.ts';
import { extractFromCheerio } from './extract-html.ts';
import { CrawleeHttpClient } from './http-client.ts';

/**
 * CheerioCrawler parses every page twice (htmlparser2 for `dom`, then cheerio.load for `$`); we only
 * use `$`, so parse once: on the benchmark's 10 KB page, 0.14 ms instead of 0.26–0.31 ms.
 */
export class SingleParseCheerioCrawler extends CheerioCrawler {
  /** A site crawl reads the HTML and its links only: no DOM is built (`$` is then undefined). */
  skipParse = false;
  protected override async _parseHTML(response: IncomingMessage, isXml: boolean, context: CheerioCrawlingContext) {
    const body = await text(response);
    const $ = this.skipParse
      ? undefined
      : load(body, { xmlMode: isXml, _useHtmlParser2: true } as Parameters<typeof load>[1]);
    return {
      // Crawlee's typings name cheerio's CommonJS build, ours its ESM build: the same API.
      $: $ as never,
      body,
      dom: undefined as never,
      enqueueLinks: async () => {
        throw new Error(`enqueueLinks is not used by Quarry crawls (${context.request.url})`);
      },
    };
  }
}

/** An `href` attribute and its value (double-quoted, single-quoted or bare). */
const HREF_ATTR = /\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/gi;
const decodeHref = (href: string) =>
  href
    .replace(/&amp;/g, '&')
    .replace(/&#x2F;/gi, '/')
    .replace(/&#47;/g, '/')
    .trim();

/**
 * The `href`s of the `<tag …>` elements of an HTML text, in order, without building a DOM: what
 * `/<tag\s[^>]*?\bhref\s*=\s*(…)/gi` finds, in time linear in the page (that RegExp rescanned the rest of the page
 * from every `<a ` without a `>`: 2 s on 120 KB). The next `>` and the next `href` are looked up once and reused by
 * the tags they are still ahead of.
 */
function* tagHrefs(html: string, tag: 'a' | 'base'): Generator<string> {
  const open = new RegExp(`<${tag}\\s`, 'gi');
  const attr = new RegExp(HREF_ATTR);
  let gt: number | undefined; // the next '>' (-1: none left)
  let href: RegExpExecArray | null | undefined; // the next href attribute (null: none left)
  for (let m = open.exec(html); m; m = open.exec(html)) {
    const from = open.lastIndex;
    if (gt === undefined || (gt !== -1 && gt < from)) gt = html.indexOf('>', from);
    if (href === undefined || (href !== null && href.index < from)) {
      attr.lastIndex = from;
      href = attr.exec(html);
    }
    const end = gt === -1 ? html.length : gt;
    if (!href || href.index >= end) continue;
    yield href[1] ?? href[2] ?? href[3] ?? '';
    open.lastIndex = href.index + href[0].length;
  }
}

/** `href`s of the `<a>` elements of an HTML text (a site crawl's links), resolved against the page or its `<base>`. */
export function linksOfHtml(html: string, url: string): string[] {
  const base = tagHrefs(html, 'base').next();
  const baseHref = base.done ? '' : decodeHref(base.value);
  const resolvedBase = baseHref && URL.canParse(baseHref, url) ? new URL(baseHref, url).href : url;
  const links: string[] = [];
  for (const raw of tagHrefs(html, 'a')) {
    const href = decodeHref(raw);
    if (href && URL.canParse(href, resolvedBase)) links.push(new URL(href, resolvedBase).href);
  }
  return links;
}

export async function runStaticCrawl(session: CrawlSession): Promise<void> {
  const concurrency = Math.max(1, session.settings.maxConcurrency);
  const site = !!session.settings.follow;
  const crawler = new SingleParseCheerioCrawler(
    {
      ...session.crawlerOptions(concurrency),
      ...backstopSecs(session, concurrency),
      httpClient: new CrawleeHttpClient(session.fetcher),
      requestHandler: pageHandler(session, {
        urlOf: (ctx: CheerioCrawlingContext) => ctx.request.loadedUrl ?? ctx.request.url,
        load: (ctx, url) => {
          if (site) {
            if (ctx.contentType?.type && !/html|xml/i.test(ctx.contentType.type))
              throw new PageError(`GET ${url} answered ${ctx.contentType.type}, not HTML`);
            return undefined as unknown as CheerioAPI;
          }
          if (!ctx.$)
            throw new PageError(`GET ${url} answered ${ctx.contentType?.type ?? 'a non-HTML document'}, not HTML`);
          return ctx.$ as unknown as CheerioAPI;
        },
        extract: ($, url, opts) => extractFromCheerio($, session.parsed, url, opts),
        document: async (ctx) => {
          const html = typeof ctx.body === 'string' ? ctx.body : String(ctx.body);
          return { html, links: linksOfHtml(html, ctx.request.loadedUrl ?? ctx.request.url) };
        },
      }),
    },
    session.config,
  );
  crawler.skipParse = site;
  session.stopsPoolOf(crawler);
  await crawler.run();
}
