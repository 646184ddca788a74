/**
 * The sessions REST endpoints: create, list (filters, pages), get, patch, release, release-all; X-Client-Ref
 * (with/without the header × own/other/no ref), another user's sessions, scopes, bad input.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { browserSessionsOf } from '../src/modules/browser/index.ts';
import type { TestUser } from './helpers/app.ts';
import { type BrowserTestContext, createBrowserContext, upgradeStatus } from './helpers/browser.ts';

let ctx: BrowserTestContext;
let alice: TestUser;
let bob: TestUser;
const S = '/api/browser/sessions';
const A = { 'x-client-ref': 'tenant-a' };
const B = { 'x-client-ref': 'tenant-b' };

before(async () => {
  ctx = await createBrowserContext({
    env: { BROWSER_MAX_SESSIONS_PER_USER: '10', BROWSER_MAX_SESSIONS_PER_CLIENT_REF: '3' },
  });
  [alice, bob] = await Promise.all([ctx.signup(), ctx.signup()]);
});
after(async () => {
  await ctx.close();
});

const created = async (user: TestUser, body: object, headers: Record<string, string> = {}) => {
  const res = await ctx.api(user, 'POST', S, body, headers);
  assert.equal(res.statusCode, 201, JSON.stringify(res.json()));
  return res.json().data.session;
};
const status = async (user: TestUser, method: 'GET' | 'PATCH' | 'DELETE', url: string, h = {}, body?: object) =>
  (await ctx.api(user, method, url, body, h)).statusCode;

describe('sessions', () => {
  let plain: any;
  let a: any;
  let b: any;

  before(async () => {
    [plain, a, b] = await Promise.all([
      created(alice, { metadata: { team: 'red' }, viewport: { width: 800, height: 600 } }),
      created(alice, {}, A),
      created(alice, { clientRef: 'tenant-b' }, B),
    ]);
  });

  it('creates with defaults and the request values', async () => {
    assert.equal(plain.status, 'LIVE');
    assert.equal(plain.clientRef, null);
    assert.deepEqual(plain.viewport, { width: 800, height: 600 });
    assert.deepEqual(plain.metadata, { team: 'red' });
    assert.equal(plain.keepAlive, false);
    assert.equal(plain.timeoutMs, ctx.config.BROWSER_SESSION_TIMEOUT_MS);
    const expires = Date.parse(plain.expiresAt) - Date.parse(plain.createdAt);
    assert.equal(expires, ctx.config.BROWSER_SESSION_TIMEOUT_MS);
    assert.equal(a.clientRef, 'tenant-a', 'the header gives the ref');
    assert.equal(b.clientRef, 'tenant-b');
  });

  it('gives pages the whole viewport (no browser toolbar inside it), in the first tab and a new one', async () => {
    const inner = async () =>
      (
        await ctx.api(alice, 'POST', `/api/browser/sessions/${plain.id}/actions/evaluate`, {
          expression: '[innerWidth, innerHeight]',
        })
      ).json().data.result;
    assert.deepEqual(await inner(), [800, 600]);
    assert.equal((await ctx.api(alice, 'POST', `/api/browser/sessions/${plain.id}/tabs`, {})).statusCode, 201);
    assert.deepEqual(await inner(), [800, 600]);
  });

  it('X-Client-Ref: with the header only that ref exists; without it, everything of the key', async () => {
    for (const s of [plain, a, b]) assert.equal(await status(alice, 'GET', `${S}/${s.id}`), 200);
    assert.equal(await status(alice, 'GET', `${S}/${a.id}`, A), 200);
    assert.equal(await status(alice, 'GET', `${S}/${plain.id}`, A), 404, 'no ref: not there for a ref');
    assert.equal(await status(alice, 'GET', `${S}/${b.id}`, A), 404, 'other ref');
    assert.equal(await status(alice, 'PATCH', `${S}/${b.id}`, A, { keepAlive: true }), 404);
    assert.equal(await status(alice, 'DELETE', `${S}/${b.id}`, A), 404);
    const listed = (await ctx.api(alice, 'GET', S, undefined, A)).json().data.sessions.map((s: any) => s.id);
    assert.deepEqual(listed, [a.id]);
    const all = (await ctx.api(alice, 'GET', S)).json().data.sessions.map((s: any) => s.id);
    assert.deepEqual(new Set(all), new Set([plain.id, a.id, b.id]));
    // A cdpUrl got under one ref opens that session only; another ref never gets one for it.
    const viaA = (await ctx.api(alice, 'GET', `${S}/${a.id}`, A)).json().data.session.cdpUrl;
    assert.equal(await upgradeStatus(viaA), 101);
    const mismatch = await ctx.api(alice, 'POST', S, { clientRef: 'tenant-b' }, A);
    assert.equal(mismatch.statusCode, 400);
    assert.equal(mismatch.json().error.code, 'CLIENT_REF_MISMATCH');
    assert.equal(mismatch.json().error.details[0].field, 'clientRef');
    const badHeader = await ctx.api(alice, 'GET', S, undefined, { 'x-client-ref': 'a b' });
    assert.equal(badHeader.statusCode, 400);
    assert.equal(badHeader.json().error.details[0].field, 'X-Client-Ref');
  });

  it("another user's sessions are 404 everywhere", async () => {
    for (const s of [plain, a]) {
      assert.equal(await status(bob, 'GET', `${S}/${s.id}`), 404);
      assert.equal(await status(bob, 'PATCH', `${S}/${s.id}`, {}, { keepAlive: true }), 404);
      assert.equal(await status(bob, 'DELETE', `${S}/${s.id}`), 404);
    }
    assert.deepEqual((await ctx.api(bob, 'GET', S)).json().data.sessions, []);
    assert.deepEqual((await ctx.api(bob, 'POST', `${S}/release-all`)).json().data, { released: 0, elsewhere: 0 });
    assert.equal(await status(alice, 'GET', `${S}/not-a-uuid`), 404);
  });

  it('lists by status, clientRef and metadata, page by page', async () => {
    const q = async (query: string) =>
      (await ctx.api(alice, 'GET', `${S}?${query}`)).json().data.sessions.map((s: any) => s.id);
    assert.deepEqual(await q('metadata=team=red'), [plain.id]);
    assert.deepEqual(await q('metadata=team=blue'), []);
    assert.deepEqual(await q('clientRef=tenant-b'), [b.id]);
    assert.equal((await q('status=LIVE')).length, 3);
    const first = (await ctx.api(alice, 'GET', `${S}?limit=2`)).json().data;
    assert.equal(first.sessions.length, 2);
    const second = (await ctx.api(alice, 'GET', `${S}?limit=2&cursor=${first.nextCursor}`)).json().data;
    assert.equal(second.sessions.length, 1);
    assert.equal(second.nextCursor, null);
    const bad = await ctx.api(alice, 'GET', `${S}?status=ASLEEP`);
    assert.equal(bad.statusCode, 400);
  });

  it('patches the deadline, keepAlive and metadata', async () => {
    const before = Date.parse(plain.expiresAt);
    const res = await ctx.api(alice, 'PATCH', `${S}/${plain.id}`, {
      extendMs: 60_000,
      keepAlive: true,
      metadata: { team: 'blue' },
    });
    assert.equal(res.statusCode, 200);
    const s = res.json().data.session;
    assert.equal(Date.parse(s.expiresAt), before + 60_000);
    assert.equal(s.keepAlive, true);
    assert.deepEqual(s.metadata, { team: 'blue' });
    const reset = (await ctx.api(alice, 'PATCH', `${S}/${plain.id}`, { timeoutMs: 120_000 })).json().data.session;
    assert.equal(Date.parse(reset.expiresAt), Date.parse(plain.createdAt) + 120_000);
    const bad = await ctx.api(alice, 'PATCH', `${S}/${plain.id}`, { timeoutMs: 'long' });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().error.details[0].field, 'timeoutMs');
  });

  it('a session held by another host: readable, but 503 for what needs its Chromium', async () => {
    const { sql } = await import('drizzle-orm');
    const moved = sql`UPDATE browser_sessions SET host_id = 'elsewhere' WHERE id = ${b.id}`;
    await ctx.deps.db.execute(moved);
    const view = (await ctx.api(alice, 'GET', `${S}/${b.id}`)).json().data.session;
    assert.equal(view.status, 'LIVE');
    assert.equal(view.connectedClients, null);
    const res = await ctx.api(alice, 'DELETE', `${S}/${b.id}`);
    assert.equal(res.statusCode, 503);
    assert.equal(res.json().error.code, 'SERVICE_UNAVAILABLE');
    assert.match(res.json().error.message, /elsewhere/);
    assert.equal(await upgradeStatus(view.cdpUrl), 503);
    const back = sql`UPDATE browser_sessions SET host_id = ${browserSessionsOf(ctx.deps).hostId} WHERE id = ${b.id}`;
    await ctx.deps.db.execute(back);
  });

  it('release-all with a ref releases that ref only; DELETE keeps the session as RELEASED', async () => {
    const res = await ctx.api(alice, 'POST', `${S}/release-all`, undefined, A);
    assert.deepEqual(res.json().data, { released: 1, elsewhere: 0 });
    const gone = (await ctx.api(alice, 'GET', `${S}/${a.id}`)).json().data.session;
    assert.equal(gone.status, 'RELEASED');
    assert.equal(gone.cdpUrl, null);
    assert.equal((await ctx.api(alice, 'GET', `${S}/${b.id}`)).json().data.session.status, 'LIVE');

    const del = await ctx.api(alice, 'DELETE', `${S}/${plain.id}`);
    assert.equal(del.statusCode, 200);
    const released = del.json().data.session;
    assert.equal(released.status, 'RELEASED');
    assert.equal(released.endReason, 'released');
    assert.ok(released.endedAt);
    assert.equal((await ctx.api(alice, 'DELETE', `${S}/${plain.id}`)).json().data.session.status, 'RELEASED');
    const patchEnded = await ctx.api(alice, 'PATCH', `${S}/${plain.id}`, { keepAlive: false });
    assert.equal(patchEnded.statusCode, 400);
    assert.equal(patchEnded.json().error.code, 'INVALID_STATE');
    assert.deepEqual((await ctx.api(alice, 'POST', `${S}/release-all`)).json().data, { released: 1, elsewhere: 0 });
  });
});

describe('scopes and bad input', () => {
  it('browser:read reads, browser:write is needed for the rest', async () => {
    const key = await ctx.api(alice, 'POST', '/api/api-keys', { name: 'reader', scopes: ['browser:read'] });
    const reader = { ...alice, headers: { authorization: `Bearer ${key.json().data.apiKey.key}` } };
    assert.equal((await ctx.api(reader, 'GET', S)).statusCode, 200);
    for (const [method, url] of [
      ['POST', S],
      ['POST', `${S}/release-all`],
      ['DELETE', `${S}/00000000-0000-7000-8000-000000000000`],
      ['PATCH', `${S}/00000000-0000-7000-8000-000000000000`],
    ] as const) {
      const res = await ctx.api(reader, method, url, method === 'DELETE' ? undefined : {});
      assert.equal(res.statusCode, 403, `${method} ${url}`);
      assert.equal(res.json().error.code, 'INSUFFICIENT_SCOPE');
    }
    const other = await ctx.api(alice, 'POST', '/api/api-keys', { name: 'leads', scopes: ['leads:read'] });
    const none = { ...alice, headers: { authorization: `Bearer ${other.json().data.apiKey.key}` } };
    assert.equal((await ctx.api(none, 'GET', S)).statusCode, 403);
  });

  it('bad bodies are 400 naming the field, before any Chromium starts', async () => {
    const cases: [object, string][] = [
      [{ viewport: { width: 'wide', height: 600 } }, 'viewport.width'],
      [{ timeoutMs: 10 }, 'timeoutMs'],
      [{ metadata: { 'bad key': 'x' } }, 'metadata'],
      [{ keepAlive: 'yes' }, 'keepAlive'],
      [{ unknown: 1 }, ''],
    ];
    for (const [body, field] of cases) {
      const res = await ctx.api(alice, 'POST', S, body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.equal(res.json().error.code, 'VALIDATION_ERROR');
      if (field) assert.ok(res.json().error.details[0].field.startsWith(field), JSON.stringify(res.json().error));
    }
  });
});
