/**
 * The web console in real Chromium (docs/console.md): the service listening on loopback, a Playwright browser
 * (Debian's Chromium), signed-in pages, axe-core, screenshots compared with the accepted ones, and a record of
 * every request a page makes (none may leave the machine).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import pixelmatch from 'pixelmatch';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { createTestContext, type TestContext, type TestContextOptions, type TestUser } from './app.ts';
import { CHROMIUM } from './cdp-chromium.ts';
import { assertKeyboardReachable } from './keyboard.ts';

export interface ConsoleContext {
  ctx: TestContext;
  /** http://127.0.0.1:<port> */
  base: string;
  browser: Browser;
  /** A fresh browser context and page, signed in as `user` when given (cookie minted by the sign-in route). */
  page(user?: TestUser): Promise<ConsolePage>;
  close(): Promise<void>;
}

export interface ConsolePage {
  page: Page;
  context: BrowserContext;
  /** Every URL the page requested so far. */
  requests: string[];
  /** Console errors and uncaught exceptions of the page. */
  errors: string[];
}

let signIns = 0;

export async function startConsole(options: TestContextOptions = {}): Promise<ConsoleContext> {
  const ctx = await createTestContext(options);
  await ctx.app.listen({ host: '127.0.0.1', port: 0 });
  const address = ctx.app.server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  const base = `http://127.0.0.1:${address.port}`;
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
  const contexts: BrowserContext[] = [];
  return {
    ctx,
    base,
    browser,
    async page(user) {
      const context = await browser.newContext({
        baseURL: base,
        viewport: { width: 1280, height: 800 },
        deviceScaleFactor: 1,
        locale: 'en-US',
        timezoneId: 'UTC',
        colorScheme: 'light',
        reducedMotion: 'reduce',
      });
      contexts.push(context);
      if (user)
        await context.addCookies([{ name: 'quarry_session', value: await sessionKeyFor(ctx, user), url: base }]);
      const page = await context.newPage();
      const requests: string[] = [];
      const errors: string[] = [];
      page.on('request', (r) => requests.push(r.url()));
      page.on('pageerror', (e) => errors.push(String(e)));
      page.on('console', (m) => {
        // Refused requests the page handles itself (a 403 probe, a 404 it shows) are not script errors.
        if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) errors.push(m.text());
      });
      return { page, context, requests, errors };
    },
    async close() {
      for (const context of contexts) await context.close().catch(() => {});
      await browser.close().catch(() => {});
      await ctx.close();
    },
  };
}

/** Signs `user` in through the console's own route (its password is the test default) and answers the cookie. */
export async function sessionKeyFor(
  ctx: TestContext,
  user: TestUser,
  password = 'correct horse battery',
): Promise<string> {
  signIns++;
  const res = await ctx.inject({
    method: 'POST',
    url: '/api/console/sign-in',
    // Distinct source addresses so the per-IP sign-in limit does not trip a file that signs many users in.
    remoteAddress: `127.2.${Math.floor(signIns / 250) % 250}.${(signIns % 250) + 1}`,
    payload: { email: user.email, password },
  });
  if (res.statusCode !== 200) throw new Error(`console sign-in: ${res.statusCode} ${res.body}`);
  const cookie = String(res.headers['set-cookie']);
  const match = /quarry_session=([^;]+)/.exec(cookie);
  if (!match) throw new Error(`no session cookie in ${cookie}`);
  return match[1]!;
}

/** Requests that left the machine: anything but loopback, data: and blob: URLs. */
export function offMachine(requests: string[]): string[] {
  return requests.filter((url) => {
    if (url.startsWith('data:') || url.startsWith('blob:')) return false;
    const host = new URL(url).hostname;
    return host !== '127.0.0.1' && host !== 'localhost' && host !== '[::1]';
  });
}

const require = createRequire(import.meta.url);
const AXE_SOURCE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/**
 * axe-core on the page as it is now: no serious or critical violation (WCAG 2.x A and AA rules, best practices); and
 * Tab from the top reaches every control (test/helpers/keyboard.ts).
 */
export async function assertAccessible(page: Page, name: string): Promise<void> {
  // Evaluated over the DevTools protocol, so the page's CSP (script-src 'self') does not apply.
  await page.evaluate(AXE_SOURCE);
  const violations = (await page.evaluate(
    "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)",
  )) as AxeViolation[];
  const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(
    serious.map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`),
    [],
    `axe-core on ${name}`,
  );
  await assertKeyboardReachable(page, name);
}

const SCREENSHOTS = path.join(import.meta.dirname, '..', 'console', 'screenshots');
const OUT = path.join('.tmp', 'screenshots');
/** Share of pixels that may differ (anti-aliasing aside) before a page counts as changed. */
const TOLERANCE = 0.005;

/**
 * The viewport compared with the accepted screenshot `name`.png (volatile values — ids, dates, emails, keys — are
 * masked: elements marked `data-volatile`). A missing one is accepted as the first (a failure when CI is set); QUARRY_UPDATE_SCREENSHOTS=1
 * accepts the new look. A difference writes the actual and a diff image to .tmp/screenshots/.
 */
export async function assertLooksLike(page: Page, name: string): Promise<void> {
  await page.evaluate('document.fonts.ready.then(() => true)');
  const actual = await page.screenshot({
    mask: [page.locator('[data-volatile]')],
    maskColor: '#c0c4cc',
    animations: 'disabled',
    caret: 'hide',
  });
  const file = path.join(SCREENSHOTS, `${name}.png`);
  // In CI a missing screenshot is a failure: a renamed or new page must have its accepted look committed.
  if (!fs.existsSync(file) && process.env.CI && process.env.QUARRY_UPDATE_SCREENSHOTS !== '1') {
    assert.fail(`${name}: no accepted screenshot ${file}; run the test once locally and commit it`);
  }
  if (process.env.QUARRY_UPDATE_SCREENSHOTS === '1' || !fs.existsSync(file)) {
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    fs.writeFileSync(file, actual);
    return;
  }
  const expected = PNG.sync.read(fs.readFileSync(file));
  const got = PNG.sync.read(actual);
  fs.mkdirSync(OUT, { recursive: true });
  if (expected.width !== got.width || expected.height !== got.height) {
    fs.writeFileSync(path.join(OUT, `${name}.actual.png`), actual);
    assert.fail(`${name}: ${got.width}×${got.height}, accepted ${expected.width}×${expected.height}`);
  }
  const diff = new PNG({ width: got.width, height: got.height });
  const changed = pixelmatch(expected.data, got.data, diff.data, got.width, got.height, { threshold: 0.1 });
  const share = changed / (got.width * got.height);
  if (share > TOLERANCE) {
    fs.writeFileSync(path.join(OUT, `${name}.actual.png`), actual);
    fs.writeFileSync(path.join(OUT, `${name}.diff.png`), PNG.sync.write(diff));
    assert.fail(
      `${name} differs from the accepted screenshot in ${(share * 100).toFixed(2)} % of pixels (tolerance ` +
        `${TOLERANCE * 100} %): see ${OUT}/${name}.diff.png; QUARRY_UPDATE_SCREENSHOTS=1 accepts the new look`,
    );
  }
}

/** Waits until the page shows no "Loading…" placeholder. */
export async function settled(page: Page): Promise<void> {
  await page.waitForLoadState('networkidle');
  await page
    .locator('.loading')
    .first()
    .waitFor({ state: 'detached', timeout: 10_000 })
    .catch(() => {});
}
