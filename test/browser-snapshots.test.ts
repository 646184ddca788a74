/**
 * Sleeping sessions (issue 22, "Sleeping snapshots"), on real Chromium and a loopback site with a login: a sleep
 * keeps the login (HttpOnly cookie, localStorage, a tab's sessionStorage), the tabs in order with the active one and
 * the scroll, leaves no Chromium process and frees its room; a wake brings the same session back. autoSleepMs puts an
 * idle session to sleep, and a cdpUrl connection or a REST action wakes it; two wakes at once start one Chromium.
 * Retention, X-Client-Ref and other users, bad input.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import zlib from 'node:zlib';
import { eq, sql } from 'drizzle-orm';
import { chromium } from 'playwright-core';
import { browserSnapshots } from '../src/db/schema/index.ts';
import { browserSessionsOf, sweepSnapshots } from '../src/modules/browser/index.ts';
import { createSecretBox, secretKeyMaterial } from '../src/shared/crypto.ts';
import { startSnapshotSite } from './fixtures/snapshot-site.ts';
import { eventually, type TestUser } from './helpers/app.ts';
import {
  type BrowserTestContext,
  createBrowserContext,
  ourChromiumPids,
  recordedChromium,
  running,
} from './helpers/browser.ts';

const S = '/api/browser/sessions';
const SNAP = '/api/browser/snapshots';
const UNKNOWN = '0190a000-0000-7000-8000-000000000000';

describe('sleeping sessions', () => {
  let ctx: BrowserTestContext;
  let alice: TestUser;
  let bob: TestUser;
  let site: Awaited<ReturnType<typeof startSnapshotSite>>;

  before(async () => {
    site = await startSnapshotSite();
    ctx = await createBrowserContext({ env: { BROWSER_MAX_SESSIONS: '1', BROWSER_MAX_SESSIONS_PER_USER: '5' } });
    [alice, bob] = await Promise.all([ctx.signup(), ctx.signup()]);
  });
  after(async () => {
    await ctx.close();
    await site.close();
  });

  const call = async (
    user: TestUser,
    method: 'GET' | 'POST' | 'DELETE' | 'PATCH' | 'PUT',
    url: string,
    body?: object,
    headers = {},
  ) => {
    const res = await ctx.api(user, method as never, url, body, headers);
    return { status: res.statusCode, body: res.json(), headers: res.headers };
  };
  const expect = async (
    status: number,
    user: TestUser,
    method: 'GET' | 'POST' | 'DELETE' | 'PATCH' | 'PUT',
    url: string,
    body?: object,
    headers = {},
  ) => {
    const res = await call(user, method, url, body, headers);
    assert.equal(res.status, status, JSON.stringify(res.body));
    return res.body.data;
  };
  const create = async (user: TestUser, body: object = {}, headers = {}) =>
    (await expect(201, user, 'POST', S, body, headers)).session;
  const read = async (user: TestUser, id: string) => (await expect(200, user, 'GET', `${S}/${id}`)).session;
  const evaluate = async (user: TestUser, id: string, expression: string) =>
    (await expect(200, user, 'POST', `${S}/${id}/actions/evaluate`, { expression })).result;
  const pidOf = (id: string) => browserSessionsOf(ctx.deps).host!.get(id)!.chromium.pid;
  /** A snapshot's row as stored (the `state` column). */
  const storedState = async (snapshotId: string) => {
    const [row] = await ctx.deps.db
      .select({ state: browserSnapshots.state })
      .from(browserSnapshots)
      .where(eq(browserSnapshots.id, snapshotId));
    return Buffer.from(row!.state);
  };

  it('sleep keeps the login, the tabs and the scroll, leaves no process and frees its room; wake restores it', async () => {
    const s = await create(alice, { viewport: { width: 1024, height: 700 } });
    await expect(200, alice, 'POST', `${S}/${s.id}/actions/navigate`, { url: `${site.url}/login` });
    await expect(200, alice, 'POST', `${S}/${s.id}/actions/navigate`, { url: `${site.url}/account` });
    const first = (await expect(200, alice, 'GET', `${S}/${s.id}/tabs`)).tabs[0];
    const second = await expect(201, alice, 'POST', `${S}/${s.id}/tabs`, { url: `${site.url}/long/2` });
    await expect(200, alice, 'POST', `${S}/${s.id}/actions/scroll`, { y: 1500 });
    await expect(201, alice, 'POST', `${S}/${s.id}/tabs`, { url: `${site.url}/long/3` });
    await expect(200, alice, 'POST', `${S}/${s.id}/tabs/${second.id}/activate`);
    // Storage of an origin no tab shows is kept too.
    const elsewhere = site.url.replace('127.0.0.1', 'localhost');
    await expect(200, alice, 'PUT', `${S}/${s.id}/storage`, { origin: elsewhere, localStorage: { other: 'kept' } });
    const pid = pidOf(s.id);

    const slept = await expect(200, alice, 'POST', `${S}/${s.id}/sleep`);
    assert.equal(slept.session.status, 'SLEEPING');
    assert.equal(slept.session.snapshotId, slept.snapshot.id);
    assert.ok(slept.session.cdpUrl, 'a sleeping session keeps a cdpUrl (connecting wakes it)');
    const { snapshot } = slept;
    assert.deepEqual(
      snapshot.tabs.map((t: { url: string }) => t.url),
      [`${site.url}/account`, `${site.url}/long/2`, `${site.url}/long/3`],
    );
    assert.deepEqual(
      snapshot.tabs.map((t: { active: boolean }) => t.active),
      [false, true, false],
    );
    assert.equal(snapshot.tabs[1].scrollY, 1500);
    assert.equal(snapshot.tabs[0].historyLength, 3, 'about:blank, /login, /account');
    assert.equal(snapshot.cookies, 1);
    assert.deepEqual(snapshot.origins.sort(), [site.url, elsewhere].sort());
    assert.ok(snapshot.sizeBytes > 0 && snapshot.sizeBytes < 10_000, `${snapshot.sizeBytes} bytes`);
    assert.ok(!JSON.stringify(snapshot).includes('s3cret'), 'no cookie value shown');
    // Stored sealed: no cookie or storage value in the row, not even as plain gzip; the service's key opens it.
    const stored = await storedState(snapshot.id);
    for (const plain of ['s3cret', 'tok-42', 'unsent words', 'kept', site.url]) {
      assert.ok(!stored.includes(plain), `the stored state shows ${plain}`);
    }
    assert.throws(() => zlib.gunzipSync(stored));
    const opened = zlib.gunzipSync(createSecretBox(secretKeyMaterial(ctx.deps.config)).openBytes(stored)).toString();
    for (const plain of ['s3cret', 'tok-42', 'unsent words', 'kept']) assert.ok(opened.includes(plain), plain);
    assert.equal(snapshot.sizeBytes, stored.length);
    // No process of it remains, and the host has room again (BROWSER_MAX_SESSIONS=1).
    assert.equal(running(pid), false);
    assert.ok(!ourChromiumPids().includes(pid));
    assert.equal(browserSessionsOf(ctx.deps).host!.liveCount, 0);
    const usage = await expect(200, alice, 'GET', '/api/browser/usage');
    assert.equal(usage.live, 0);
    assert.equal(usage.sleeping, 1);
    assert.deepEqual((await expect(200, alice, 'GET', `${SNAP}/${snapshot.id}`)).snapshot, snapshot);
    assert.equal((await expect(200, alice, 'GET', SNAP)).snapshots[0].id, snapshot.id);

    // The room is taken by another session: the wake is refused as a create would be.
    const other = await create(alice);
    const full = await call(alice, 'POST', `${SNAP}/${snapshot.id}/wake`);
    assert.equal(full.status, 429, JSON.stringify(full.body));
    assert.equal(full.body.error.code, 'CAPACITY_EXCEEDED');
    assert.ok(Number(full.headers['retry-after']) > 0);
    assert.equal((await read(alice, s.id)).status, 'SLEEPING');
    await expect(200, alice, 'DELETE', `${S}/${other.id}`);

    const woken = (await expect(200, alice, 'POST', `${SNAP}/${snapshot.id}/wake`)).session;
    assert.equal(woken.id, s.id);
    assert.equal(woken.status, 'LIVE');
    assert.equal(woken.snapshotId, null);
    assert.match(woken.cdpUrl, new RegExp(`/api/browser/sessions/${s.id}/cdp\\?token=`));
    assert.notEqual(pidOf(s.id), pid);
    assert.equal((await call(alice, 'GET', `${SNAP}/${snapshot.id}`)).status, 404, 'the snapshot is gone once awake');

    const tabs = (await expect(200, alice, 'GET', `${S}/${s.id}/tabs`)).tabs;
    assert.deepEqual(
      tabs.map((t: { url: string; active: boolean }) => [t.url, t.active]),
      [
        [`${site.url}/account`, false],
        [`${site.url}/long/2`, true],
        [`${site.url}/long/3`, false],
      ],
    );
    assert.deepEqual(await evaluate(alice, s.id, '[innerWidth, scrollY]'), [1024, 1500]);
    await expect(200, alice, 'POST', `${S}/${s.id}/tabs/${tabs[0].id}/activate`);
    // The page loaded with the cookie (the server saw it), localStorage and the tab's sessionStorage.
    assert.deepEqual(await evaluate(alice, s.id, "[...document.querySelectorAll('p')].map((p) => p.textContent)"), [
      'cookie: in',
      'token: tok-42',
      'draft: unsent words',
    ]);
    assert.ok(first.id);
    const kept = await expect(200, alice, 'GET', `${S}/${s.id}/storage?origin=${encodeURIComponent(elsewhere)}`);
    assert.deepEqual(kept.localStorage, { other: 'kept' });
    await expect(200, alice, 'DELETE', `${S}/${s.id}`);
  });

  it('autoSleepMs: an idle session sleeps by itself; a cdpUrl connection wakes it and sees its pages', async () => {
    const s = await create(alice, { autoSleepMs: 1000 });
    assert.equal(s.autoSleepMs, 1000);
    await expect(200, alice, 'POST', `${S}/${s.id}/actions/navigate`, { url: `${site.url}/long/7` });
    const pid = pidOf(s.id);
    const asleep = await eventually(async () => {
      const now = await read(alice, s.id);
      return now.status === 'SLEEPING' && now;
    }, 10_000);
    assert.equal(running(pid), false);
    // The cdpUrl answered while it slept is the one a client connects to: the connection waits for the wake.
    const pw = await chromium.connectOverCDP(asleep.cdpUrl);
    try {
      const urls = pw
        .contexts()[0]!
        .pages()
        .map((p) => p.url());
      assert.deepEqual(urls, [`${site.url}/long/7`]);
      assert.equal((await read(alice, s.id)).status, 'LIVE');
      // A connected client holds it awake.
      await new Promise((r) => setTimeout(r, 1800));
      assert.equal((await read(alice, s.id)).status, 'LIVE');
    } finally {
      await pw.close();
    }
    await eventually(async () => (await read(alice, s.id)).status === 'SLEEPING', 10_000);
    // A REST action wakes it too, and is answered from the woken page.
    assert.equal(await evaluate(alice, s.id, 'location.pathname'), '/long/7');
    assert.equal((await read(alice, s.id)).status, 'LIVE');
    await expect(200, alice, 'DELETE', `${S}/${s.id}`);
    const ended = await read(alice, s.id);
    assert.equal(ended.status, 'RELEASED');
  });

  it('two wakes at once start one Chromium; the session is answered LIVE to both', async () => {
    const s = await create(alice);
    await expect(200, alice, 'POST', `${S}/${s.id}/actions/navigate`, { url: `${site.url}/login` });
    await expect(200, alice, 'POST', `${S}/${s.id}/actions/navigate`, { url: `${site.url}/long/5` });
    const { snapshot } = await expect(200, alice, 'POST', `${S}/${s.id}/sleep`);
    assert.deepEqual(snapshot.origins, [site.url], 'storage only of the origin its tab shows');
    // A row of the version before sealing (plain gzip) still wakes.
    const legacy = createSecretBox(secretKeyMaterial(ctx.deps.config)).openBytes(await storedState(snapshot.id));
    await ctx.deps.db.update(browserSnapshots).set({ state: legacy }).where(eq(browserSnapshots.id, snapshot.id));
    assert.equal(recordedChromium(ctx.dataDir).length, 0);
    const [a, b] = await Promise.all([
      call(alice, 'POST', `${SNAP}/${snapshot.id}/wake`),
      call(alice, 'POST', `${S}/${s.id}/actions/evaluate`, {
        expression: "location.pathname + ' ' + localStorage.getItem('token') + ' ' + document.cookie.length",
      }),
    ]);
    assert.equal(a.status, 200, JSON.stringify(a.body));
    assert.equal(b.status, 200, JSON.stringify(b.body));
    // Its localStorage is back (seeded in the tab's first document), and the HttpOnly cookie is not a page's to see.
    assert.equal(b.body.data.result, '/long/5 tok-42 0');
    const cookies = (await expect(200, alice, 'GET', `${S}/${s.id}/cookies`)).cookies;
    assert.deepEqual(
      cookies.map((c: { name: string; httpOnly: boolean }) => [c.name, c.httpOnly]),
      [['sid', true]],
    );
    assert.equal(browserSessionsOf(ctx.deps).host!.liveCount, 1);
    // One Chromium started (the host records each one it launches until it is gone).
    assert.deepEqual(
      recordedChromium(ctx.dataDir).map((r) => r.pid),
      [pidOf(s.id)],
    );
    await expect(200, alice, 'DELETE', `${S}/${s.id}`);
  });

  it('a recorded session stops recording at the sleep and goes on after the wake, its new pages numbered on', async () => {
    const s = await create(alice, { record: true });
    await expect(200, alice, 'POST', `${S}/${s.id}/actions/navigate`, { url: `${site.url}/long/1` });
    const recorded = async () => (await expect(200, alice, 'GET', `${S}/${s.id}/recording`)).pages;
    await eventually(async () => (await recorded()).length === 1, 5000);
    const { snapshot } = await expect(200, alice, 'POST', `${S}/${s.id}/sleep`);
    const asleep = await recorded();
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(await recorded(), asleep, 'nothing is recorded while it sleeps');
    await expect(200, alice, 'POST', `${SNAP}/${snapshot.id}/wake`);
    await expect(200, alice, 'POST', `${S}/${s.id}/actions/navigate`, { url: `${site.url}/long/9` });
    const pages = await eventually(async () => {
      const now = await recorded();
      return now.length === 2 && now[1].events > 0 && now;
    }, 8000);
    assert.deepEqual(
      pages.map((p: { id: string; url: string }) => [p.id, p.url]),
      [
        ['page_1', `${site.url}/long/1`],
        ['page_2', `${site.url}/long/1`],
      ],
    );
    await expect(200, alice, 'DELETE', `${S}/${s.id}`);
  });

  it('a persistProfile session saves its profile as it falls asleep and keeps the writer lease', async () => {
    const profile = (await expect(201, alice, 'POST', '/api/browser/profiles', { name: 'sleeper' })).profile;
    assert.equal(profile.savedAt, null);
    const s = await create(alice, { profileId: profile.id, persistProfile: true });
    await expect(200, alice, 'POST', `${S}/${s.id}/actions/navigate`, { url: `${site.url}/login` });
    await expect(200, alice, 'POST', `${S}/${s.id}/sleep`);
    const saved = (await expect(200, alice, 'GET', `/api/browser/profiles/${profile.id}`)).profile;
    assert.ok(saved.savedAt && saved.sizeBytes > 0, JSON.stringify(saved));
    const locked = await call(alice, 'POST', S, { profileId: profile.id, persistProfile: true });
    assert.equal(locked.status, 409, JSON.stringify(locked.body));
    await expect(200, alice, 'DELETE', `${S}/${s.id}`);
    const next = await create(alice, { profileId: profile.id, persistProfile: true });
    await expect(200, alice, 'DELETE', `${S}/${next.id}`);
  });

  it('sleeping sessions are released, deleted with their snapshot, and swept after the retention', async () => {
    const a = await create(alice, { metadata: { n: 'a' } });
    const { snapshot: snapA } = await expect(200, alice, 'POST', `${S}/${a.id}/sleep`);
    const b = await create(alice);
    const { snapshot: snapB } = await expect(200, alice, 'POST', `${S}/${b.id}/sleep`);
    const c = await create(alice);
    await expect(200, alice, 'POST', `${S}/${c.id}/sleep`);
    // Sleeping again answers the same snapshot.
    assert.equal((await expect(200, alice, 'POST', `${S}/${c.id}/sleep`)).snapshot.sessionId, c.id);

    await expect(200, alice, 'DELETE', `${SNAP}/${snapA.id}`);
    const endedA = await read(alice, a.id);
    assert.equal(endedA.status, 'RELEASED');
    assert.equal(endedA.endReason, 'its snapshot was deleted');
    assert.equal((await call(alice, 'GET', `${SNAP}/${snapA.id}`)).status, 404);
    assert.equal((await call(alice, 'POST', `${SNAP}/${snapA.id}/wake`)).status, 404);

    await expect(200, alice, 'DELETE', `${S}/${c.id}`);
    assert.equal((await read(alice, c.id)).status, 'RELEASED');

    await ctx.deps.db.execute(
      sql`UPDATE browser_snapshots SET expires_at = now() - interval '1 minute' WHERE id = ${snapB.id}`,
    );
    assert.equal(await sweepSnapshots(ctx.deps), 1);
    const endedB = await read(alice, b.id);
    assert.equal(endedB.status, 'EXPIRED');
    assert.match(endedB.endReason, /snapshot expired/);
    assert.equal((await expect(200, alice, 'GET', SNAP)).snapshots.length, 0);
    assert.equal(await sweepSnapshots(ctx.deps), 0);
  });

  it('X-Client-Ref and another user: 404; bad input: 400 naming the field', async () => {
    const A = { 'x-client-ref': 'ref-a' };
    const B = { 'x-client-ref': 'ref-b' };
    const s = await create(alice, {}, A);
    const { snapshot } = await expect(200, alice, 'POST', `${S}/${s.id}/sleep`, undefined, A);
    assert.equal(snapshot.clientRef, 'ref-a');
    for (const [user, headers] of [
      [alice, B],
      [bob, {}],
      [bob, A],
    ] as const) {
      assert.equal((await call(user, 'GET', `${SNAP}/${snapshot.id}`, undefined, headers)).status, 404);
      assert.equal((await call(user, 'POST', `${SNAP}/${snapshot.id}/wake`, undefined, headers)).status, 404);
      assert.equal((await call(user, 'DELETE', `${SNAP}/${snapshot.id}`, undefined, headers)).status, 404);
      assert.equal((await call(user, 'POST', `${S}/${s.id}/sleep`, undefined, headers)).status, 404);
      assert.equal((await expect(200, user, 'GET', SNAP, undefined, headers)).snapshots.length, 0);
    }
    assert.equal((await expect(200, alice, 'GET', SNAP)).snapshots.length, 1, 'the key-wide view sees it');
    assert.equal((await expect(200, alice, 'GET', SNAP, undefined, A)).snapshots.length, 1);
    assert.equal((await call(alice, 'GET', `${SNAP}/${UNKNOWN}`)).status, 404);
    assert.equal((await call(alice, 'GET', `${SNAP}/not-a-uuid`)).status, 404);

    for (const [body, field] of [
      [{ autoSleepMs: 10 }, 'autoSleepMs'],
      [{ autoSleepMs: 'soon' }, 'autoSleepMs'],
    ] as const) {
      const res = await call(alice, 'POST', S, body);
      assert.equal(res.status, 400);
      assert.equal(res.body.error.code, 'VALIDATION_ERROR');
      assert.ok(JSON.stringify(res.body.error.details).includes(field));
    }
    const list = await call(alice, 'GET', `${SNAP}?limit=0`);
    assert.equal(list.status, 400);
    assert.ok(JSON.stringify(list.body.error.details).includes('limit'));
    const patch = await call(alice, 'PATCH', `${S}/${s.id}`, { autoSleepMs: -1 }, A);
    assert.equal(patch.status, 400);
    assert.ok(JSON.stringify(patch.body.error.details).includes('autoSleepMs'));
    // An ended session cannot sleep.
    await expect(200, alice, 'DELETE', `${S}/${s.id}`, undefined, A);
    const again = await call(alice, 'POST', `${S}/${s.id}/sleep`, undefined, A);
    assert.equal(again.status, 400);
    assert.equal(again.body.error.code, 'INVALID_STATE');
  });
});
