/**
 * "Keyboard reaches every control" (issue 25), checked on a page as it is: Tab from the top visits every visible,
 * enabled control (links, buttons, inputs, selects, text areas, anything with a tabindex ≥ 0). A radio group counts
 * once (Tab stops on one radio of a group); controls inside frames are the frame's own page.
 */
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';

const CONTROLS =
  'a[href], button:not([disabled]), input:not([disabled]):not([type="hidden"]), select:not([disabled]), ' +
  'textarea:not([disabled]), summary, [tabindex]:not([tabindex="-1"])';

/** Marks every reachable-looking control with `data-kb` = its index; answers how many there are. */
const MARK = `(() => {
  const seenRadioGroups = new Set();
  let n = 0;
  for (const el of document.querySelectorAll(${JSON.stringify(CONTROLS)})) {
    el.removeAttribute('data-kb');
    if (el.closest('[inert], [hidden], details:not([open]) > :not(summary)')) continue;
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    if ((box.width === 0 && box.height === 0) || style.visibility === 'hidden' || style.display === 'none') continue;
    if (el.matches('input[type="radio"]')) {
      if (seenRadioGroups.has(el.name)) continue;
      seenRadioGroups.add(el.name);
      for (const r of document.querySelectorAll('input[type="radio"]')) if (r.name === el.name) r.setAttribute('data-kb', String(n));
    }
    el.setAttribute('data-kb', String(n++));
  }
  return n;
})()`;

const FOCUSED = `(() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  return { kb: el.getAttribute('data-kb'), what: el.outerHTML.slice(0, 120) };
})()`;

/** Records the scroll positions Tab will move, to put them back: the check must leave the page as it found it. */
const SAVE_SCROLL = `(() => {
  window.__kbScroll = [[document.scrollingElement, document.scrollingElement.scrollLeft, document.scrollingElement.scrollTop]];
  for (const el of document.querySelectorAll('*')) if (el.scrollTop || el.scrollLeft) window.__kbScroll.push([el, el.scrollLeft, el.scrollTop]);
})()`;
const RESTORE = `(() => {
  document.activeElement?.blur();
  for (const el of document.querySelectorAll('[data-kb]')) el.removeAttribute('data-kb');
  for (const el of document.querySelectorAll('*')) if (el.scrollTop || el.scrollLeft) el.scrollTo(0, 0);
  for (const [el, left, top] of window.__kbScroll) el.scrollTo(left, top);
})()`;

export async function assertKeyboardReachable(page: Page, name: string): Promise<void> {
  await page.evaluate(SAVE_SCROLL);
  try {
    await tabThrough(page, name);
  } finally {
    await page.evaluate(RESTORE);
  }
}

async function tabThrough(page: Page, name: string): Promise<void> {
  const total = (await page.evaluate(MARK)) as number;
  await page.evaluate('document.activeElement?.blur(); window.getSelection()?.removeAllRanges()');
  // Tab order starts at the top of the document.
  await page.evaluate('document.body.focus()');
  const reached = new Set<string>();
  let first: string | undefined;
  // Date and time inputs take several Tabs (their fields); a focus trap would stop the loop from ever cycling.
  for (let i = 0; i < total * 4 + 10; i++) {
    await page.keyboard.press('Tab');
    const focused = (await page.evaluate(FOCUSED)) as { kb: string | null; what: string } | null;
    if (!focused?.kb) continue;
    if (first === undefined) first = focused.kb;
    else if (focused.kb === first && reached.size > 1) break;
    reached.add(focused.kb);
    if (reached.size === total) break;
  }
  if (reached.size < total) {
    const missed = (await page.evaluate(`(() => {
      const reached = new Set(${JSON.stringify([...reached])});
      return [...document.querySelectorAll('[data-kb]')].filter((el) => !reached.has(el.getAttribute('data-kb')))
        .map((el) => el.outerHTML.slice(0, 140));
    })()`)) as string[];
    assert.fail(
      `${name}: Tab reaches ${reached.size} of ${total} controls; not reached: ${missed.slice(0, 5).join(' | ')}`,
    );
  }
}
