/**
 * `/docs` in real Chromium: the page renders Quarry's reference from the service alone (no request leaves the
 * machine: self-hosted installs may be offline, and a reader's visit is nobody else's business) and shows none
 * of the reference vendor's own buttons.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { type Browser, chromium } from 'playwright-core';
import { createTestContext, type TestContext } from './helpers/app.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const skip = fs.existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM}`;

let ctx: TestContext;
let browser: Browser;
let base: string;
before(async () => {
  ctx = await createTestContext();
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  if (skip) return;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});
after(async () => {
  await browser?.close();
  await ctx?.close();
});

const isLoopback = (url: string) => {
  const { protocol, hostname } = new URL(url);
  if (protocol === 'data:' || protocol === 'blob:' || protocol === 'about:') return true;
  return hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]';
};

test('/docs loads everything from the service and shows no vendor buttons', { skip, timeout: 120_000 }, async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  // Every request the page makes, answered or not (a blocked or failed off-machine request counts too).
  const requests: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  // Nothing may leave the machine even if the page tries: off-machine requests are recorded, then aborted.
  await page.route(
    (url) => !isLoopback(url.toString()),
    (route) => route.abort(),
  );

  await page.goto(`${base}/docs`, { waitUntil: 'networkidle' });
  // The reference is rendered from Quarry's own document: its title and a section of it.
  await page.getByText('Quarry API').first().waitFor({ timeout: 30_000 });
  await page.getByText('Authentication').first().waitFor();
  await page.waitForLoadState('networkidle');
  const shot = path.join(os.tmpdir(), 'quarry-docs-page.png');
  await page.screenshot({ path: shot });

  assert.ok(
    requests.some((url) => url.endsWith('/api/openapi.json')),
    `the page reads /api/openapi.json: ${requests}`,
  );
  assert.deepEqual(
    requests.filter((url) => !isLoopback(url)),
    [],
    'no request leaves the machine',
  );
  // biome-ignore lint/performance/useDomNodeTextContent: the visible text, what a reader sees
  const text = await page.locator('body').innerText();
  const vendorButtons = ['Ask AI', 'Generate MCP', 'Deploy', 'Powered by Scalar'].filter((t) => text.includes(t));
  assert.deepEqual(vendorButtons, [], `the page shows the vendor's buttons (screenshot: ${shot})`);
  await page.close();
});
