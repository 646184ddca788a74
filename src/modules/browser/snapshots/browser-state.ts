/**
 * A session's browser state, read from and written back into its Chromium over the service's own Playwright
 * connection: cookies, localStorage and IndexedDB per origin (Playwright's storage state), and every tab with its
 * URL, title, scroll position, history length and sessionStorage, plus which tab is active. Kept as gzipped JSON
 * sealed with the service's secret box (AES-256-GCM under SECRET_KEY): cookie and storage values are credentials.
 */
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { SnapshotSummary } from '../../../db/schema/index.ts';
import { isSealedBytes, type SecretBox } from '../../../shared/crypto.ts';
import type { Viewport } from '../sessions/host.ts';

type StorageState = Awaited<ReturnType<BrowserContext['storageState']>>;

export interface TabState {
  url: string;
  title: string;
  active: boolean;
  scrollX: number;
  scrollY: number;
  historyLength: number;
  /** The tab's sessionStorage for its top document's origin. */
  sessionStorage: Record<string, string>;
}

export interface BrowserState {
  version: 1;
  viewport: Viewport;
  storage: StorageState;
  tabs: TabState[];
}

/** The tabs to capture, in order, and which one actions run on (the tab registry knows when operations ran). */
export interface TabOrder {
  pages: Page[];
  active: Page | undefined;
}

/** A page that does not answer (a dialog open, a busy script) is captured by its URL alone. */
const PAGE_TIMEOUT_MS = 3000;
/** A tab's page that does not load in this long is left loading: the wake does not wait for a slow site. */
const LOAD_TIMEOUT_MS = 10_000;

const gzip = promisify(zlib.gzip);
const gunzip = promisify(zlib.gunzip);

function within<T>(ms: number, work: Promise<T>, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work.catch(() => fallback),
    new Promise<T>((resolve) => {
      timer = setTimeout(() => resolve(fallback), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

interface PageFacts {
  title: string;
  scrollX: number;
  scrollY: number;
  historyLength: number;
  sessionStorage: Record<string, string>;
}

async function pageFacts(page: Page): Promise<PageFacts> {
  const none: PageFacts = { title: '', scrollX: 0, scrollY: 0, historyLength: 1, sessionStorage: {} };
  return within(
    PAGE_TIMEOUT_MS,
    page.evaluate(() => {
      const g = globalThis as unknown as {
        scrollX: number;
        scrollY: number;
        history: { length: number };
        document: { title: string };
        sessionStorage: { length: number; key(i: number): string | null; getItem(k: string): string | null };
      };
      const session: Record<string, string> = {};
      try {
        for (let i = 0; i < g.sessionStorage.length; i++) {
          const key = g.sessionStorage.key(i);
          if (key !== null) session[key] = g.sessionStorage.getItem(key) ?? '';
        }
      } catch {
        // an opaque origin has no storage
      }
      return {
        title: g.document.title,
        scrollX: Math.round(g.scrollX),
        scrollY: Math.round(g.scrollY),
        historyLength: g.history.length,
        sessionStorage: session,
      };
    }),
    none,
  );
}

/** Reads the state of the browser's default context (every tab at once). */
export async function captureState(browser: Browser, order: TabOrder, viewport: Viewport): Promise<BrowserState> {
  const context = browser.contexts()[0];
  if (!context) throw new Error('The browser has no default context');
  const pages = order.pages.filter((p) => !p.isClosed());
  const active = order.active && pages.includes(order.active) ? order.active : pages.at(-1);
  const [storage, facts] = await Promise.all([
    context.storageState({ indexedDB: true }),
    Promise.all(pages.map((page) => pageFacts(page))),
  ]);
  const tabs = pages.map((page, i) => ({ url: page.url(), active: page === active, ...facts[i]! }));
  return { version: 1, viewport, storage, tabs };
}

/** Where a restored tab may go: the web (through the SSRF guard, as any navigation) or a blank page. */
const reloadable = (url: string) => /^https?:\/\//i.test(url);

const originOf = (url: string) => new URL(url).origin;

/**
 * Cookies first, before any tab loads. localStorage of the origins the tabs open is seeded by each tab's first
 * document (`withStorage`): Playwright's setStorageState visits every origin in a page of its own, half a second and
 * more; it is used only when some origin has IndexedDB data or storage without a tab. Answers the localStorage to
 * seed per origin.
 */
async function restoreStorage(context: BrowserContext, state: BrowserState): Promise<Map<string, [string, string][]>> {
  const { cookies, origins } = state.storage;
  const tabOrigins = new Set(state.tabs.filter((t) => reloadable(t.url)).map((t) => originOf(t.url)));
  const full = origins.some(
    (o) =>
      ((o as { indexedDB?: unknown[] }).indexedDB?.length ?? 0) > 0 ||
      (!tabOrigins.has(o.origin) && o.localStorage.length > 0),
  );
  if (full) {
    await context.setStorageState(state.storage);
    return new Map();
  }
  if (cookies.length) await context.addCookies(cookies);
  return new Map(origins.map((o) => [o.origin, o.localStorage.map(({ name, value }) => [name, value])]));
}

/**
 * Seeds the tab's sessionStorage, and the localStorage of its origin when still empty (another tab of the origin may
 * have seeded it), in its next document only, before the page's own scripts (the script is removed after the load).
 */
async function withStorage(
  page: Page,
  tab: TabState,
  local: [string, string][],
  load: () => Promise<void>,
): Promise<void> {
  const perTab = Object.entries(tab.sessionStorage);
  if (!perTab.length && !local.length) return load();
  const origin = originOf(tab.url);
  const cdp = await page.context().newCDPSession(page);
  const source = `(() => { if (location.origin !== ${JSON.stringify(origin)}) return;
    try { for (const [k, v] of ${JSON.stringify(perTab)}) sessionStorage.setItem(k, v); } catch {}
    try { if (localStorage.length === 0) for (const [k, v] of ${JSON.stringify(local)}) localStorage.setItem(k, v); }
    catch {} })();`;
  // The script runs only in sessions that enabled the Page domain.
  await cdp.send('Page.enable');
  const { identifier } = await cdp.send('Page.addScriptToEvaluateOnNewDocument', { source });
  try {
    await load();
  } finally {
    await cdp.send('Page.removeScriptToEvaluateOnNewDocument', { identifier }).catch(() => {});
    await cdp.detach().catch(() => {});
  }
}

/**
 * Writes a state into a fresh browser: storage first (cookies, localStorage, IndexedDB), then each tab opened in
 * order, loaded at its URL with its sessionStorage and scrolled where it was; answers the active tab's page.
 */
export async function restoreState(browser: Browser, state: BrowserState): Promise<Page | undefined> {
  const context = browser.contexts()[0];
  if (!context) throw new Error('The browser has no default context');
  const seeds = await restoreStorage(context, state);
  const blank = context.pages().filter((p) => p.url() === 'about:blank');
  const pages: Page[] = [];
  // Opened one after the other, so their order is the tabs' order; loaded all at once.
  for (const _ of state.tabs) pages.push(blank.shift() ?? (await context.newPage()));
  for (const spare of blank) await spare.close().catch(() => {});
  await Promise.all(
    state.tabs.map(async (tab, i) => {
      const page = pages[i]!;
      if (!reloadable(tab.url)) return;
      await withStorage(page, tab, seeds.get(originOf(tab.url)) ?? [], async () => {
        await page.goto(tab.url, { waitUntil: 'load', timeout: LOAD_TIMEOUT_MS }).catch(() => {});
      });
      if (tab.scrollX || tab.scrollY) {
        await within(
          PAGE_TIMEOUT_MS,
          page.evaluate(
            ([x, y]) => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(x!, y!),
            [tab.scrollX, tab.scrollY],
          ),
          undefined,
        );
      }
    }),
  );
  const active = pages[state.tabs.findIndex((t) => t.active)];
  await active?.bringToFront().catch(() => {});
  return active;
}

export async function encodeState(state: BrowserState, box: SecretBox): Promise<Buffer> {
  return box.sealBytes(await gzip(JSON.stringify(state), { level: 9 }));
}

export async function decodeState(bytes: Uint8Array, box: SecretBox): Promise<BrowserState> {
  const compressed = isSealedBytes(bytes) ? box.openBytes(bytes) : bytes; // else a legacy unsealed row
  return JSON.parse((await gunzip(compressed)).toString('utf8')) as BrowserState;
}

/** What a snapshot shows without its state: no cookie or storage value. */
export function summaryOf(state: BrowserState): SnapshotSummary {
  return {
    tabs: state.tabs.map(({ url, title, active, scrollX, scrollY, historyLength }) => ({
      url,
      title,
      active,
      scrollX,
      scrollY,
      historyLength,
    })),
    origins: state.storage.origins.map((o) => o.origin),
    cookies: state.storage.cookies.length,
  };
}
