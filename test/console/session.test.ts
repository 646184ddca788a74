import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import {
  assertAccessible,
  assertLooksLike,
  type ConsoleContext,
  offMachine,
  settled,
  startConsole,
} from '../helpers/console.ts';

let con: ConsoleContext;
before(async () => {
  con = await startConsole({ workers: false });
});
after(async () => con?.close());

test('signed out, / leads to sign-in: Email, Password, Sign in in Tab order; Enter submits; the email shows', async () => {
  const user = await con.ctx.signup();
  const { page, requests, errors } = await con.page();
  await page.goto('/');
  await page.waitForURL('**/sign-in');
  await settled(page);
  await assertAccessible(page, 'sign-in');
  await assertLooksLike(page, 'sign-in');

  const email = page.getByRole('textbox', { name: 'Email' });
  const password = page.getByLabel('Password');
  await email.focus();
  await page.keyboard.type(user.email);
  await page.keyboard.press('Tab');
  assert.equal(await password.evaluate((el) => el === el.ownerDocument.activeElement), true);
  await page.keyboard.type('correct horse battery');
  await page.keyboard.press('Tab');
  assert.equal(
    await page.getByRole('button', { name: 'Sign in' }).evaluate((el) => el === el.ownerDocument.activeElement),
    true,
  );
  await password.press('Enter');

  await page.waitForURL('**/projects');
  await page.getByText(user.email).waitFor();
  const nav = page.getByRole('navigation', { name: 'Main' });
  for (const name of ['Projects', 'Leads', 'Outreach', 'Analytics', 'Credits', 'API keys']) {
    await nav.getByRole('link', { name, exact: true }).waitFor();
  }
  assert.equal(await page.getByRole('navigation', { name: 'Main' }).count(), 1);

  // The cookie is HttpOnly and Lax; the page's script cannot read it.
  const [cookie] = await page.context().cookies();
  assert.equal(cookie?.name, 'quarry_session');
  assert.equal(cookie?.httpOnly, true);
  assert.equal(cookie?.sameSite, 'Lax');
  assert.equal(await page.evaluate('document.cookie'), '');

  // Sign out ends the session on the server: the old cookie no longer works.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL('**/sign-in');
  const replay = await fetch(`${con.base}/api/console/session`, {
    headers: { cookie: `quarry_session=${cookie!.value}` },
  });
  assert.equal(replay.status, 401);
  assert.deepEqual(offMachine(requests), []);
  assert.deepEqual(errors, []);
});

test('sign-up names the terms and the privacy policy; after it the user is signed in', async () => {
  const { page } = await con.page();
  await page.goto('/sign-in');
  await page.getByRole('link', { name: 'Sign up' }).click();
  await page.waitForURL('**/sign-up');
  await settled(page);
  await assertAccessible(page, 'sign-up');
  const email = `console-${Date.now()}@example.com`;
  await page.getByRole('textbox', { name: 'Email' }).fill(email);
  await page.getByLabel('Password').fill('long enough password');
  // Without the consents the service refuses, naming the field.
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.getByRole('alert').getByText('termsAccepted').first().waitFor();
  await page.getByRole('checkbox', { name: /terms/i }).check();
  await page.getByRole('checkbox', { name: /privacy policy/i }).check();
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.waitForURL('**/projects');
  await page.getByText(email).waitFor();
});

test('a cookie-authenticated unsafe request needs the CSRF token, and another origin is refused even with it', async () => {
  const user = await con.ctx.signup();
  const { page } = await con.page(user);
  await page.goto('/settings/api-keys');
  await settled(page);
  const [cookie] = await page.context().cookies();
  const session = `quarry_session=${cookie!.value}`;
  const who = (await (await fetch(`${con.base}/api/console/session`, { headers: { cookie: session } })).json()) as any;
  const csrf = who.data.csrfToken as string;
  assert.equal(who.data.user.email, user.email);

  const body = JSON.stringify({ name: 'x' });
  const json = { 'content-type': 'application/json', cookie: session };
  // No token: refused (a form on another site cannot add headers).
  let res = await fetch(`${con.base}/api/projects`, { method: 'POST', headers: json, body });
  assert.equal(res.status, 403);
  assert.equal(((await res.json()) as any).error.details[0].field, 'x-csrf-token');
  // Another port of the same host is the same site but another origin: refused even with a token.
  res = await fetch(`${con.base}/api/projects`, {
    method: 'POST',
    headers: { ...json, 'x-csrf-token': csrf, origin: 'http://127.0.0.1:1' },
    body,
  });
  assert.equal(res.status, 403);
  // The same origin with the token: created. Nothing was created by the refused ones.
  res = await fetch(`${con.base}/api/projects`, {
    method: 'POST',
    headers: { ...json, 'x-csrf-token': csrf, origin: con.base },
    body,
  });
  assert.equal(res.status, 201);
  const list = await con.ctx.call(user, 'GET', '/api/projects');
  assert.equal(list.json().data.projects.length, 1);

  // A page served on another port of the same host: the same site (the browser sends the Lax cookie), another
  // origin. Its form post is refused for its origin, before any token is looked at (loads without an Origin, such
  // as images, are refused by their Sec-Fetch-Site: test/console/session-api.test.ts).
  const other = http.createServer((_req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(
      `<form method="POST" action="${con.base}/api/projects" enctype="text/plain">` +
        `<input name='{"name":"evil","x":"' value='"}'></form>`,
    );
  });
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  try {
    const evil = await con.page();
    await evil.context.addCookies([{ name: 'quarry_session', value: cookie!.value, url: con.base }]);
    await evil.page.goto(`http://127.0.0.1:${(other.address() as AddressInfo).port}/`);
    const [answer] = await Promise.all([
      evil.page.waitForResponse((r) => r.url().endsWith('/api/projects') && r.request().method() === 'POST'),
      evil.page.evaluate('document.forms[0].submit()'),
    ]);
    assert.equal(answer.status(), 403);
    assert.equal(((await answer.json()) as any).error.details[0].field, 'origin');
  } finally {
    other.close();
  }
  assert.equal((await con.ctx.call(user, 'GET', '/api/projects')).json().data.projects.length, 1);
});

test('API keys page: Create key with an optional Name shows the key once, and it works as a bearer key', async () => {
  const user = await con.ctx.signup();
  const { page, errors } = await con.page(user);
  await page.goto('/settings/api-keys');
  await settled(page);
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.getByRole('textbox', { name: 'Name' }).fill('CI script');
  await page.getByRole('button', { name: 'Create', exact: true }).click();
  const key = await page.getByRole('status').locator('code').textContent();
  assert.match(key!, /^qk_live_/);
  const me = await fetch(`${con.base}/api/projects`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(me.status, 200);
  await page.getByRole('button', { name: 'Done' }).click();
  await page.getByRole('cell', { name: 'CI script', exact: true }).waitFor();
  assert.equal(await page.getByText(key!).count(), 0);
  await assertAccessible(page, 'api-keys');
  await assertLooksLike(page, 'api-keys');
  assert.deepEqual(errors, []);
});
