/**
 * A session's files through the API on real sessions and a real Chromium: upload (multipart over HTTP), list, the
 * bytes back, delete, the ZIP of all, attach to an input[type=file] (read back in the page), downloads a click
 * triggers (partial ones not listed), hostile names stored safely (checked on the file system), 413 beyond
 * BROWSER_FILE_MAX_MB, X-Client-Ref and other users (404), scopes (403), and the files gone with the session.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { unzipSync } from 'fflate';
import { contentDisposition } from '../src/modules/browser/files/files.service.ts';
import { sanitizeFileName } from '../src/modules/browser/files/files.store.ts';
import { browserSessionsOf } from '../src/modules/browser/sessions/sessions.service.ts';
import { operationIds } from '../src/shared/openapi.ts';
import { type FilesSite, multipart, REPORT, startFilesSite } from './fixtures/browser-files-site.ts';
import { eventually, type TestUser } from './helpers/app.ts';
import { type BrowserTestContext, createBrowserContext } from './helpers/browser.ts';

const S = '/api/browser/sessions';
const A = { 'x-client-ref': 'tenant-a' };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let ctx: BrowserTestContext;
let site: FilesSite;
let alice: TestUser;
let bob: TestUser;
let session: { id: string };
let tenant: { id: string };

const upload = (
  user: TestUser,
  id: string,
  filename: string,
  content: Buffer,
  headers: Record<string, string> = {},
) => {
  const body = multipart(filename, content);
  return ctx.app.inject({
    method: 'POST',
    url: `${S}/${id}/files`,
    headers: { ...user.headers, host: ctx.hostPort, ...body.headers, ...headers },
    payload: body.payload,
  });
};

const bytesOf = (id: string, fileId: string, user = alice) =>
  ctx.app.inject({
    method: 'GET',
    url: `${S}/${id}/files/${fileId}`,
    headers: { ...user.headers, host: ctx.hostPort },
  });

const listOf = async (id = session.id) => {
  const res = await ctx.api(alice, 'GET', `${S}/${id}/files`);
  assert.equal(res.statusCode, 200, JSON.stringify(res.json()));
  return res.json().data.files as Array<{ id: string; name: string; size: number; source: string; mimeType?: string }>;
};

/** The session's own directory (its Chromium profile directory). */
const sessionDir = (id: string) => browserSessionsOf(ctx.deps).host!.get(id)!.chromium.userDataDir;

/** Every file under `dir`, relative to it. */
const walk = (dir: string): string[] =>
  fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)));

const evaluate = async (fn: string) => {
  const res = await ctx.api(alice, 'POST', `${S}/${session.id}/actions/evaluate`, { function: fn });
  assert.equal(res.statusCode, 200, JSON.stringify(res.json()));
  return res.json().data.result;
};

before(async () => {
  site = await startFilesSite();
  ctx = await createBrowserContext({ env: { ALLOW_PRIVATE_NETWORK: 'true', BROWSER_FILE_MAX_MB: '1' } });
  [alice, bob] = await Promise.all([ctx.signup(), ctx.signup()]);
  const [plain, ref] = await Promise.all([ctx.api(alice, 'POST', S, {}), ctx.api(alice, 'POST', S, {}, A)]);
  assert.equal(plain.statusCode, 201, JSON.stringify(plain.json()));
  session = plain.json().data.session;
  tenant = ref.json().data.session;
});
after(async () => {
  site?.finishSlow();
  await ctx?.close();
  await site?.close();
});

describe('file names', () => {
  it('sanitized by themselves, whatever the parser already did (busboy keeps only the last segment)', () => {
    const cases: Array<[string, string]> = [
      ['../../etc/passwd', 'passwd'],
      ['/etc/shadow', 'shadow'],
      ['..\\..\\windows\\win.ini', 'win.ini'],
      ['a/b\\c/../d.txt', 'd.txt'],
      ['nul\0byte.txt', 'nulbyte.txt'],
      ['line\nbreak\r.txt', 'linebreak.txt'],
      ['quote"and<angle>?.txt', 'quote_and_angle__.txt'],
      ['trailing. . ', 'trailing'],
      ['..', 'file'],
      ['.', 'file'],
      ['', 'file'],
      ['/', 'file'],
      ['\u202e\u2066', 'file'],
      ['aux', '_aux'],
      ['.hidden', '.hidden'],
      ['\ud800lone.txt', '\ufffdlone.txt'],
    ];
    for (const [given, expected] of cases) assert.equal(sanitizeFileName(given), expected, JSON.stringify(given));
    const long = sanitizeFileName(`${'€'.repeat(100)}.tar.gz`);
    assert.ok(Buffer.byteLength(long) <= 200 && long.endsWith('.gz'), long);
  });

  it('a Content-Disposition no name breaks out of', () => {
    assert.equal(
      contentDisposition('a "b"\\c;d é.txt'),
      `attachment; filename="a _b__c;d _.txt"; filename*=UTF-8''a%20%22b%22%5Cc%3Bd%20%C3%A9.txt`,
    );
  });
});

describe('files of a session', () => {
  let hello: { id: string };

  it('an upload over HTTP (FormData) is listed and its bytes come back identical, served as a download', async () => {
    const form = new FormData();
    form.append('file', new Blob(['hello, files\n'], { type: 'text/plain' }), 'hello.txt');
    const res = await fetch(`http://${ctx.hostPort}${S}/${session.id}/files`, {
      method: 'POST',
      headers: alice.headers,
      body: form,
    });
    const body = (await res.json()) as { data: { id: string } };
    assert.equal(res.status, 201, JSON.stringify(body));
    hello = body.data;
    assert.match(body.data.id, UUID);
    assert.deepEqual(
      { ...body.data, id: undefined, createdAt: undefined },
      { id: undefined, name: 'hello.txt', size: 13, mimeType: 'text/plain', source: 'upload', createdAt: undefined },
    );
    assert.deepEqual(
      (await listOf()).map((f) => f.id),
      [hello.id],
    );
    const got = await bytesOf(session.id, hello.id);
    assert.equal(got.statusCode, 200);
    assert.equal(got.body, 'hello, files\n');
    assert.match(String(got.headers['content-type']), /^text\/plain/);
    assert.equal(got.headers['content-disposition'], `attachment; filename="hello.txt"; filename*=UTF-8''hello.txt`);
    assert.equal(got.headers['x-content-type-options'], 'nosniff');
    // On disk: under its id, inside the session's directory.
    assert.equal(
      fs.readFileSync(path.join(sessionDir(session.id), 'quarry-files', hello.id), 'utf8'),
      'hello, files\n',
    );
  });

  it('hostile names are sanitized and nothing is written outside the session directory', async () => {
    const tmpBefore = new Set(fs.readdirSync(os.tmpdir()));
    const cases: Array<[string, string | RegExp]> = [
      ['../../etc/passwd', 'passwd'],
      ['/etc/shadow', 'shadow'],
      ['..\\..\\windows\\win.ini', 'win.ini'],
      ['C:\\Users\\x\\evil.exe', 'evil.exe'],
      ['nul\0byte.txt', 'nulbyte.txt'],
      ['ctl\x01\x1b[31mred.txt', 'ctl[31mred.txt'],
      ['rtl\u202etxt.exe', 'rtltxt.exe'],
      ['..', 'file'],
      ['.', 'file'],
      ['dir/', 'file'],
      ['CON.txt', '_CON.txt'],
      [`${'a'.repeat(300)}.txt`, /^a{196}\.txt$/],
      [`${'é'.repeat(150)}.pdf`, /^é{98}\.pdf$/],
    ];
    const dir = sessionDir(session.id);
    for (const [given, expected] of cases) {
      const res = await upload(alice, session.id, given, Buffer.from(given));
      assert.equal(res.statusCode, 201, `${JSON.stringify(given)}: ${res.body}`);
      const file = res.json().data;
      if (typeof expected === 'string') assert.equal(file.name, expected, JSON.stringify(given));
      else assert.match(file.name, expected, JSON.stringify(given));
      assert.ok(Buffer.byteLength(file.name) <= 200);
      assert.deepEqual((await bytesOf(session.id, file.id)).rawPayload, Buffer.from(given));
    }
    const empty = await upload(alice, session.id, '', Buffer.from('x'));
    assert.equal(empty.statusCode, 201, empty.body);
    assert.equal(empty.json().data.name, 'file');
    // The file system: ids only, in the session's files directory; nothing new beside the session's directory.
    const stored = fs.readdirSync(path.join(dir, 'quarry-files'));
    for (const name of stored) assert.match(name, /^[0-9a-f-]{36}(\.json)?$/, name);
    assert.ok(!walk(dir).some((f) => /passwd|shadow|win\.ini|evil/.test(f)));
    assert.ok(!fs.existsSync(path.join(os.tmpdir(), 'etc')));
    const added = fs.readdirSync(os.tmpdir()).filter((e) => !tmpBefore.has(e) && !e.startsWith('quarry-'));
    assert.deepEqual(
      added.filter((e) => /passwd|shadow|etc|win|evil/.test(e)),
      [],
    );
  });

  it('beyond BROWSER_FILE_MAX_MB: 413 PAYLOAD_TOO_LARGE, and nothing is kept', async () => {
    const before = (await listOf()).length;
    const res = await upload(alice, session.id, 'big.bin', Buffer.alloc(1024 * 1024 + 1, 7));
    assert.equal(res.statusCode, 413, res.body);
    assert.equal(res.json().error.code, 'PAYLOAD_TOO_LARGE');
    assert.equal(res.json().error.details[0].field, 'file');
    assert.equal((await listOf()).length, before);
    assert.ok(!fs.readdirSync(path.join(sessionDir(session.id), 'quarry-files')).some((f) => f.endsWith('.part')));
    const exact = await upload(alice, session.id, 'exact.bin', Buffer.alloc(1024 * 1024, 7));
    assert.equal(exact.statusCode, 201, exact.body);
    await ctx.api(alice, 'DELETE', `${S}/${session.id}/files/${exact.json().data.id}`);
  });

  it('bad uploads: 400 naming the field', async () => {
    const json = await ctx.api(alice, 'POST', `${S}/${session.id}/files`, { file: 'x' });
    assert.equal(json.statusCode, 400);
    assert.equal(json.json().error.details[0].field, 'file');
    const boundary = 'b0';
    const field = await ctx.app.inject({
      method: 'POST',
      url: `${S}/${session.id}/files`,
      headers: { ...alice.headers, 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: `--${boundary}\r\nContent-Disposition: form-data; name="note"\r\n\r\nhi\r\n--${boundary}--\r\n`,
    });
    assert.equal(field.statusCode, 400, field.body);
    assert.equal(field.json().error.details[0].field, 'file');
  });

  it('delete: gone from the list, the bytes and the disk; again 404', async () => {
    const res = await upload(alice, session.id, 'tmp.txt', Buffer.from('tmp'));
    const { id } = res.json().data;
    const onDisk = path.join(sessionDir(session.id), 'quarry-files', id);
    assert.ok(fs.existsSync(onDisk));
    assert.equal((await ctx.api(alice, 'DELETE', `${S}/${session.id}/files/${id}`)).statusCode, 200);
    assert.ok(!(await listOf()).some((f) => f.id === id));
    assert.equal((await bytesOf(session.id, id)).statusCode, 404);
    assert.ok(!fs.existsSync(onDisk) && !fs.existsSync(`${onDisk}.json`));
    assert.equal((await ctx.api(alice, 'DELETE', `${S}/${session.id}/files/${id}`)).statusCode, 404);
    assert.equal((await bytesOf(session.id, 'not-an-id')).statusCode, 404);
    assert.equal((await bytesOf(session.id, '..%2F..%2Fetc%2Fpasswd')).statusCode, 404);
  });

  it('the archive: a ZIP of every file, same names (made unique) and bytes', async () => {
    const binary = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 31) % 256));
    const twin = await upload(alice, session.id, 'hello.txt', binary);
    assert.equal(twin.statusCode, 201);
    const files = await listOf();
    const res = await ctx.app.inject({
      method: 'GET',
      url: `${S}/${session.id}/files/archive`,
      headers: { ...alice.headers, host: ctx.hostPort },
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/zip');
    assert.match(String(res.headers['content-disposition']), /^attachment; filename="files-/);
    const entries = unzipSync(new Uint8Array(res.rawPayload));
    assert.equal(Object.keys(entries).length, files.length);
    assert.deepEqual(Buffer.from(entries['hello.txt']), binary, 'the newest of two same-named files keeps the name');
    assert.equal(Buffer.from(entries['hello (2).txt']).toString(), 'hello, files\n');
    assert.equal(Buffer.from(entries.passwd).toString(), '../../etc/passwd');
    for (const name of Object.keys(entries)) assert.ok(!name.includes('/') && !name.includes('\\'), name);
  });

  it('attach: the page sees the files under their names, with their bytes', async () => {
    const nav = await ctx.api(alice, 'POST', `${S}/${session.id}/actions/navigate`, { url: `${site.url}/` });
    assert.equal(nav.statusCode, 200, JSON.stringify(nav.json()));
    const csv = (await upload(alice, session.id, 'leads.csv', REPORT)).json().data;
    const res = await ctx.api(alice, 'POST', `${S}/${session.id}/files/attach`, {
      selector: '#pick',
      fileIds: [hello.id, csv.id],
    });
    assert.equal(res.statusCode, 200, JSON.stringify(res.json()));
    assert.deepEqual(
      res.json().data.files.map((f: { name: string }) => f.name),
      ['hello.txt', 'leads.csv'],
    );
    assert.match(res.json().data.tabId, /^tab_/);
    const seen = await evaluate(
      `const files = [...document.getElementById('pick').files];
       return Promise.all(files.map(async (f) => [f.name, f.size, await f.text()]));`,
    );
    assert.deepEqual(seen, [
      ['hello.txt', 13, 'hello, files\n'],
      ['leads.csv', REPORT.length, REPORT.toString()],
    ]);
    const missing = await ctx.api(alice, 'POST', `${S}/${session.id}/files/attach`, {
      selector: '#nope',
      fileIds: [hello.id],
      timeoutMs: 300,
    });
    assert.equal(missing.statusCode, 422, JSON.stringify(missing.json()));
    assert.equal(missing.json().error.code, 'ACTION_FAILED');
    const notInput = await ctx.api(alice, 'POST', `${S}/${session.id}/files/attach`, {
      selector: '#report',
      fileIds: [hello.id],
    });
    assert.equal(notInput.statusCode, 422, JSON.stringify(notInput.json()));
    assert.equal(notInput.json().error.details[0].field, 'attach');
    const unknown = await ctx.api(alice, 'POST', `${S}/${session.id}/files/attach`, {
      selector: '#pick',
      fileIds: [hello.id, '0190e4a0-0000-7000-8000-000000000000'],
    });
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.json().error.details[0].field, 'fileIds.1');
    const bad = await ctx.api(alice, 'POST', `${S}/${session.id}/files/attach`, { selector: '#pick', fileIds: [] });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().error.details[0].field, 'fileIds');
  });

  it('downloads a click triggers become files with their bytes; partial ones are not listed', async () => {
    const click = (selector: string) =>
      ctx.api(alice, 'POST', `${S}/${session.id}/actions/click`, { selector }).then((r) => {
        assert.equal(r.statusCode, 200, JSON.stringify(r.json()));
      });
    await click('#report');
    const report = await eventually(async () => (await listOf()).find((f) => f.source === 'download'));
    assert.equal(report.name, 'report.csv');
    assert.equal(report.size, REPORT.length);
    assert.deepEqual((await bytesOf(session.id, report.id)).rawPayload, REPORT);

    await click('#hostile');
    const hostile = await eventually(async () =>
      (await listOf()).find((f) => f.source === 'download' && f.id !== report.id),
    );
    assert.ok(!hostile.name.includes('/') && hostile.name.endsWith('escape.txt'), hostile.name);
    assert.equal((await bytesOf(session.id, hostile.id)).body, 'outside?');
    assert.ok(!fs.existsSync(path.join(os.tmpdir(), 'escape.txt')));

    await click('#slow');
    const downloads = path.join(sessionDir(session.id), 'Downloads');
    await eventually(async () => fs.readdirSync(downloads).some((f) => f.endsWith('.crdownload')));
    const during = await listOf();
    assert.ok(!during.some((f) => f.name.includes('slow') || f.name.endsWith('.crdownload')), JSON.stringify(during));
    site.finishSlow();
    const slow = await eventually(async () => (await listOf()).find((f) => f.name === 'slow.bin'));
    assert.equal(slow.size, 64 * 1024 + 10);
    assert.equal(slow.source, 'download');
    assert.deepEqual(fs.readdirSync(downloads), [], 'taken out of the Downloads directory');
  });

  it('X-Client-Ref and other users: 404 on every files route', async () => {
    const [fileId] = (await listOf()).map((f) => f.id);
    const routes: Array<['GET' | 'DELETE' | 'POST', string, unknown?]> = [
      ['GET', 'files'],
      ['GET', 'files/archive'],
      ['GET', `files/${fileId}`],
      ['DELETE', `files/${fileId}`],
      ['POST', 'files/attach', { selector: '#pick', fileIds: [fileId] }],
    ];
    for (const [method, rest, body] of routes) {
      const url = `${S}/${session.id}/${rest}`;
      assert.equal((await ctx.api(bob, method, url, body)).statusCode, 404, `bob ${method} ${rest}`);
      assert.equal((await ctx.api(alice, method, url, body, A)).statusCode, 404, `ref ${method} ${rest}`);
    }
    assert.equal((await upload(bob, session.id, 'x.txt', Buffer.from('x'))).statusCode, 404);
    assert.equal((await upload(alice, session.id, 'x.txt', Buffer.from('x'), A)).statusCode, 404);
    assert.ok(
      (await listOf()).some((f) => f.id === fileId),
      'still there',
    );
    // The tenant's session: its ref sees it, another ref does not.
    const mine = await upload(alice, tenant.id, 't.txt', Buffer.from('t'), A);
    assert.equal(mine.statusCode, 201, mine.body);
    assert.equal((await ctx.api(alice, 'GET', `${S}/${tenant.id}/files`, undefined, A)).json().data.files.length, 1);
    const other = { 'x-client-ref': 'tenant-b' };
    assert.equal((await ctx.api(alice, 'GET', `${S}/${tenant.id}/files`, undefined, other)).statusCode, 404);
    assert.equal((await upload(alice, tenant.id, 'x.txt', Buffer.from('x'), other)).statusCode, 404);
  });

  it('browser:read lists and reads; uploads, deletes and attach need browser:write', async () => {
    const key = await ctx.api(alice, 'POST', '/api/api-keys', { name: 'reader', scopes: ['browser:read'] });
    const reader = { ...alice, headers: { authorization: `Bearer ${key.json().data.apiKey.key}` } };
    const [fileId] = (await listOf()).map((f) => f.id);
    assert.equal((await ctx.api(reader, 'GET', `${S}/${session.id}/files`)).statusCode, 200);
    assert.equal((await bytesOf(session.id, fileId, reader)).statusCode, 200);
    assert.equal((await ctx.api(reader, 'GET', `${S}/${session.id}/files/archive`)).statusCode, 200);
    const refused = [
      await upload(reader, session.id, 'x.txt', Buffer.from('x')),
      await ctx.api(reader, 'DELETE', `${S}/${session.id}/files/${fileId}`),
      await ctx.api(reader, 'POST', `${S}/${session.id}/files/attach`, { selector: '#pick', fileIds: [fileId] }),
    ];
    for (const res of refused) {
      assert.equal(res.statusCode, 403);
      assert.equal(res.json().error.code, 'INSUFFICIENT_SCOPE');
    }
  });

  it('every files route is documented: the tag, a summary, an operationId', async () => {
    const document = (await ctx.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    const operations = Object.entries(document.paths as Record<string, Record<string, Record<string, unknown>>>)
      .filter(([p]) => p.startsWith('/api/browser/sessions/{id}/files'))
      .flatMap(([p, methods]) =>
        Object.entries(methods).map(([method, op]) => ({ key: `${method.toUpperCase()} ${p}`, op })),
      );
    assert.equal(operations.length, 6);
    for (const { key, op } of operations) {
      assert.deepEqual(op.tags, ['Cloud Browser'], key);
      assert.ok(op.summary, key);
      assert.equal(op.operationId, operationIds[key], key);
    }
  });

  it('the files go with the session: after release 400 INVALID_STATE, and the directory is gone', async () => {
    const dir = sessionDir(tenant.id);
    assert.ok(fs.existsSync(path.join(dir, 'quarry-files')));
    assert.equal((await ctx.api(alice, 'DELETE', `${S}/${tenant.id}`, undefined, A)).statusCode, 200);
    const res = await ctx.api(alice, 'GET', `${S}/${tenant.id}/files`, undefined, A);
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().error.code, 'INVALID_STATE');
    const late = await upload(alice, tenant.id, 'late.txt', Buffer.from('late'), A);
    assert.equal(late.statusCode, 400, late.body);
    assert.equal(late.json().error.code, 'INVALID_STATE');
    assert.ok(!fs.existsSync(dir), 'nothing made the directory again');
  });
});
