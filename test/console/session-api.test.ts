import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { apiKeys } from '../../src/db/schema/index.ts';
import { createTestContext, type TestContext } from '../helpers/app.ts';
import { assertError, assertValidation } from '../helpers/assertions.ts';

let ctx: TestContext;
let address = 0;
before(async () => {
  ctx = await createTestContext({ workers: false });
});
after(async () => ctx?.close());

/** Each call from its own address: the per-IP sign-in limit is tested in test/auth.test.ts. */
const post = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
  ctx.inject({ method: 'POST', url, payload: payload as object, headers, remoteAddress: `127.3.0.${++address}` });
const cookieOf = (res: { headers: Record<string, unknown> }) =>
  /quarry_session=([^;]*)/.exec(String(res.headers['set-cookie']))?.[1];

test('sign-up: bad input names the field and writes nothing; a good one sets an HttpOnly Lax cookie, not a key', async () => {
  const email = `c-${Date.now()}@example.com`;
  const base = { email, password: 'long enough pw', termsAccepted: true, privacyAccepted: true };
  assertValidation(await post('/api/console/sign-up', { ...base, privacyAccepted: false }), 'privacyAccepted');
  assertValidation(await post('/api/console/sign-up', { ...base, password: 'short' }), 'password');
  assertValidation(await post('/api/console/sign-up', { ...base, email: 'nope' }), 'email');
  // Nothing was created by the refused ones: the email is still free.
  const res = await post('/api/console/sign-up', base);
  assert.equal(res.statusCode, 201);
  const setCookie = String(res.headers['set-cookie']);
  assert.match(setCookie, /HttpOnly/);
  assert.match(setCookie, /SameSite=Lax/);
  assert.doesNotMatch(setCookie, /Secure/);
  assert.equal(res.json().data.apiKey, undefined);
  assert.equal(res.json().data.user.email, email);
  assert.equal(typeof res.json().data.csrfToken, 'string');
  assertError(await post('/api/console/sign-up', base), 409, 'CONFLICT');
});

test('sign-in: wrong password 401, other origin 403; the session answers the same user and CSRF token', async () => {
  const user = await ctx.signup();
  assertError(
    await post('/api/console/sign-in', { email: user.email, password: 'wrong one!' }),
    401,
    'INVALID_CREDENTIALS',
  );
  assertValidation(await post('/api/console/sign-in', { email: user.email }), 'password');
  const cross = await post(
    '/api/console/sign-in',
    { email: user.email, password: 'correct horse battery' },
    { origin: 'http://evil.example' },
  );
  assertError(cross, 403, 'FORBIDDEN');
  assert.equal(cross.headers['set-cookie'], undefined);

  const res = await post('/api/console/sign-in', { email: user.email, password: 'correct horse battery' });
  assert.equal(res.statusCode, 200);
  const key = cookieOf(res)!;
  const session = await ctx.inject({
    method: 'GET',
    url: '/api/console/session',
    headers: { cookie: `quarry_session=${key}` },
  });
  assert.equal(session.statusCode, 200);
  assert.deepEqual(session.json().data, {
    user: { id: user.id, email: user.email },
    csrfToken: res.json().data.csrfToken,
  });
  // With a bearer key there is no cookie to protect: no token.
  const bearer = await ctx.call(user, 'GET', '/api/console/session');
  assert.equal(bearer.json().data.csrfToken, '');
  // Signed out (no cookie, no key): 401.
  assertError(await ctx.inject({ method: 'GET', url: '/api/console/session' }), 401, 'UNAUTHORIZED');
});

test('sign-out needs the CSRF token, revokes the session everywhere and clears the cookie', async () => {
  const user = await ctx.signup();
  const res = await post('/api/console/sign-in', { email: user.email, password: 'correct horse battery' });
  const key = cookieOf(res)!;
  const cookie = `quarry_session=${key}`;
  assertError(await post('/api/console/sign-out', {}, { cookie }), 403, 'FORBIDDEN');
  const ok = await post('/api/console/sign-out', {}, { cookie, 'x-csrf-token': res.json().data.csrfToken });
  assert.equal(ok.statusCode, 200);
  assert.match(String(ok.headers['set-cookie']), /quarry_session=;.*Max-Age=0/);
  assertError(await ctx.inject({ method: 'GET', url: '/api/projects', headers: { cookie } }), 401, 'UNAUTHORIZED');
});

test('a cookie-authenticated request from another origin is refused even when safe; a bearer one is not checked', async () => {
  const user = await ctx.signup();
  const res = await post('/api/console/sign-in', { email: user.email, password: 'correct horse battery' });
  const cookie = `quarry_session=${cookieOf(res)}`;
  const read = (headers: Record<string, string>) => ctx.inject({ method: 'GET', url: '/api/projects', headers });
  assert.equal((await read({ cookie })).statusCode, 200);
  assert.equal((await read({ cookie, origin: 'http://localhost:80' })).statusCode, 200);
  assertError(await read({ cookie, origin: 'http://localhost:8081' }), 403, 'FORBIDDEN');
  assert.equal((await read({ ...user.headers, origin: 'http://localhost:8081' })).statusCode, 200);
});

test('the shell: / for browsers (CSP, no cache), JSON pointers for others; assets and vendor modules served', async () => {
  const page = await ctx.inject({ method: 'GET', url: '/', headers: { accept: 'text/html' } });
  assert.equal(page.statusCode, 200);
  assert.match(String(page.headers['content-security-policy']), /script-src 'self'/);
  assert.match(page.body, /<script type="module" src="\/console\/app.js">/);
  const leads = await ctx.inject({ method: 'GET', url: '/leads/123', headers: { accept: 'text/html' } });
  assert.equal(leads.body, page.body);
  const app = await ctx.inject({ method: 'GET', url: '/console/app.js' });
  assert.equal(app.statusCode, 200);
  assert.match(String(app.headers['content-type']), /javascript/);
  const again = await ctx.inject({
    method: 'GET',
    url: '/console/app.js',
    headers: { 'if-none-match': String(app.headers.etag) },
  });
  assert.equal(again.statusCode, 304);
  const hooks = await ctx.inject({ method: 'GET', url: '/console/vendor/hooks.mjs' });
  assert.match(hooks.body, /from"\/console\/vendor\/preact.mjs"/);
  assert.equal((await ctx.inject({ method: 'GET', url: '/console/../package.json' })).statusCode, 404);
  assert.equal((await ctx.inject({ method: 'GET', url: '/console/nope.js' })).statusCode, 404);
});

test('a new password ends the other console sessions, keeps the one that changed it, and leaves API keys alone', async () => {
  const user = await ctx.signup();
  const signIn = async () => {
    const res = await post('/api/console/sign-in', { email: user.email, password: 'correct horse battery' });
    return { cookie: `quarry_session=${cookieOf(res)}`, csrf: res.json().data.csrfToken as string };
  };
  const [here, elsewhere] = [await signIn(), await signIn()];
  const changed = await ctx.inject({
    method: 'PATCH',
    url: '/api/users/password',
    headers: { cookie: here.cookie, 'x-csrf-token': here.csrf },
    payload: { currentPassword: 'correct horse battery', newPassword: 'a brand new password' },
  });
  assert.equal(changed.statusCode, 200, changed.body);
  const read = (cookie: string) => ctx.inject({ method: 'GET', url: '/api/projects', headers: { cookie } });
  assert.equal((await read(here.cookie)).statusCode, 200);
  assertError(await read(elsewhere.cookie), 401, 'UNAUTHORIZED');
  assert.equal((await ctx.call(user, 'GET', '/api/projects')).statusCode, 200);
});

test('a console session is not an API key: its id is 404 to rotate and revoke, and it is never listed while live', async () => {
  const user = await ctx.signup();
  const res = await post('/api/console/sign-in', { email: user.email, password: 'correct horse battery' });
  assert.equal(res.statusCode, 200);
  const [row] = await ctx.deps.db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(eq(apiKeys.userId, user.id), eq(apiKeys.kind, 'console')));
  assert.ok(row, 'the sign-in stored a console-kind key');
  const listed = await ctx.call(user, 'GET', '/api/api-keys');
  assert.deepEqual(
    listed.json().data.apiKeys.map((k: { name: string }) => k.name),
    ['signup'],
    'only the API key of the signup is listed',
  );
  assertError(await ctx.call(user, 'POST', `/api/api-keys/${row.id}/rotate`), 404, 'NOT_FOUND');
  assertError(await ctx.call(user, 'DELETE', `/api/api-keys/${row.id}`), 404, 'NOT_FOUND');
  const cookie = `quarry_session=${cookieOf(res)}`;
  assert.equal((await ctx.inject({ method: 'GET', url: '/api/projects', headers: { cookie } })).statusCode, 200);
});

test('another port of the host cannot steer the session: two session cookies are refused, cross-site loads too', async () => {
  const user = await ctx.signup();
  const res = await post('/api/console/sign-in', { email: user.email, password: 'correct horse battery' });
  const key = cookieOf(res)!;
  const attacker = await ctx.signup();
  const theirs = cookieOf(
    await post('/api/console/sign-in', { email: attacker.email, password: 'correct horse battery' }),
  );
  // A page on another port can add a quarry_session with a longer path, which the browser sends first.
  const both = await ctx.inject({
    method: 'GET',
    url: '/api/console/session',
    headers: { cookie: `quarry_session=${theirs}; quarry_session=${key}` },
  });
  assertError(both, 401, 'UNAUTHORIZED');
  assert.equal(both.json().error.details[0].field, 'cookie');
  // An image or script tag of another site sends no Origin, but says where it comes from.
  const cookie = `quarry_session=${key}`;
  for (const site of ['same-site', 'cross-site']) {
    const read = await ctx.inject({ method: 'GET', url: '/api/projects', headers: { cookie, 'sec-fetch-site': site } });
    assertError(read, 403, 'FORBIDDEN');
  }
  for (const site of ['same-origin', 'none']) {
    const read = await ctx.inject({ method: 'GET', url: '/api/projects', headers: { cookie, 'sec-fetch-site': site } });
    assert.equal(read.statusCode, 200);
  }
});

test('signing in again ends the session the cookie held; signing out with a dead session just clears the cookie', async () => {
  const user = await ctx.signup();
  const first = cookieOf(await post('/api/console/sign-in', { email: user.email, password: 'correct horse battery' }));
  const again = await post(
    '/api/console/sign-in',
    { email: user.email, password: 'correct horse battery' },
    { cookie: `quarry_session=${first}` },
  );
  assert.equal(again.statusCode, 200);
  const read = (key: string | undefined) =>
    ctx.inject({ method: 'GET', url: '/api/projects', headers: { cookie: `quarry_session=${key}` } });
  assertError(await read(first), 401, 'UNAUTHORIZED');
  assert.equal((await read(cookieOf(again))).statusCode, 200);
  // The first cookie is dead: sign-out needs no token to clear it (nothing is left to protect).
  const out = await post('/api/console/sign-out', {}, { cookie: `quarry_session=${first}` });
  assert.equal(out.statusCode, 200);
  assert.match(String(out.headers['set-cookie']), /Max-Age=0/);
});

test('the maintenance purge deletes console sessions ended over 30 days ago, and nothing else', async () => {
  const user = await ctx.signup();
  const signIn = async () =>
    cookieOf(await post('/api/console/sign-in', { email: user.email, password: 'correct horse battery' }))!;
  // Four console sessions: signed out long ago, expired long ago, signed out yesterday, live.
  for (let i = 0; i < 4; i++) await signIn();
  const consoleKeys = () =>
    ctx.deps.db
      .select({ id: apiKeys.id, revokedAt: apiKeys.revokedAt })
      .from(apiKeys)
      .where(and(eq(apiKeys.userId, user.id), eq(apiKeys.kind, 'console')))
      .orderBy(apiKeys.createdAt, apiKeys.id);
  const rows = await consoleKeys();
  assert.equal(rows.length, 4);
  const day = 24 * 60 * 60_000;
  const ago = (days: number) => new Date(Date.now() - days * day);
  const set = (id: string, values: Partial<typeof apiKeys.$inferInsert>) =>
    ctx.deps.db.update(apiKeys).set(values).where(eq(apiKeys.id, id));
  await set(rows[0]!.id, { revokedAt: ago(31) });
  await set(rows[1]!.id, { revokedAt: null, expiresAt: ago(31) });
  await set(rows[2]!.id, { revokedAt: ago(1) });
  await set(rows[3]!.id, { revokedAt: null });
  // The signup's API key, revoked long ago, stays: only console sessions are purged.
  const [apiKey] = await ctx.deps.db
    .update(apiKeys)
    .set({ revokedAt: ago(60) })
    .where(and(eq(apiKeys.userId, user.id), eq(apiKeys.kind, 'api')))
    .returning({ id: apiKeys.id });
  assert.ok(apiKey);

  assert.ok((await ctx.deps.apiKeys.purgeEndedConsoleSessions()) >= 2);
  assert.deepEqual(
    (await consoleKeys()).map((r) => r.id),
    [rows[2]!.id, rows[3]!.id],
  );
  const [kept] = await ctx.deps.db.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.id, apiKey.id));
  assert.ok(kept, 'the revoked API key is kept');
});
