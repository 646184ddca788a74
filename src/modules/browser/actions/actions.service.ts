import type { Page } from 'playwright-core';
import { AppError, validationError } from '../../../shared/errors.ts';
import type { SessionOperations } from '../tabs/session-browser.ts';
import { actionFailed, runStep } from './action-error.ts';
import { ACTION_BODIES, type ActionInput, type ActionName } from './actions.schemas.ts';

export const DEFAULT_ACTION_TIMEOUT_MS = 10_000;
/** An evaluate result larger than this (serialized) is refused: answers stay small enough to buffer. */
export const MAX_EVALUATE_RESULT_BYTES = 1024 * 1024;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Runner<A extends ActionName> = (page: Page, input: ActionInput<A>, step: string) => Promise<Json | undefined>;

/** The little of the DOM the in-page functions below touch (the service compiles without the DOM library). */
interface Scrollable {
  scrollTop: number;
  scrollLeft: number;
  scrollHeight: number;
  scrollBy(x: number, y: number): void;
}
interface InPage {
  document: { scrollingElement: Scrollable | null; documentElement: Scrollable };
}

const timeoutOf = (input: { timeoutMs?: number }) => input.timeoutMs ?? DEFAULT_ACTION_TIMEOUT_MS;

async function pointOf(page: Page, at: { selector: string } | { x: number; y: number }, timeout: number) {
  if (!('selector' in at)) return at;
  const box = await page.locator(at.selector).first().boundingBox({ timeout });
  if (!box) throw new Error(`${at.selector} is not visible`);
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

const runners: { [A in ActionName]: Runner<A> } = {
  async navigate(page, input) {
    const options = { waitUntil: input.waitUntil ?? 'load', timeout: timeoutOf(input) } as const;
    const response =
      input.url !== undefined
        ? await page.goto(input.url, options)
        : input.action === 'back'
          ? await page.goBack(options)
          : input.action === 'forward'
            ? await page.goForward(options)
            : await page.reload(options);
    return { status: response?.status() ?? null, title: await page.title() };
  },
  async click(page, input) {
    const options = { button: input.button, clickCount: input.clickCount, timeout: timeoutOf(input) };
    if (input.selector !== undefined) await page.locator(input.selector).first().click(options);
    else await page.mouse.click(input.x ?? 0, input.y ?? 0, options);
    return undefined;
  },
  async type(page, input) {
    const target = page.locator(input.selector).first();
    const timeout = timeoutOf(input);
    if (input.clear) await target.fill('', { timeout });
    await target.pressSequentially(input.text, { delay: input.delay, timeout });
    return undefined;
  },
  async press(page, input) {
    if (input.selector !== undefined)
      await page
        .locator(input.selector)
        .first()
        .press(input.key, { timeout: timeoutOf(input) });
    else await page.keyboard.press(input.key);
    return undefined;
  },
  async scroll(page, input) {
    const handle =
      input.selector !== undefined
        ? await page
            .locator(input.selector)
            .first()
            .elementHandle({ timeout: timeoutOf(input) })
        : null;
    return page.evaluate(
      ({ element, to, x, y }) => {
        const { document } = globalThis as unknown as InPage;
        const target = (element as Scrollable | null) ?? document.scrollingElement ?? document.documentElement;
        if (to === 'bottom') target.scrollTop = target.scrollHeight;
        else if (to === 'top') target.scrollTop = 0;
        else target.scrollBy(x ?? 0, y ?? 0);
        return { scrollX: target.scrollLeft, scrollY: target.scrollTop, scrollHeight: target.scrollHeight };
      },
      { element: handle, to: input.to, x: input.x, y: input.y },
    );
  },
  async drag(page, input) {
    const timeout = timeoutOf(input);
    if ('selector' in input.from && 'selector' in input.to) {
      await page.locator(input.from.selector).first().dragTo(page.locator(input.to.selector).first(), { timeout });
      return undefined;
    }
    const from = await pointOf(page, input.from, timeout);
    const to = await pointOf(page, input.to, timeout);
    await page.mouse.move(from.x, from.y);
    await page.mouse.down();
    await page.mouse.move(to.x, to.y, { steps: 10 });
    await page.mouse.up();
    return undefined;
  },
  async wait(page, input) {
    const timeout = timeoutOf(input);
    if (input.selector !== undefined)
      await page
        .locator(input.selector)
        .first()
        .waitFor({ state: input.state ?? 'visible', timeout });
    else if (input.url !== undefined) await page.waitForURL(input.url, { timeout });
    else if (input.loadState !== undefined) await page.waitForLoadState(input.loadState, { timeout });
    else await page.waitForTimeout(input.ms ?? 0);
    return undefined;
  },
  async evaluate(page, input, step) {
    const serialized = await Promise.race([
      page.evaluate(
        async ({ expression, body, args }) => {
          // The caller's code runs in the page, where it could run anyway through CDP: no more power than that.
          const source = body ?? `return (\n${expression}\n);`;
          const value = await new Function('...args', `return (async (...args) => {\n${source}\n})(...args)`)(...args);
          return value === undefined ? undefined : JSON.stringify(value);
        },
        // A trailing `;` would end the `return (…)` the expression is wrapped in.
        {
          expression: input.expression?.replace(/[;\s]+$/, ''),
          body: input.function,
          args: (input.args ?? []) as unknown[],
        },
      ),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`timed out after ${timeoutOf(input)} ms`)), timeoutOf(input)).unref(),
      ),
    ]);
    if (serialized === undefined) return null;
    if (Buffer.byteLength(serialized) > MAX_EVALUATE_RESULT_BYTES)
      throw actionFailed(step, `the result is larger than ${MAX_EVALUATE_RESULT_BYTES} bytes serialized`);
    return JSON.parse(serialized) as Json;
  },
};

export interface ActionOutcome {
  tabId: string;
  url: string;
  result?: Json;
}

/** Runs one action on the session's active tab. */
export async function runAction<A extends ActionName>(
  session: SessionOperations,
  action: A,
  input: ActionInput<A>,
  step: string = action,
): Promise<ActionOutcome> {
  session.touch();
  const page = await session.activePage();
  const result = await runStep(step, () => (runners[action] as Runner<A>)(page, input, step));
  const active = await session.activePage();
  return { tabId: session.tabs.idOf(active), url: active.url(), ...(result === undefined ? {} : { result }) };
}

/** Checks every step before running any, then runs them in order, stopping at the first failure. */
export async function runBatch(session: SessionOperations, steps: Array<{ action: ActionName }>) {
  const inputs = steps.map(({ action, ...body }, i) => {
    const parsed = ACTION_BODIES[action].safeParse(body);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    throw validationError(['steps', i, ...issue.path].join('.'), issue.message);
  });
  const results: Array<{ action: string; result?: Json }> = [];
  let last: ActionOutcome | undefined;
  for (const [i, { action }] of steps.entries()) {
    last = await runAction(session, action, inputs[i] as never, `steps.${i}.${action}`);
    results.push(last.result === undefined ? { action } : { action, result: last.result });
  }
  if (!last) throw new AppError('VALIDATION_ERROR', 'steps: at least one step');
  return { tabId: last.tabId, url: last.url, steps: results };
}
