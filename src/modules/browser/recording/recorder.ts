/**
 * Records a session with rrweb: an init script and a binding on the browser's default context, over the service's
 * own Playwright connection. Playwright installs both in every page of the context (pages CDP clients open too,
 * since it auto-attaches to every target) before any of the page's scripts, and again after each navigation;
 * events come back through the binding in batches and are appended to the session's recording file.
 */
import type { Browser, Page } from 'playwright-core';
import { isolatedUmd, rrwebBundles } from './bundles.ts';
import { openRecording, type RecordedEvent } from './recording-store.ts';

const BINDING = '__quarryRecord';

/**
 * The page side. Top documents and cross-origin frames run a recorder; a cross-origin frame's rrweb passes its
 * events to the parent's (recordCrossOriginIframes), and a same-origin frame is recorded by its parent's DOM
 * observer, so it runs none. Events go out at the end of the task that made them (those of one task in one binding
 * call): anything held longer is lost when a navigation follows (a flush on pagehide does not reach the service).
 * rrweb itself throttles the frequent kinds (mouse moves, scrolls).
 */
function pageScript(): string {
  return `(() => {
  if (window.__quarryRecording) return;
  window.__quarryRecording = true;
  if (window !== window.top) { try { void window.parent.document; return; } catch {} }
  const send = window[${JSON.stringify(BINDING)}];
  if (typeof send !== 'function') return;
  const rrweb = ${isolatedUmd(rrwebBundles().record, 'rrwebRecord')};
  let queue = [];
  // The binding answers a promise, rejected when the document is gone meanwhile: nothing to do about it here.
  const flush = () => { const batch = queue; queue = []; Promise.resolve(send(batch)).catch(() => {}); };
  const start = () => rrweb.record({
    emit(event) {
      if (queue.push(event) === 1) queueMicrotask(flush);
    },
    recordCrossOriginIframes: true,
    recordAfter: 'DOMContentLoaded',
  });
  try { start(); } catch (err) { console.debug('recording could not start', err); }
})();`;
}

/** Only what rrweb emits reaches the file: the page can call the binding too. */
const isEvents = (value: unknown): value is RecordedEvent[] =>
  Array.isArray(value) &&
  value.every((e) => e && typeof e === 'object' && typeof e.type === 'number' && typeof e.timestamp === 'number');

/**
 * Starts recording `sessionId` on `browser` (connected with connectOverCDP). Call it before any page of the session
 * loads; the recording closes when the connection does (the session's release or sleep closes it). A woken session
 * goes on in the same file, its pages numbered from `firstPage` on.
 */
export async function startRecording(
  browser: Browser,
  dataDir: string,
  sessionId: string,
  firstPage = 1,
): Promise<void> {
  const context = browser.contexts()[0];
  if (!context) throw new Error('The browser has no default context');
  const writer = openRecording(dataDir, sessionId);
  const ids = new WeakMap<Page, string>();
  let next = firstPage;
  const pageId = (page: Page) => {
    let id = ids.get(page);
    if (!id) {
      id = `page_${next++}`;
      ids.set(page, id);
    }
    return id;
  };
  browser.once('disconnected', () => void writer.close());
  try {
    await context.exposeBinding(BINDING, ({ page }, batch: unknown) => {
      if (page && isEvents(batch)) writer.append(pageId(page), batch);
    });
    await context.addInitScript({ content: pageScript() });
  } catch (err) {
    await writer.close();
    throw err;
  }
}
