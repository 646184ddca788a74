/**
 * DYNAMIC: Crawlee's PlaywrightCrawler on playwright-core and the system Chromium. Every browser
 * connection goes through the crawl's guard proxy (shared/guard-proxy.ts: redirects included);
 * `page.route` refuses private hosts early (naming the address), blocks images/fonts/media, and
 * stops everything once the crawl is stopped. Extraction runs in the page after `waitFor`.
 */
import { chromium, type Page, type Request as PwRequest, type Route } from 'playwright-core';
import { type GuardProxy, SSRF_HEADER, startGuardProxy } from '../../shared/guard-proxy.ts';
import { assertPublicHost, SsrfBlockedError } from '../../shared/ssrf.ts';
import { pageHandler } from './crawl-handler.ts';
import { CrawlAbortedError, type CrawlSession, ssrfCrawlError } from './crawl-session.ts';
import { extractInPage, waitForSelector } from './extract-browser.ts';
import { statusError } from './http-client.ts';
import { PlaywrightCrawler, type PlaywrightCrawlingContext } from './playwright-crawler.ts';
import { CrawlError } from './scraping.types.ts';

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
];
const BLOCKED_RESOURCES = new Set(['image', 'font', 'media']);

/** Per page: its politeness slot, the hosts its main-frame navigation went through, a refusal seen by route. */
interface PageState {
  release?: () => void;
  navTargets: Set<string>;
  refused?: SsrfBlockedError;
}

/** A navigation of the page itself (frame() throws for service-worker requests, which are not). */
function isMainNavigation(page: Page, request: PwRequest): boolean {
  try {
    return request.isNavigationRequest() && request.frame() === page.mainFrame();
  } catch {
    return false;
  }
}

const targetOf = (u: URL) => `${u.hostname.replace(/^\[|\]$/g, '')}:${u.port || (u.protocol === 'https:' ? 443 : 80)}`;

class QuarryPlaywrightCrawler extends PlaywrightCrawler {
  onCleanup?: (requestId: string) => void;
  protected override async _cleanupContext(context: PlaywrightCrawlingContext): Promise<void> {
    this.onCleanup?.(context.request.id ?? context.request.uniqueKey);
    await super._cleanupContext(context);
  }
}

export async function runDynamicCrawl(session: CrawlSession): Promise<void> {
  const { settings, parsed } = session;
  const concurrency = Math.max(1, settings.maxConcurrency);
  const timeoutMs = settings.requestTimeoutSecs * 1000;
  const states = new Map<string, PageState>();
  const hostChecks = new Map<string, Promise<SsrfBlockedError | undefined>>();
  const proxy: GuardProxy = await startGuardProxy({
    allowPrivateNetwork: settings.allowPrivateNetwork,
    upstreamProxyUrls: settings.proxyUrls,
    signal: session.signal,
  });

  const stateOf = (id: string): PageState => {
    let s = states.get(id);
    if (!s) states.set(id, (s = { navTargets: new Set() }));
    return s;
  };
  /** assertPublicHost per host, cached for the crawl (the proxy re-checks at connect time). */
  const refusalFor = (url: URL): Promise<SsrfBlockedError | undefined> => {
    if (settings.allowPrivateNetwork) return Promise.resolve(undefined);
    let check = hostChecks.get(url.hostname);
    if (!check) {
      check = assertPublicHost(url.hostname, false, url.href).then(
        () => undefined,
        (e) => (e instanceof SsrfBlockedError ? e : undefined),
      );
      hostChecks.set(url.hostname, check);
    }
    return check;
  };
  /** The guard's refusal behind a failed or refused main navigation, if any. */
  const navigationRefusal = (state: PageState | undefined): SsrfBlockedError | undefined => {
    if (!state) return undefined;
    if (state.refused) return state.refused;
    for (const t of state.navTargets) {
      const r = proxy.refusals.get(t);
      if (r) return r;
    }
    return undefined;
  };
  const idOf = (ctx: { request: { id?: string; uniqueKey: string } }) => ctx.request.id ?? ctx.request.uniqueKey;

  const routePage = async (page: Page, state: PageState) => {
    page.on('request', (r) => {
      if (isMainNavigation(page, r)) state.navTargets.add(targetOf(new URL(r.url())));
    });
    await page.route('**/*', async (route: Route) => {
      const request = route.request();
      try {
        if (session.stopped) return await route.abort('aborted');
        if (BLOCKED_RESOURCES.has(request.resourceType())) return await route.abort('blockedbyclient');
        const url = new URL(request.url());
        if (url.protocol === 'http:' || url.protocol === 'https:') {
          const refused = await refusalFor(url);
          if (refused) {
            if (isMainNavigation(page, request)) state.refused = refused;
            return await route.abort('blockedbyclient');
          }
        }
        await route.continue();
      } catch {
        // The page closed while routing: nothing to do.
      }
    });
  };

  const crawler = new QuarryPlaywrightCrawler(
    {
      ...session.crawlerOptions(concurrency),
      errorHandler: async (ctx, error) => {
        const state = states.get(idOf(ctx));
        state?.release?.();
        const refused = navigationRefusal(state);
        if (refused) session.fail(ssrfCrawlError(refused, ctx.request.url));
        if (/browserType\.launch|Failed to launch|Executable doesn't exist/i.test(error.message)) {
          session.fail(
            new CrawlError(
              'browser_unavailable',
              `Chromium at ${settings.chromiumPath} failed to start: ${error.message.split('\n')[0]}`,
            ),
          );
        }
        await session.errorHandler(ctx, error);
      },
      failedRequestHandler: async (ctx, error) => {
        const state = states.get(idOf(ctx));
        state?.release?.();
        const refused = navigationRefusal(state);
        if (refused) session.fail(ssrfCrawlError(refused, ctx.request.url));
        await session.failedRequestHandler(ctx, error);
      },
      navigationTimeoutSecs: settings.requestTimeoutSecs,
      // Includes waitFor and storing the page (onPage back-pressure).
      requestHandlerTimeoutSecs: Math.max(300, settings.requestTimeoutSecs * 4),
      headless: true,
      launchContext: {
        launcher: chromium,
        useChrome: false,
        useIncognitoPages: false,
        userAgent: settings.userAgent,
        launchOptions: {
          executablePath: settings.chromiumPath,
          headless: true,
          args: CHROMIUM_ARGS,
          proxy: { server: proxy.url, username: proxy.username, password: proxy.password },
        },
      },
      // No fingerprint injection; relaunching Chromium every 100 pages (the default) costs more than it saves.
      browserPoolOptions: {
        useFingerprints: false,
        retireBrowserAfterPageCount: 500,
        // The pool's teardown closes active browsers only: one still launching when the crawl stopped would live on.
        postLaunchHooks: [(_pageId, controller) => session.onStop(() => controller.close())],
      },
      preNavigationHooks: [
        async (ctx) => {
          if (session.stopped) throw new CrawlAbortedError();
          const state = stateOf(idOf(ctx));
          await routePage(ctx.page, state);
          state.release = await session.limiter.acquire(new URL(ctx.request.url).host, session.signal);
        },
      ],
      postNavigationHooks: [
        async (ctx) => {
          states.get(idOf(ctx))?.release?.();
        },
      ],
      requestHandler: pageHandler(session, {
        urlOf: ({ page, request }: PlaywrightCrawlingContext) => page.url() || request.url,
        load: async (ctx, url) => {
          const { page, response, request } = ctx;
          const refusal = response?.headers()[SSRF_HEADER];
          if (refusal) {
            const refused = navigationRefusal(states.get(idOf(ctx)));
            session.fail(
              refused
                ? ssrfCrawlError(refused, request.url)
                : new CrawlError('ssrf', `${refusal} (while fetching ${request.url})`),
            );
            throw new CrawlAbortedError();
          }
          const status = response?.status() ?? 200;
          if (status >= 400) throw statusError('GET', url, status, response?.headers() ?? {});
          if (parsed.waitFor && !(await waitForSelector(page, parsed.waitFor, timeoutMs))) {
            throw new Error(
              `the waitFor selector ${parsed.waitFor.raw} did not appear within ${settings.requestTimeoutSecs} s`,
            );
          }
          return page;
        },
        extract: (page, url, opts) => extractInPage(page, parsed, url, opts),
        document: async (_ctx, page) => ({
          html: await page.content(),
          // Resolved by the browser (base element included).
          links: await page.$$eval('a[href]', (as: Array<{ href?: unknown }>) => as.map((a) => String(a.href ?? ''))),
        }),
      }),
    },
    session.config,
  );
  crawler.onCleanup = (id) => {
    states.get(id)?.release?.();
    states.delete(id);
  };
  session.stopsPoolOf(crawler);
  try {
    await crawler.run();
  } finally {
    await proxy.close();
  }
}
