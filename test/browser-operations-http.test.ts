/**
 * The operations through the API on real sessions (the sessions side's resolver): a navigate, page output and tabs
 * through a session the service started, X-Client-Ref and other users (404 on every family), scopes (GET reads,
 * the rest writes), a session that ended (400 INVALID_STATE), and a row left LIVE without its browser.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startBrowserPages } from './fixtures/browser-pages.ts';
import type { TestUser } from './helpers/app.ts';
import { type BrowserTestContext, createBrowserContext } from './helpers/browser.ts';

let ctx: BrowserTestContext;
let site: Awaited<ReturnType<typeof startBrowserPages>>;
let alice: TestUser;
let bob: TestUser;
let session: { id: string };
let tenant: { id: string };
const S = '/api/browser/sessions';
const A = { 'x-client-ref': 'tenant-a' };

before(async () => {
  site = await startBrowserPages();
  ctx = await createBrowserContext({ env: { ALLOW_PRIVATE_NETWORK: 'true' } });
  [alice, bob] = await Promise.all([ctx.signup(), ctx.signup()]);
  const [plain, ref] = await Promise.all([ctx.api(alice, 'POST', S, {}), ctx.api(alice, 'POST', S, {}, A)]);
  assert.equal(plain.statusCode, 201, JSON.stringify(plain.json()));
  session = plain.json().data.session;
  tenant = ref.json().data.session;
});
after(async () => {
  await ctx?.close();
  await site?.close();
});

describe('operations on a session the service runs', () => {
  it('navigate, then the page as text, a screenshot, and the tab it runs in', async () => {
    const nav = await ctx.api(alice, 'POST', `${S}/${session.id}/actions/navigate`, { url: `${site.url}/list` });
    assert.equal(nav.statusCode, 200, JSON.stringify(nav.json()));
    const text = await ctx.api(alice, 'GET', `${S}/${session.id}/page/content?format=text`);
    assert.equal(text.statusCode, 200);
    assert.match(text.json().data.content, /Ada Lovelace/);
    const shot = await ctx.app.inject({
      method: 'GET',
      url: `${S}/${session.id}/page/screenshot`,
      headers: { ...alice.headers, host: ctx.hostPort },
    });
    assert.equal(shot.statusCode, 200);
    assert.deepEqual([...shot.rawPayload.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], 'a PNG');
    const tabs = (await ctx.api(alice, 'GET', `${S}/${session.id}/tabs`)).json().data.tabs;
    assert.ok(tabs.some((t: { url: string; active: boolean }) => t.url.endsWith('/list') && t.active));
  });

  it('a selector that never appears is 422 ACTION_FAILED, not a 500', async () => {
    const res = await ctx.api(alice, 'POST', `${S}/${session.id}/actions/click`, { selector: '#nope', timeoutMs: 300 });
    assert.equal(res.statusCode, 422);
    assert.equal(res.json().error.code, 'ACTION_FAILED');
  });

  it('X-Client-Ref and other users: 404 on every family of operations', async () => {
    const families = ['tabs', 'cookies', 'logs', 'page/accessibility'];
    for (const path of families) {
      assert.equal((await ctx.api(alice, 'GET', `${S}/${session.id}/${path}`, undefined, A)).statusCode, 404, path);
      assert.equal((await ctx.api(bob, 'GET', `${S}/${session.id}/${path}`)).statusCode, 404, path);
      assert.equal((await ctx.api(alice, 'GET', `${S}/${tenant.id}/${path}`, undefined, A)).statusCode, 200, path);
      assert.equal(
        (await ctx.api(alice, 'GET', `${S}/${tenant.id}/${path}`, undefined, { 'x-client-ref': 'tenant-b' }))
          .statusCode,
        404,
        path,
      );
    }
    const act = await ctx.api(bob, 'POST', `${S}/${session.id}/actions/evaluate`, { expression: '1 + 1' });
    assert.equal(act.statusCode, 404);
  });

  it('browser:read reads, an action needs browser:write', async () => {
    const key = await ctx.api(alice, 'POST', '/api/api-keys', { name: 'reader', scopes: ['browser:read'] });
    const reader = { ...alice, headers: { authorization: `Bearer ${key.json().data.apiKey.key}` } };
    assert.equal((await ctx.api(reader, 'GET', `${S}/${session.id}/tabs`)).statusCode, 200);
    const res = await ctx.api(reader, 'POST', `${S}/${session.id}/actions/evaluate`, { expression: '1 + 1' });
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().error.code, 'INSUFFICIENT_SCOPE');
  });

  it('after release the operations answer 400 INVALID_STATE', async () => {
    assert.equal((await ctx.api(alice, 'DELETE', `${S}/${tenant.id}`, undefined, A)).statusCode, 200);
    const res = await ctx.api(alice, 'GET', `${S}/${tenant.id}/tabs`, undefined, A);
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().error.code, 'INVALID_STATE');
  });

  it('a row that says LIVE with no browser on its host ends FAILED instead of answering 503 for ever', async () => {
    // What a lost race (Chromium dying as its start is recorded, an end whose write failed) would leave behind.
    await ctx.deps.database.query(`UPDATE browser_sessions SET status = 'LIVE', ended_at = NULL WHERE id = $1`, [
      tenant.id,
    ]);
    const res = await ctx.api(alice, 'GET', `${S}/${tenant.id}/tabs`, undefined, A);
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().error.code, 'INVALID_STATE');
    const released = await ctx.api(alice, 'DELETE', `${S}/${tenant.id}`, undefined, A);
    assert.equal(released.statusCode, 200);
    assert.notEqual(released.json().data.session.status, 'LIVE');
  });
});
