import { htmlToMarkdown } from '@mdream/js';
import type { Page } from 'playwright-core';
import type { z } from 'zod';
import { validationError } from '../../../shared/errors.ts';
import { extractFromHtml, parseSelectors, validateSelectors } from '../../scraping/index.ts';
import { runStep } from '../actions/action-error.ts';
import type { SessionOperations } from '../tabs/session-browser.ts';
import type { accessibilityQuery, contentQuery, pdfBody, screenshotQuery } from './page.schemas.ts';

const TIMEOUT_MS = 30_000;

/** The tab an operation reads: the one named, or the active tab. */
export async function tabOf(session: SessionOperations, tabId: string | undefined) {
  session.touch();
  const page = tabId === undefined ? await session.activePage() : session.tabs.get(tabId);
  return { page, tabId: session.tabs.idOf(page) };
}

export async function screenshot(page: Page, query: z.infer<typeof screenshotQuery>) {
  const type = query.format ?? 'png';
  if (query.quality !== undefined && type !== 'jpeg') throw validationError('quality', 'only with format=jpeg');
  const clip = query.clip?.split(',').map(Number);
  const timeout = query.timeoutMs ?? TIMEOUT_MS;
  const options = {
    type,
    quality: query.quality,
    fullPage: query.fullPage,
    clip: clip ? { x: clip[0], y: clip[1], width: clip[2], height: clip[3] } : undefined,
    timeout,
  } as const;
  // A tab in the background paints no frame, and a screenshot then waits for one until it times out: another CDP
  // client may have brought its own tab forward since this one was activated.
  await runStep('screenshot', () => page.bringToFront());
  const body = await runStep('screenshot', () =>
    query.selector !== undefined
      ? page.locator(query.selector).first().screenshot({ type, quality: query.quality, timeout })
      : page.screenshot(options),
  );
  return { body, contentType: `image/${type}` };
}

export async function pdf(page: Page, body: z.infer<typeof pdfBody>) {
  const { tabId: _, ...options } = body;
  return runStep('pdf', () => page.pdf(options));
}

export async function content(page: Page, format: NonNullable<z.infer<typeof contentQuery>['format']>) {
  return runStep('content', async () => {
    // biome-ignore lint/performance/useDomNodeTextContent: the text as rendered (no script, hidden parts) is the point
    if (format === 'text') return page.locator('body').innerText({ timeout: TIMEOUT_MS });
    const html = await page.content();
    if (format === 'html') return html;
    const origin = new URL(page.url()).origin;
    // Relative links resolve against the page's origin; about:blank has none.
    return htmlToMarkdown(html, origin === 'null' ? {} : { origin });
  });
}

/** The sources' extractor over the page's current DOM (as a DYNAMIC crawl would see it), not a second copy. */
export async function scrape(page: Page, selectors: Record<string, string>) {
  const problem = validateSelectors(selectors, 'STATIC')[0];
  if (problem) throw validationError(problem.field, problem.message);
  const html = await runStep('scrape', () => page.content());
  const result = await runStep('scrape', async () =>
    extractFromHtml(html, parseSelectors(selectors, 'STATIC'), page.url()),
  );
  return {
    items: result.items.map((item) => ({ fields: item.fields, visible: item.visible })),
    nextPageUrls: result.nextPageUrls,
  };
}

export async function accessibility(page: Page, query: z.infer<typeof accessibilityQuery>) {
  return runStep('accessibility', () =>
    page
      .locator(query.selector ?? 'body')
      .first()
      .ariaSnapshot({ timeout: TIMEOUT_MS }),
  );
}
