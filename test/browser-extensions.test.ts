/**
 * Chrome extensions: ZIP uploads checked (zip-slip, symlinks, missing or bad manifest, not a ZIP), listed, deleted,
 * another user's 404; an extension whose content script changes the page title takes effect in a real session
 * (and not in one without it). Usage: counts follow sessions starting and ending, other users' are not counted,
 * X-Client-Ref narrows them.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Zippable, zipSync } from 'fflate';
import { browserHosts } from '../src/db/schema/index.ts';
import { startBrowserPages } from './fixtures/browser-pages.ts';
import type { TestUser } from './helpers/app.ts';
import { type BrowserTestContext, createBrowserContext } from './helpers/browser.ts';

let ctx: BrowserTestContext;
let site: Awaited<ReturnType<typeof startBrowserPages>>;
let alice: TestUser;
let bob: TestUser;
const E = '/api/browser/extensions';
const S = '/api/browser/sessions';
const text = (s: string) => new TextEncoder().encode(s);

/** The title-changing MV3 extension: its content script runs on every page once the DOM is parsed. */
const titleExtension = (root = ''): Zippable => ({
  [`${root}manifest.json`]: text(
    JSON.stringify({
      manifest_version: 3,
      name: 'Title changer',
      version: '1.0.1',
      content_scripts: [{ matches: ['<all_urls>'], js: ['content.js'], run_at: 'document_end' }],
    }),
  ),
  [`${root}content.js`]: text("document.title = 'extended';"),
});

/** A multipart/form-data body with one file part. */
function multipart(zip: Uint8Array, field = 'file') {
  const boundary = `----quarry${Date.now()}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="ext.zip"\r\nContent-Type: application/zip\r\n\r\n`;
  return {
    payload: Buffer.concat([Buffer.from(head), Buffer.from(zip), Buffer.from(`\r\n--${boundary}--\r\n`)]),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

const upload = (user: TestUser, zip: Uint8Array, field?: string) => {
  const { payload, headers } = multipart(zip, field);
  return ctx.app.inject({ method: 'POST', url: E, payload, headers: { ...user.headers, ...headers } });
};

before(async () => {
  site = await startBrowserPages();
  ctx = await createBrowserContext({ env: { ALLOW_PRIVATE_NETWORK: 'true', BROWSER_WARM_POOL: '1' } });
  [alice, bob] = await Promise.all([ctx.signup(), ctx.signup()]);
});
after(async () => {
  await ctx?.close();
  await site?.close();
});

describe('uploading extensions', () => {
  it('refuses what is not a valid unpacked extension, naming the problem', async () => {
    const manifest = (m: object) => ({ 'manifest.json': text(JSON.stringify(m)), 'a.js': text('1') });
    const symlink: Zippable = {
      ...titleExtension(),
      'link.js': [text('/etc/passwd'), { os: 3, attrs: (0o120777 << 16) >>> 0 }],
    };
    const cases: [Uint8Array, RegExp][] = [
      [zipSync({ ...titleExtension(), '../evil.js': text('x') }), /"\.\.\/evil\.js": "\.\." in its path/],
      [zipSync({ ...titleExtension(), '/abs.js': text('x') }), /absolute path/],
      [zipSync(symlink), /symlinks are refused/],
      [zipSync({ 'content.js': text('x') }), /no manifest\.json/],
      [zipSync({ ...titleExtension('a/'), 'b/x.js': text('x') }), /no manifest\.json/],
      [zipSync(manifest({ manifest_version: 1, name: 'x', version: '1' })), /manifest_version must be 2 or 3/],
      [zipSync(manifest({ manifest_version: 3, version: '1' })), /name must be/],
      [zipSync(manifest({ manifest_version: 3, name: 'x', version: 'one' })), /version must be/],
      [zipSync({ 'manifest.json': text('{nope') }), /not valid JSON/],
      [text('not a zip at all, just text'), /not a ZIP archive/],
    ];
    for (const [zip, problem] of cases) {
      const res = await upload(alice, zip);
      assert.equal(res.statusCode, 400, `${problem}: ${res.body}`);
      const { error } = res.json();
      assert.equal(error.code, 'VALIDATION_ERROR');
      assert.equal(error.details[0].field, 'file');
      assert.match(error.message, problem);
    }
    const wrongField = await upload(alice, zipSync(titleExtension()), 'zip');
    assert.equal(wrongField.statusCode, 400);
    assert.equal(wrongField.json().error.details[0].field, 'zip');
    const json = await ctx.api(alice, 'POST', E, { file: 'x' });
    assert.equal(json.statusCode, 400);
    assert.equal(json.json().error.details[0].field, 'file');
    // Nothing of the refused uploads was written.
    const dir = path.join(ctx.dataDir, 'browser-extensions');
    assert.deepEqual(fs.existsSync(dir) ? fs.readdirSync(dir) : [], []);
    assert.deepEqual((await ctx.api(alice, 'GET', E)).json().data.extensions, []);
  });

  it('stores a valid one (root or one top folder), lists it, 404 for another user, deletes its files', async () => {
    const res = await upload(alice, zipSync(titleExtension('title-changer/')));
    assert.equal(res.statusCode, 201, res.body);
    const ext = res.json().data.extension;
    assert.equal(ext.name, 'Title changer');
    assert.equal(ext.version, '1.0.1');
    assert.equal(ext.manifestVersion, 3);
    const dir = path.join(ctx.dataDir, 'browser-extensions', ext.id);
    assert.deepEqual(fs.readdirSync(dir).sort(), ['content.js', 'manifest.json']);
    const list = (await ctx.api(alice, 'GET', E)).json().data;
    assert.deepEqual(
      list.extensions.map((e: { id: string }) => e.id),
      [ext.id],
    );
    assert.equal(list.nextCursor, null);
    // Key-wide: X-Client-Ref does not hide it.
    assert.equal(
      (await ctx.api(alice, 'GET', E, undefined, { 'x-client-ref': 't1' })).json().data.extensions.length,
      1,
    );
    assert.deepEqual((await ctx.api(bob, 'GET', E)).json().data.extensions, []);
    assert.equal((await ctx.api(bob, 'DELETE', `${E}/${ext.id}`)).statusCode, 404);
    const bobSession = await ctx.api(bob, 'POST', S, { extensionIds: [ext.id] });
    assert.equal(bobSession.statusCode, 404);
    assert.equal(bobSession.json().error.details[0].field, 'extensionIds');
    assert.equal((await ctx.api(alice, 'DELETE', `${E}/${ext.id}`)).statusCode, 200);
    assert.equal(fs.existsSync(dir), false);
    assert.equal((await ctx.api(alice, 'DELETE', `${E}/${ext.id}`)).statusCode, 404);
    assert.equal((await ctx.api(alice, 'POST', S, { extensionIds: [ext.id] })).statusCode, 404);
    assert.equal((await ctx.api(alice, 'POST', S, { extensionIds: ['nope'] })).statusCode, 404);
  });

  it('browser:read lists, uploading and deleting need browser:write', async () => {
    const key = await ctx.api(alice, 'POST', '/api/api-keys', { name: 'reader', scopes: ['browser:read'] });
    const reader = { ...alice, headers: { authorization: `Bearer ${key.json().data.apiKey.key}` } };
    assert.equal((await ctx.api(reader, 'GET', E)).statusCode, 200);
    assert.equal((await ctx.api(reader, 'GET', '/api/browser/usage')).statusCode, 200);
    assert.equal((await upload(reader, zipSync(titleExtension()))).statusCode, 403);
    assert.equal((await ctx.api(reader, 'DELETE', `${E}/00000000-0000-7000-8000-000000000000`)).statusCode, 403);
    const other = await ctx.api(alice, 'POST', '/api/api-keys', { name: 'leads', scopes: ['leads:read'] });
    const none = { ...alice, headers: { authorization: `Bearer ${other.json().data.apiKey.key}` } };
    assert.equal((await ctx.api(none, 'GET', E)).statusCode, 403);
    assert.equal((await ctx.api(none, 'GET', '/api/browser/usage')).statusCode, 403);
  });
});

describe('sessions with extensions, and usage', () => {
  const titleOf = async (user: TestUser, id: string) => {
    const nav = await ctx.api(user, 'POST', `${S}/${id}/actions/navigate`, { url: `${site.url}/list` });
    assert.equal(nav.statusCode, 200, JSON.stringify(nav.json()));
    // The content script runs once the DOM is parsed: give it a moment, no more.
    const res = await ctx.api(user, 'POST', `${S}/${id}/actions/evaluate`, {
      function:
        "for (let i = 0; i < 20 && document.title !== 'extended'; i++) await new Promise((r) => setTimeout(r, 50)); return document.title;",
    });
    assert.equal(res.statusCode, 200, JSON.stringify(res.json()));
    return res.json().data.result;
  };
  const usage = async (user: TestUser, headers = {}) => {
    const res = await ctx.api(user, 'GET', '/api/browser/usage', undefined, headers);
    assert.equal(res.statusCode, 200, JSON.stringify(res.json()));
    return res.json().data;
  };

  it('an extension that changes the page title takes effect; a session without it keeps the title', async () => {
    const before = await usage(alice);
    assert.equal(before.live, 0);
    assert.equal(before.sleeping, 0);
    assert.equal(before.hosts.length, 1);
    assert.equal(before.hosts[0].liveSessions, 0);
    assert.ok(before.hosts[0].freeMemoryMb > 0);

    const ext = (await upload(alice, zipSync(titleExtension()))).json().data.extension;
    // As on a host that did not take the upload: the folder is unpacked again from the stored ZIP.
    fs.rmSync(path.join(ctx.dataDir, 'browser-extensions', ext.id), { recursive: true });
    const [withExt, without, refd] = await Promise.all([
      ctx.api(alice, 'POST', S, { extensionIds: [ext.id] }),
      ctx.api(alice, 'POST', S, {}),
      ctx.api(alice, 'POST', S, {}, { 'x-client-ref': 'tenant-a' }),
    ]);
    assert.equal(withExt.statusCode, 201, JSON.stringify(withExt.json()));
    const extended = withExt.json().data.session;
    assert.deepEqual(extended.extensionIds, [ext.id]);
    const plain = without.json().data.session;
    assert.equal(await titleOf(alice, extended.id), 'extended');
    assert.equal(await titleOf(alice, plain.id), 'People');

    const during = await usage(alice);
    assert.equal(during.live, 3);
    assert.equal(during.hosts[0].liveSessions, 3);
    assert.ok(during.minutes >= 3, `minutes ${during.minutes}`);
    assert.equal((await usage(alice, { 'x-client-ref': 'tenant-a' })).live, 1);
    assert.equal((await usage(alice, { 'x-client-ref': 'tenant-a' })).minutes, 1);
    // Bob sees the host's load, not Alice's sessions.
    const bobs = await usage(bob);
    assert.equal(bobs.live, 0);
    assert.equal(bobs.minutes, 0);
    assert.equal(bobs.hosts[0].liveSessions, 3);

    // Deleting the extension leaves the session that loaded it running with it.
    assert.equal((await ctx.api(alice, 'DELETE', `${E}/${ext.id}`)).statusCode, 200);
    assert.equal(await titleOf(alice, extended.id), 'extended');

    for (const id of [extended.id, plain.id])
      assert.equal((await ctx.api(alice, 'DELETE', `${S}/${id}`)).statusCode, 200);
    const afterEnd = await usage(alice);
    assert.equal(afterEnd.live, 1);
    assert.equal(afterEnd.minutes, during.minutes);
    assert.equal(afterEnd.hosts[0].liveSessions, 1);
    await ctx.api(alice, 'DELETE', `${S}/${refd.json().data.session.id}`, undefined, { 'x-client-ref': 'tenant-a' });
    assert.equal((await usage(alice)).live, 0);
  });

  it('on PostgreSQL, lists every host of the registry with a fresh heartbeat, with its free memory', async (t) => {
    if (ctx.deps.database.kind !== 'postgres') return t.skip('the hosts registry is PostgreSQL only');
    const { db } = ctx.deps;
    const [own] = await db.select().from(browserHosts);
    assert.ok(own && own.freeMemoryMb > 0, 'the heartbeat row carries the free memory');
    const now = new Date();
    const other = { internalUrl: 'http://127.0.0.1:9', pid: 1, bootId: 'b', startedAt: now, heartbeatAt: now };
    await db.insert(browserHosts).values([
      { ...other, hostId: 'other-fresh', maxSessions: 7, liveSessions: 2, freeMemoryMb: 900 },
      { ...other, hostId: 'other-stale', maxSessions: 7, liveSessions: 0, heartbeatAt: new Date(Date.now() - 60_000) },
    ]);
    const hosts = (await usage(alice)).hosts;
    assert.deepEqual(
      hosts.map((h: { hostId: string }) => h.hostId),
      [own.hostId, 'other-fresh'],
    );
    assert.deepEqual(hosts[1], { hostId: 'other-fresh', maxSessions: 7, liveSessions: 2, freeMemoryMb: 900 });
  });
});
