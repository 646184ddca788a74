import type { Page } from 'playwright-core';
import type { z } from 'zod';
import { runStep } from '../actions/action-error.ts';
import type { SessionOperations } from '../tabs/session-browser.ts';
import type { cookieFilter, putStorageBody, setCookiesBody } from './state.schemas.ts';

type Areas = { localStorage: Record<string, string>; sessionStorage: Record<string, string> };
interface StorageArea {
  length: number;
  key(i: number): string | null;
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  clear(): void;
}

export async function listCookies(session: SessionOperations, filter: z.infer<typeof cookieFilter>) {
  session.touch();
  const cookies = await session.context.cookies(filter.url === undefined ? [] : [filter.url]);
  return cookies.filter((c) => filter.name === undefined || c.name === filter.name);
}

export async function setCookies(session: SessionOperations, body: z.infer<typeof setCookiesBody>) {
  session.touch();
  await runStep('cookies', () => session.context.addCookies(body.cookies));
  return body.cookies.length;
}

/** Deletes the cookies the filter matches (all of them without one); answers how many went. */
export async function deleteCookies(session: SessionOperations, filter: z.infer<typeof cookieFilter>) {
  const matched = await listCookies(session, filter);
  for (const c of matched) await session.context.clearCookies({ name: c.name, domain: c.domain, path: c.path });
  return matched.length;
}

/**
 * A page at `origin` to read or write its storage in: the active tab or another tab already there (so
 * sessionStorage is that tab's), else a temporary page whose document is answered here, never fetched from the site,
 * closed afterwards.
 */
async function withPageAt<T>(
  session: SessionOperations,
  origin: string,
  work: (page: Page, temporary: boolean) => Promise<T>,
) {
  const active = await session.activePage();
  const pages = [active, ...session.context.pages()];
  const existing = pages.find((p) => !p.isClosed() && originOf(p.url()) === origin);
  if (existing) return work(existing, false);
  const page = await session.context.newPage();
  session.tabs.forget(page);
  try {
    await page.route('**/*', (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title></title>' }),
    );
    await page.goto(`${origin}/`);
    return await work(page, true);
  } finally {
    await page.close().catch(() => {});
  }
}

const originOf = (url: string) => {
  try {
    return new URL(url).origin;
  } catch {
    return 'null';
  }
};

export async function readStorage(session: SessionOperations, originUrl: string) {
  session.touch();
  const origin = originOf(originUrl);
  return runStep('storage', () =>
    withPageAt(session, origin, async (page, temporary) => {
      const areas = await page.evaluate(() => {
        const g = globalThis as unknown as { localStorage: StorageArea; sessionStorage: StorageArea };
        const dump = (area: StorageArea) => {
          const out: Record<string, string> = {};
          for (let i = 0; i < area.length; i++) {
            const key = area.key(i);
            if (key !== null) out[key] = area.getItem(key) ?? '';
          }
          return out;
        };
        return { localStorage: dump(g.localStorage), sessionStorage: dump(g.sessionStorage) } as Areas;
      });
      // A temporary page's sessionStorage is its own, empty: no tab at this origin has any.
      return { origin, ...areas, ...(temporary ? { sessionStorage: {} } : {}) };
    }),
  );
}

export async function writeStorage(session: SessionOperations, body: z.infer<typeof putStorageBody>) {
  session.touch();
  const origin = originOf(body.origin);
  await runStep('storage', async () => {
    await withPageAt(session, origin, (page) =>
      page.evaluate(
        ({ local, perTab, clear }) => {
          const g = globalThis as unknown as { localStorage: StorageArea; sessionStorage: StorageArea };
          const write = (area: StorageArea, values: Record<string, string> | undefined) => {
            if (!values) return;
            if (clear) area.clear();
            for (const [key, value] of Object.entries(values)) area.setItem(key, value);
          };
          write(g.localStorage, local);
          write(g.sessionStorage, perTab);
        },
        { local: body.localStorage, perTab: body.sessionStorage, clear: body.clear ?? false },
      ),
    );
  });
  return readStorage(session, body.origin);
}
