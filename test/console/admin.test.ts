/**
 * The admin page of the web console (issue 25), in real Chromium: an ADMIN_EMAILS admin sees the "Admin" link, the
 * platform figures as tiles and the users table, and suspends and reactivates a user (the API sees it: the user's
 * key answers 403 ACCOUNT_SUSPENDED, then works again); a normal user has no Admin link and /admin says it is for
 * admins (403). axe-core and the accepted screenshots on each page; no request leaves the machine.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { TestUser } from '../helpers/app.ts';
import {
  assertAccessible,
  assertLooksLike,
  type ConsoleContext,
  offMachine,
  settled,
  startConsole,
} from '../helpers/console.ts';

const ADMIN = 'admin@console.test';
let con: ConsoleContext;
let admin: TestUser;
let bob: TestUser;
let carol: TestUser;
before(async () => {
  con = await startConsole({ workers: false, env: { ADMIN_EMAILS: ADMIN } });
  // In order and with fixed addresses, so the users table (newest first) and the figures are the same on every run.
  admin = await con.ctx.signup({ email: ADMIN, name: 'Ada Admin' });
  bob = await con.ctx.signup({ email: 'bob@console.test', name: 'Bob Normal' });
  carol = await con.ctx.signup({ email: 'carol@console.test', name: 'Carol Normal' });
});
after(async () => {
  await con?.close();
  assert.equal(con?.browser.isConnected(), false, "the console's Chromium is closed");
});

test('an admin sees the Admin link, the figures and the users, and suspends and reactivates a user', async () => {
  const { page, requests, errors } = await con.page(admin);
  await page.goto('/projects');
  const nav = page.getByRole('navigation', { name: 'Main' });
  await nav.getByRole('link', { name: 'Admin', exact: true }).click();
  await page.waitForURL('**/admin');
  await page.getByRole('heading', { level: 1, name: 'Admin' }).waitFor();
  const accounts = page.getByRole('list', { name: 'Accounts' });
  const tile = (name: string) => accounts.getByRole('listitem').filter({ hasText: name }).locator('.value');
  await tile('Users').first().waitFor();
  assert.equal(await tile('Users').first().textContent(), '3');
  assert.equal(await tile('Admins').textContent(), '1');
  assert.equal(await tile('Suspended').textContent(), '0');
  const table = page.getByRole('table', { name: 'Users, newest first' });
  for (const name of ['Ada Admin', 'Bob Normal', 'Carol Normal'])
    await table.getByRole('cell', { name, exact: true }).waitFor();
  await settled(page);
  await assertAccessible(page, 'admin');
  await assertLooksLike(page, 'admin');
  // No suspend button for oneself (the API refuses it: 409).
  assert.equal(await page.getByRole('button', { name: `Suspend ${admin.email}` }).count(), 0);

  // Suspend Bob: his key stops working at once; reactivate him: it works again.
  await page.getByRole('button', { name: `Suspend ${bob.email}` }).click();
  const reactivate = page.getByRole('button', { name: `Reactivate ${bob.email}` });
  await reactivate.waitFor();
  let res = await con.ctx.call(bob, 'GET', '/api/projects');
  assert.equal(res.statusCode, 403);
  assert.equal(res.json().error.code, 'ACCOUNT_SUSPENDED');
  const listed = await con.ctx.call(admin, 'GET', '/api/admin/users?status=suspended');
  assert.deepEqual(
    listed.json().data.users.map((u: { email: string }) => u.email),
    [bob.email],
  );
  // The status filter shows him alone.
  await page.getByRole('combobox', { name: 'Status' }).selectOption('suspended');
  await page.waitForURL('**/admin?status=suspended');
  await table.getByRole('cell', { name: 'Carol Normal' }).waitFor({ state: 'detached' });
  assert.equal(await table.getByRole('row').count(), 2, 'the header and Bob');
  await reactivate.click();
  await page.getByText('No user matches.').waitFor();
  res = await con.ctx.call(bob, 'GET', '/api/projects');
  assert.equal(res.statusCode, 200);

  // Search by name.
  await page.getByRole('combobox', { name: 'Status' }).selectOption('');
  await page.getByRole('searchbox', { name: 'Search users' }).fill('carol');
  await page.getByRole('searchbox', { name: 'Search users' }).press('Enter');
  await page.waitForURL('**/admin?q=carol');
  await table.getByRole('cell', { name: 'Bob Normal' }).waitFor({ state: 'detached' });
  await table.getByRole('cell', { name: 'Carol Normal', exact: true }).waitFor();

  assert.deepEqual(offMachine(requests), []);
  assert.deepEqual(errors, []);
});

test('a normal user has no Admin link, and /admin is refused (403) and says it is for admins', async () => {
  const { page, requests, errors } = await con.page(carol);
  await page.goto('/projects');
  await settled(page);
  const nav = page.getByRole('navigation', { name: 'Main' });
  await nav.getByRole('link', { name: 'Projects', exact: true }).waitFor();
  assert.equal(await nav.getByRole('link', { name: 'Admin', exact: true }).count(), 0);
  const api = await con.ctx.call(carol, 'GET', '/api/admin/stats');
  assert.equal(api.statusCode, 403);

  await page.goto('/admin');
  await page.getByRole('heading', { level: 1, name: 'Admins only' }).waitFor();
  await page.getByRole('alert').getByText('FORBIDDEN').waitFor();
  assert.equal(await page.getByRole('table').count(), 0, 'no users shown');
  await settled(page);
  await assertAccessible(page, 'admin (refused)');
  await assertLooksLike(page, 'admin-refused');
  assert.deepEqual(offMachine(requests), []);
  assert.deepEqual(errors, []);
});
