/**
 * Browser profiles on real sessions and a real Chromium, against a loopback login site (a cookie and localStorage):
 * a login saved into a profile and a new session with it logged in; a persistProfile writer saved at its release,
 * the 409 lock while it lives, copies never written back; a save whose lease was taken over refused (the stored
 * state is the newer writer's); the export ZIP; the size cap (413); X-Client-Ref and other users (404); bad input
 * (400 naming the field); scopes.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'drizzle-orm';
import { strFromU8, unzipSync } from 'fflate';
import { chromium } from 'playwright-core';
import { LEASE_RENEW_MS, LEASE_TTL_MS } from '../src/modules/browser/profiles/profile-leases.ts';
import { profilesRoot } from '../src/modules/browser/profiles/profiles.store.ts';
import { browserSessionsOf } from '../src/modules/browser/sessions/sessions.service.ts';
import { type LoginSite, startLoginSite } from './fixtures/login-site.ts';
import { eventually, type TestUser } from './helpers/app.ts';
import { type BrowserTestContext, createBrowserContext } from './helpers/browser.ts';

const S = '/api/browser/sessions';
const P = '/api/browser/profiles';
const A = { 'x-client-ref': 'tenant-a' };
const B = { 'x-client-ref': 'tenant-b' };

let ctx: BrowserTestContext;
let site: LoginSite;
let alice: TestUser;
let bob: TestUser;

const json = (res: { statusCode: number; json(): any }, status: number) => {
  assert.equal(res.statusCode, status, JSON.stringify(res.json()));
  return res.json();
};

async function createSession(body: object = {}, headers: Record<string, string> = {}): Promise<string> {
  return json(await ctx.api(alice, 'POST', S, body, headers), 201).data.session.id;
}

const release = async (id: string) => json(await ctx.api(alice, 'DELETE', `${S}/${id}`), 200);

async function act(id: string, action: string, body: object) {
  return json(await ctx.api(alice, 'POST', `${S}/${id}/actions/${action}`, body), 200).data;
}

/** Signs `user` in through the login form, as a person would: localStorage in the page, the cookie from the site. */
async function logIn(id: string, user: string) {
  await act(id, 'navigate', { url: `${site.url}/login` });
  await act(id, 'type', { selector: '#user', text: user });
  await act(id, 'click', { selector: '#go' });
  await act(id, 'wait', { url: '**/me' });
}

/** What the site's /me page says in session `id`. */
async function whoAmI(id: string): Promise<string> {
  await act(id, 'navigate', { url: `${site.url}/me` });
  return (await act(id, 'evaluate', { function: "return document.getElementById('who').textContent" })).result;
}

/** Opens the fixture page's IndexedDB database `app` (store `kv`) as `db`, in an evaluate body. */
const OPEN_DB = `const db = await new Promise((res, rej) => { const r = indexedDB.open('app', 1);
  r.onupgradeneeded = () => r.result.createObjectStore('kv'); r.onsuccess = () => res(r.result);
  r.onerror = () => rej(r.error); });`;

const profile = async (id: string, headers = {}) =>
  json(await ctx.api(alice, 'GET', `${P}/${id}`, undefined, headers), 200).data.profile;
const newProfile = async (name: string, headers = {}) =>
  json(await ctx.api(alice, 'POST', P, { name }, headers), 201).data.profile;

const saveProfile = (id: string, body: object = {}, headers = {}) =>
  ctx.api(alice, 'POST', `${S}/${id}/save-profile`, body, headers);

async function exported(id: string, user = alice) {
  const res = await ctx.app.inject({ method: 'GET', url: `${P}/${id}/export`, headers: user.headers });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.headers['content-type'], 'application/zip');
  const files = unzipSync(new Uint8Array(res.rawPayload));
  return {
    names: Object.keys(files).sort(),
    manifest: JSON.parse(strFromU8(files['profile.json']!)),
    state: JSON.parse(strFromU8(files['storage-state.json']!)),
  };
}

/** The state files on disk of a profile. */
const filesOf = (userId: string, profileId: string) => {
  const dir = path.join(profilesRoot(ctx.deps.config), userId, profileId);
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
};

before(async () => {
  site = await startLoginSite();
  ctx = await createBrowserContext({
    env: {
      ALLOW_PRIVATE_NETWORK: 'true',
      BROWSER_PROFILE_MAX_MB: '1',
      BROWSER_MAX_SESSIONS: '6',
      BROWSER_MAX_SESSIONS_PER_USER: '6',
      BROWSER_MAX_SESSIONS_PER_CLIENT_REF: '3',
    },
  });
  [alice, bob] = await Promise.all([ctx.signup(), ctx.signup()]);
});
after(async () => {
  await ctx?.close();
  await site?.close();
});

describe('a profile carries a login from one session to the next', () => {
  it('logged in, saved into a new profile; a session started from it is logged in, one without is not', async () => {
    const first = await createSession();
    await logIn(first, 'ada');
    assert.equal(await whoAmI(first), 'logged in as ada');
    const saved = json(await saveProfile(first, { name: 'ada', metadata: { team: 'x' } }), 200).data.profile;
    assert.equal(saved.name, 'ada');
    assert.equal(saved.version, 1);
    assert.ok(saved.sizeBytes > 0);
    assert.deepEqual(saved.metadata, { team: 'x' });
    assert.equal(saved.writer, null, 'the one-shot save freed its lease');
    await release(first);

    const [second, plain] = await Promise.all([createSession({ profileId: saved.id }), createSession()]);
    assert.equal(await whoAmI(second), 'logged in as ada');
    assert.equal(await whoAmI(plain), 'logged out');
    const session = json(await ctx.api(alice, 'GET', `${S}/${second}`), 200).data.session;
    assert.equal(session.profileId, saved.id);
    await Promise.all([release(second), release(plain)]);
    assert.equal(filesOf(alice.id, saved.id).length, 1, 'one state file');
  });
});

describe('a login made by the client’s own Playwright', () => {
  it('is saved (the service connects only for the save) and restored for the next client', async () => {
    const created = json(await ctx.api(alice, 'POST', S, {}), 201).data.session;
    const client = await chromium.connectOverCDP(created.cdpUrl);
    try {
      const page = client.contexts()[0]!.pages()[0] ?? (await client.contexts()[0]!.newPage());
      await page.goto(`${site.url}/login`);
      await page.fill('#user', 'jon');
      await page.click('#go');
      await page.waitForURL('**/me');
      assert.equal(await page.textContent('#who'), 'logged in as jon');
    } finally {
      await client.close();
    }
    const saved = json(await saveProfile(created.id, { name: 'jon' }), 200).data.profile;
    await release(created.id);
    const { state } = await exported(saved.id);
    assert.deepEqual(state.origins.find((o: any) => o.origin === site.url)?.localStorage, [
      { name: 'user', value: 'jon' },
    ]);

    const next = json(await ctx.api(alice, 'POST', S, { profileId: saved.id }), 201).data.session;
    const again = await chromium.connectOverCDP(next.cdpUrl);
    try {
      const page = again.contexts()[0]!.pages()[0] ?? (await again.contexts()[0]!.newPage());
      await page.goto(`${site.url}/me`);
      assert.equal(await page.textContent('#who'), 'logged in as jon');
    } finally {
      await again.close();
    }
    await release(next.id);
  });
});

describe('one writer at a time', () => {
  it('a persistProfile writer holds the lock, saves at release; copies are never written back', async () => {
    const p = await newProfile('shared');
    const writer = await createSession({ profileId: p.id, persistProfile: true });
    const held = await profile(p.id);
    assert.equal(held.writer.sessionId, writer);
    const left = Date.parse(held.writer.leaseExpiresAt) - Date.now();
    assert.ok(left > LEASE_TTL_MS - 10_000 && left <= LEASE_TTL_MS, `lease ends in ${left} ms`);

    const second = await ctx.api(alice, 'POST', S, { profileId: p.id, persistProfile: true });
    assert.equal(json(second, 409).error.code, 'PROFILE_LOCKED');
    assert.equal(json(await ctx.api(alice, 'DELETE', `${P}/${p.id}`), 409).error.code, 'PROFILE_LOCKED');

    const copy = await createSession({ profileId: p.id });
    await logIn(copy, 'bob');
    // An explicit save from the copy would write while the writer lives: refused.
    assert.equal(json(await saveProfile(copy), 409).error.code, 'PROFILE_LOCKED');
    await release(copy);
    assert.equal((await profile(p.id)).version, 0, 'the copy wrote nothing back');

    await logIn(writer, 'cyd');
    const ended = (await release(writer)).data.session;
    assert.equal(ended.status, 'RELEASED');
    const after = await profile(p.id);
    assert.equal(after.version, 1, 'saved at release');
    assert.equal(after.writer, null, 'lease freed');

    const next = await createSession({ profileId: p.id, persistProfile: true });
    assert.equal(await whoAmI(next), 'logged in as cyd');
    await release(next);
  });

  it('release-all saves every writer it releases, IndexedDB included', async () => {
    const ref = { 'x-client-ref': 'release-all' };
    const p = await newProfile('bulk', ref);
    const writer = await createSession({ profileId: p.id, persistProfile: true }, ref);
    await logIn(writer, 'ida');
    await act(writer, 'evaluate', {
      function: `${OPEN_DB}
      await new Promise((res, rej) => { const tx = db.transaction('kv', 'readwrite');
        tx.objectStore('kv').put('dark', 'theme'); tx.oncomplete = res; tx.onerror = () => rej(tx.error); });
      return true;`,
    });
    const released = json(await ctx.api(alice, 'POST', `${S}/release-all`, undefined, ref), 200).data;
    assert.equal(released.released, 1);
    assert.equal((await profile(p.id)).version, 1);
    const next = await createSession({ profileId: p.id }, ref);
    assert.equal(await whoAmI(next), 'logged in as ida');
    const theme = await act(next, 'evaluate', {
      function: `${OPEN_DB}
      return await new Promise((res, rej) => { const q = db.transaction('kv').objectStore('kv').get('theme');
        q.onsuccess = () => res(q.result ?? null); q.onerror = () => rej(q.error); });`,
    });
    assert.equal(theme.result, 'dark');
    await release(next);
  });

  it('a writer whose Chromium dies frees the lease as its session fails; the next writer starts at once', async () => {
    const p = await newProfile('crashed');
    const writer = await createSession({ profileId: p.id, persistProfile: true });
    const live = browserSessionsOf(ctx.deps).host!.get(writer)!;
    process.kill(live.chromium.pid, 'SIGKILL');
    await eventually(
      async () => (await ctx.api(alice, 'GET', `${S}/${writer}`)).json().data.session.status === 'FAILED',
    );
    const after = await profile(p.id);
    assert.equal(after.writer, null);
    assert.equal(after.version, 0, 'nothing saved from a dead browser');
    const next = await createSession({ profileId: p.id, persistProfile: true });
    assert.equal((await profile(p.id)).writer.sessionId, next);
    await release(next);
  });

  it('a writer whose restore fails ends without saving its empty browser over the profile', async () => {
    const p = await newProfile('unreadable');
    const first = await createSession({ profileId: p.id, persistProfile: true });
    await logIn(first, 'eve');
    await release(first);
    assert.equal((await profile(p.id)).version, 1);
    // The saved state becomes unreadable (a damaged disk, a profile directory not shared between hosts).
    const dir = path.join(profilesRoot(ctx.config), alice.id, p.id);
    for (const file of fs.readdirSync(dir)) fs.writeFileSync(path.join(dir, file), 'not a state');
    const failed = await ctx.api(alice, 'POST', S, { profileId: p.id, persistProfile: true });
    assert.equal(json(failed, 503).error.code, 'SERVICE_UNAVAILABLE');
    const after = await profile(p.id);
    assert.equal(after.version, 1, 'nothing saved by the session that could not start');
    assert.equal(after.writer, null);
  });

  it('a page that never yields does not hold a writer’s end: released after the state timeout, nothing saved', async () => {
    const p = await newProfile('spinning');
    const writer = await createSession({ profileId: p.id, persistProfile: true });
    await logIn(writer, 'fay');
    await act(writer, 'evaluate', { function: 'setTimeout(() => { for (;;) {} }, 200); return true' });
    await new Promise((r) => setTimeout(r, 500));
    const started = Date.now();
    assert.equal((await release(writer)).data.session.status, 'RELEASED');
    assert.ok(Date.now() - started < 30_000, `released in ${Date.now() - started} ms`);
    const after = await profile(p.id);
    assert.equal(after.version, 0);
    assert.equal(after.writer, null, 'lease freed');
  });

  it('two writers created at once: exactly one gets the lease, the other 409 and no session', async () => {
    const p = await newProfile('raced');
    const before = json(await ctx.api(alice, 'GET', `${S}?limit=100`), 200).data.sessions.length;
    const results = await Promise.all(
      [0, 1].map(() => ctx.api(alice, 'POST', S, { profileId: p.id, persistProfile: true })),
    );
    const codes = results.map((r) => r.statusCode).sort();
    assert.deepEqual(codes, [201, 409], JSON.stringify(results.map((r) => r.json())));
    const winner = results.find((r) => r.statusCode === 201)!.json().data.session.id;
    assert.equal((await profile(p.id)).writer.sessionId, winner);
    const sessions = json(await ctx.api(alice, 'GET', `${S}?limit=100`), 200).data.sessions;
    assert.equal(sessions.length, before + 1, 'the refused create left no session behind');
    await release(winner);
  });

  it('a save whose lease was taken over is refused; the stored state is the newer writer’s', async () => {
    const p = await newProfile('contested');
    const first = await createSession({ profileId: p.id, persistProfile: true });
    // Its host stops renewing (as after a crash): the lease expires, and the next writer takes it over.
    await ctx.deps.db.execute(
      sql`UPDATE browser_profiles SET lease_expires_at = now() - interval '1 second' WHERE id = ${p.id}`,
    );
    const second = await createSession({ profileId: p.id, persistProfile: true });
    const taken = (await profile(p.id)).writer;
    assert.equal(taken.sessionId, second);
    // This host's next renewal round (every LEASE_RENEW_MS) extends the second's lease and finds the first's lost.
    await eventually(
      async () => Date.parse((await profile(p.id)).writer.leaseExpiresAt) > Date.parse(taken.leaseExpiresAt),
      LEASE_RENEW_MS + 5000,
      250,
    );

    await logIn(second, 'eve');
    assert.equal(json(await saveProfile(second), 200).data.profile.version, 1);
    await logIn(first, 'fay');
    const stale = await saveProfile(first);
    assert.equal(json(stale, 409).error.code, 'PROFILE_LOCKED');
    assert.match(stale.json().error.message, /stale/, JSON.stringify(stale.json()));
    const cookieOf = async () => (await exported(p.id)).state.cookies.find((c: any) => c.name === 'sid')?.value;
    assert.equal(await cookieOf(), 'eve');

    // The first one's release saves nothing either, and frees nothing of the second's.
    await release(first);
    assert.equal(await cookieOf(), 'eve');
    assert.equal((await profile(p.id)).writer.sessionId, second);
    await release(second);
    const done = await profile(p.id);
    assert.equal(done.version, 2);
    assert.equal(done.writer, null);
    assert.equal(await cookieOf(), 'eve');
    assert.equal(filesOf(alice.id, p.id).length, 1, 'refused and replaced files are gone');
  });
});

describe('profiles as resources', () => {
  it('export: a ZIP with the manifest and the storage state (cookies, localStorage per origin)', async () => {
    const id = await createSession();
    await logIn(id, 'gus');
    const p = json(await saveProfile(id, { name: 'gus' }), 200).data.profile;
    await release(id);
    const zip = await exported(p.id);
    assert.deepEqual(zip.names, ['profile.json', 'storage-state.json']);
    assert.equal(zip.manifest.format, 'quarry-browser-profile/1');
    assert.equal(zip.manifest.profile.id, p.id);
    const sid = zip.state.cookies.find((c: any) => c.name === 'sid');
    assert.equal(sid.value, 'gus');
    assert.equal(sid.httpOnly, true);
    const origin = zip.state.origins.find((o: any) => o.origin === site.url);
    assert.deepEqual(origin.localStorage, [{ name: 'user', value: 'gus' }]);
    // Never saved: an empty state.
    const empty = await exported((await newProfile('empty')).id);
    assert.deepEqual(empty.state, { cookies: [], origins: [] });
  });

  it('the file on disk is sealed (no cookie or storage value in it); a legacy plaintext file is still read', async () => {
    const secret = 'sealed-7f3c91ab2d';
    const id = await createSession();
    await logIn(id, secret);
    const p = json(await saveProfile(id, { name: 'sealed' }), 200).data.profile;
    await release(id);
    const [file] = filesOf(alice.id, p.id);
    assert.match(file!, /^state-\d+-[0-9a-f-]{36}\.sealed$/);
    const stored = fs.readFileSync(path.join(profilesRoot(ctx.deps.config), alice.id, p.id, file!));
    for (const plain of [secret, 'cookies', 'localStorage', site.url]) {
      assert.ok(!stored.includes(plain), `the stored file shows ${plain}`);
    }
    assert.equal(fs.statSync(path.join(profilesRoot(ctx.deps.config), alice.id, p.id, file!)).mode & 0o777, 0o600);
    const zip = await exported(p.id);
    assert.equal(zip.state.cookies.find((c: any) => c.name === 'sid').value, secret, 'the export is plaintext');
    const compact = JSON.stringify(zip.state);
    assert.equal(p.sizeBytes, Buffer.byteLength(compact), 'sizeBytes: the JSON state, as the cap counts it');

    // A state file of the version before sealing (plaintext JSON) is read as it is.
    const legacy = `state-1-${'0'.repeat(8)}-0000-7000-8000-${'0'.repeat(12)}.json`;
    const state = { cookies: [{ ...zip.state.cookies[0], value: 'legacy-user' }], origins: [] };
    fs.writeFileSync(path.join(profilesRoot(ctx.deps.config), alice.id, p.id, legacy), JSON.stringify(state));
    await ctx.deps.db.execute(sql`UPDATE browser_profiles SET state_file = ${legacy} WHERE id = ${p.id}`);
    assert.equal((await exported(p.id)).state.cookies[0].value, 'legacy-user');
  });

  it('a state over BROWSER_PROFILE_MAX_MB is 413, nothing stored', async () => {
    const id = await createSession();
    await act(id, 'navigate', { url: `${site.url}/me` });
    await act(id, 'evaluate', { function: "localStorage.setItem('big', 'x'.repeat(1_200_000)); return true" });
    const res = await saveProfile(id, { name: 'too-big' });
    assert.equal(json(res, 413).error.code, 'PAYLOAD_TOO_LARGE');
    const names = json(await ctx.api(alice, 'GET', `${P}?limit=100`), 200).data.profiles.map((p: any) => p.name);
    assert.ok(!names.includes('too-big'));
    const p = await newProfile('kept');
    assert.equal(json(await saveProfile(id, { profileId: p.id }), 413).error.details[0].field, 'state');
    assert.equal((await profile(p.id)).version, 0);
    assert.deepEqual(filesOf(alice.id, p.id), []);
    await release(id);
  });

  it('list pages newest first; delete removes the row and its files', async () => {
    const made = [];
    for (const name of ['p1', 'p2', 'p3']) made.push(await newProfile(name, { 'x-client-ref': 'pager' }));
    const first = json(await ctx.api(alice, 'GET', `${P}?limit=2`, undefined, { 'x-client-ref': 'pager' }), 200).data;
    assert.deepEqual(
      first.profiles.map((p: any) => p.name),
      ['p3', 'p2'],
    );
    const rest = json(
      await ctx.api(alice, 'GET', `${P}?limit=2&cursor=${first.nextCursor}`, undefined, { 'x-client-ref': 'pager' }),
      200,
    ).data;
    assert.deepEqual(
      rest.profiles.map((p: any) => p.name),
      ['p1'],
    );
    assert.equal(rest.nextCursor, null);

    const id = await createSession();
    await logIn(id, 'hal');
    const saved = json(await saveProfile(id, { name: 'to-delete' }), 200).data.profile;
    await release(id);
    assert.equal(filesOf(alice.id, saved.id).length, 1);
    json(await ctx.api(alice, 'DELETE', `${P}/${saved.id}`), 200);
    assert.deepEqual(filesOf(alice.id, saved.id), []);
    assert.equal((await ctx.api(alice, 'GET', `${P}/${saved.id}`)).statusCode, 404);
    assert.equal(
      json(await ctx.api(alice, 'POST', S, { profileId: saved.id }), 404).error.details[0].field,
      'profileId',
    );
  });
});

describe('tenancy, input and scopes', () => {
  it('X-Client-Ref: a profile of one ref is 404 to another; the key-wide view sees it; another user never', async () => {
    const a = await newProfile('of-a', A);
    assert.equal(a.clientRef, 'tenant-a');
    assert.equal((await ctx.api(alice, 'GET', `${P}/${a.id}`, undefined, B)).statusCode, 404);
    assert.equal((await ctx.api(alice, 'GET', `${P}/${a.id}`, undefined, A)).statusCode, 200);
    assert.equal((await ctx.api(alice, 'GET', `${P}/${a.id}`)).statusCode, 200);
    const listB = json(await ctx.api(alice, 'GET', P, undefined, B), 200).data.profiles;
    assert.ok(!listB.some((p: any) => p.id === a.id));
    const listA = json(await ctx.api(alice, 'GET', P, undefined, A), 200).data.profiles;
    assert.ok(listA.some((p: any) => p.id === a.id));
    for (const [method, url] of [
      ['GET', `${P}/${a.id}/export`],
      ['DELETE', `${P}/${a.id}`],
    ] as const) {
      assert.equal((await ctx.api(alice, method, url, undefined, B)).statusCode, 404, `${method} ${url} as B`);
      assert.equal((await ctx.api(bob, method, url)).statusCode, 404, `${method} ${url} as bob`);
    }
    const asB = await ctx.api(alice, 'POST', S, { profileId: a.id }, B);
    assert.equal(json(asB, 404).error.details[0].field, 'profileId');
    assert.equal((await ctx.api(bob, 'POST', S, { profileId: a.id })).statusCode, 404);
    // A session recorded for ref B starts from B's profiles only, even when created key-wide.
    const keyWide = await ctx.api(alice, 'POST', S, { profileId: a.id, clientRef: 'tenant-b' });
    assert.equal(json(keyWide, 404).error.details[0].field, 'profileId');
    const mismatch = await ctx.api(alice, 'POST', P, { name: 'x', clientRef: 'tenant-b' }, A);
    assert.equal(json(mismatch, 400).error.code, 'CLIENT_REF_MISMATCH');

    // A session of ref A saves into A's profile; B cannot reach that session, nor save into A's profile.
    const session = await createSession({ profileId: a.id }, A);
    assert.equal((await saveProfile(session, {}, B)).statusCode, 404);
    assert.equal(json(await saveProfile(session, {}, A), 200).data.profile.version, 1);
    const b = await createSession({}, B);
    assert.equal(json(await saveProfile(b, { profileId: a.id }, B), 404).error.details[0].field, 'profileId');
    const own = json(await saveProfile(b, { name: 'of-b' }, B), 200).data.profile;
    assert.equal(own.clientRef, 'tenant-b');
    const bobs = json(await ctx.api(bob, 'POST', S, {}), 201).data.session.id;
    assert.equal((await ctx.api(bob, 'POST', `${S}/${bobs}/save-profile`, { profileId: a.id })).statusCode, 404);
    assert.equal((await ctx.api(bob, 'POST', `${S}/${session}/save-profile`, {})).statusCode, 404);
    await Promise.all([release(session), release(b), ctx.api(bob, 'DELETE', `${S}/${bobs}`)]);
  });

  it('bad input: 400 naming the field', async () => {
    const field = async (res: Promise<{ statusCode: number; json(): any }>) => {
      const r = await res;
      assert.equal(r.statusCode, 400, JSON.stringify(r.json()));
      assert.equal(r.json().error.code, 'VALIDATION_ERROR');
      return r.json().error.details[0].field;
    };
    assert.equal(await field(ctx.api(alice, 'POST', P, {})), 'name');
    assert.equal(await field(ctx.api(alice, 'POST', P, { name: '  ' })), 'name');
    assert.equal(await field(ctx.api(alice, 'POST', P, { name: 'x'.repeat(201) })), 'name');
    assert.match(await field(ctx.api(alice, 'POST', P, { name: 'x', metadata: { 'bad key': 'v' } })), /^metadata/);
    assert.equal(await field(ctx.api(alice, 'GET', `${P}?limit=0`)), 'limit');
    assert.equal(await field(ctx.api(alice, 'POST', S, { persistProfile: true })), 'persistProfile');
    assert.equal((await ctx.api(alice, 'GET', `${P}/not-a-uuid`)).statusCode, 404);
    assert.equal((await ctx.api(alice, 'POST', S, { profileId: 'not-a-uuid' })).statusCode, 404);
    const id = await createSession();
    assert.equal(await field(saveProfile(id)), 'profileId');
    assert.equal(await field(saveProfile(id, { profileId: 'a', name: 'b' })), 'name');
    assert.equal(await field(saveProfile(id, { nope: 1 })), 'body');
    assert.equal((await saveProfile(id, { profileId: 'not-a-uuid' })).statusCode, 404);
    await release(id);
    assert.equal(json(await saveProfile(id, { name: 'late' }), 400).error.code, 'INVALID_STATE');
  });

  it('browser:read reads and exports; creating, deleting and saving need browser:write', async () => {
    const key = await ctx.api(alice, 'POST', '/api/api-keys', { name: 'reader', scopes: ['browser:read'] });
    const reader = { ...alice, headers: { authorization: `Bearer ${key.json().data.apiKey.key}` } };
    const p = await newProfile('scoped');
    assert.equal((await ctx.api(reader, 'GET', P)).statusCode, 200);
    assert.equal((await ctx.api(reader, 'GET', `${P}/${p.id}`)).statusCode, 200);
    assert.equal(
      (await ctx.app.inject({ method: 'GET', url: `${P}/${p.id}/export`, headers: reader.headers })).statusCode,
      200,
    );
    assert.equal((await ctx.api(reader, 'POST', P, { name: 'no' })).statusCode, 403);
    assert.equal((await ctx.api(reader, 'DELETE', `${P}/${p.id}`)).statusCode, 403);
    assert.equal(
      (await ctx.api(reader, 'POST', `${S}/00000000-0000-7000-8000-000000000000/save-profile`, {})).statusCode,
      403,
    );
    const other = await ctx.api(alice, 'POST', '/api/api-keys', { name: 'leads', scopes: ['leads:read'] });
    const none = { ...alice, headers: { authorization: `Bearer ${other.json().data.apiKey.key}` } };
    assert.equal((await ctx.api(none, 'GET', P)).statusCode, 403);
  });
});
