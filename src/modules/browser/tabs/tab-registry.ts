import type { BrowserContext, Page } from 'playwright-core';
import { notFound } from '../../../shared/errors.ts';

/** What `GET /sessions/{id}/tabs` answers for one tab. */
export interface TabView {
  id: string;
  url: string;
  title: string;
  active: boolean;
}

export interface TabRegistry {
  /** Open tabs in the order they appeared. */
  list(): Promise<TabView[]>;
  /** The tab's id (assigned on first sight: pages opened by CDP clients or popups get one too). */
  idOf(page: Page): string;
  /** One tab as the API shows it. */
  view(page: Page): Promise<TabView>;
  /** The open tab `tabId`, or 404 NOT_FOUND naming `tabId`. */
  get(tabId: string): Page;
  activePage(): Promise<Page>;
  /** The active tab as it is now, without opening one (undefined when the session has no tab open). */
  current(): { id: string; page: Page } | undefined;
  activate(tabId: string): Promise<Page>;
  open(): Promise<Page>;
  close(tabId: string): Promise<void>;
  /** Stops tracking `page` (a temporary page the service opened for its own work). */
  forget(page: Page): void;
  dispose(): void;
}

/**
 * Tab ids stable across calls: a page keeps the id it was given when first seen (`tab_<n>`, never reused within a
 * session). Pages appear through the context's `page` event, so popups a site opens and pages a CDP client creates
 * are tabs too. The active tab is the one actions run on: the last one activated or opened through the API, and
 * when it closes, the most recent tab still open.
 */
export function createTabRegistry(
  context: BrowserContext,
  hooks: { onPage?: (page: Page, tabId: string) => void } = {},
): TabRegistry {
  const ids = new WeakMap<Page, string>();
  const open = new Map<string, Page>();
  const forgotten = new WeakSet<Page>();
  let next = 1;
  let activeId: string | undefined;

  const track = (page: Page): string => {
    const known = ids.get(page);
    if (known) return known;
    const id = `tab_${next++}`;
    ids.set(page, id);
    if (forgotten.has(page) || page.isClosed()) return id;
    open.set(id, page);
    page.once('close', () => {
      open.delete(id);
      if (activeId === id) activeId = [...open.keys()].at(-1);
    });
    hooks.onPage?.(page, id);
    return id;
  };
  const onPage = (page: Page) => void track(page);
  context.on('page', onPage);
  for (const page of context.pages()) track(page);

  const currentId = () => activeId ?? [...open.keys()].at(-1);
  const view = async (page: Page): Promise<TabView> => {
    const id = track(page);
    return { id, url: page.url(), title: await page.title().catch(() => ''), active: id === currentId() };
  };
  const get = (tabId: string): Page => {
    const page = open.get(tabId);
    if (!page || page.isClosed()) throw notFound('Tab', 'tabId');
    return page;
  };
  const openPage = async (): Promise<Page> => {
    const page = await context.newPage();
    activeId = track(page);
    return page;
  };

  return {
    async list() {
      return Promise.all([...open.values()].filter((page) => !page.isClosed()).map(view));
    },
    idOf: track,
    view,
    get,
    async activePage() {
      const id = currentId();
      const page = id ? open.get(id) : undefined;
      if (page && !page.isClosed()) {
        activeId = id;
        return page;
      }
      return openPage();
    },
    current() {
      const id = currentId();
      const page = id ? open.get(id) : undefined;
      return id && page && !page.isClosed() ? { id, page } : undefined;
    },
    async activate(tabId) {
      const page = get(tabId);
      activeId = tabId;
      await page.bringToFront();
      return page;
    },
    open: openPage,
    async close(tabId) {
      const page = get(tabId);
      await page.close();
    },
    forget(page) {
      forgotten.add(page);
      const id = ids.get(page);
      if (id) open.delete(id);
    },
    dispose() {
      context.off('page', onPage);
    },
  };
}
