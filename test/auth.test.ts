import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createTestContext, type TestContext } from './helpers/app.ts';

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext();
});
after(async () => ctx?.close());

const signupBody = (email: string) => ({
  email,
  password: 'long enough pw',
  termsAccepted: true,
  privacyAccepted: true,
});

describe('POST /api/auth/signup', () => {
  test('201 with the user and an API key; the key authenticates', async () => {
    const res = await ctx.inject({
      method: 'POST',
      url: '/api/auth/signup',
      remoteAddress: '127.0.9.1',
      payload: { ...signupBody('New@Example.com'), name: 'Ada' },
    });
    assert.equal(res.statusCode, 201);
    const body = res.json();
    assert.equal(body.success, true);
    assert.equal(body.data.user.email, 'new@example.com');
    assert.equal(body.data.user.name, 'Ada');
    assert.match(body.data.user.id, /^[0-9a-f-]{36}$/);
    assert.ok(Date.parse(body.data.user.createdAt));
    assert.match(body.data.apiKey, /^qk_live_[0-9A-Za-z]{49}$/);
    assert.equal(body.data.user.passwordHash, undefined);
    const me = await ctx.inject({
      method: 'GET',
      url: '/api/users',
      headers: { authorization: `Bearer ${body.data.apiKey}` },
    });
    assert.equal(me.statusCode, 200);
    assert.equal(me.json().data.user.email, 'new@example.com');
  });

  test('the password is stored as an argon2id hash and the key only as SHA-256', async () => {
    const u = await ctx.signup();
    const [row] = await ctx.deps.database.query<{ password_hash: string }>(
      'SELECT password_hash FROM users WHERE id = $1',
      [u.id],
    );
    assert.match(row!.password_hash, /^\$argon2id\$/);
    const keys = await ctx.deps.database.query<{ key_hash: string; prefix: string }>(
      'SELECT key_hash, prefix FROM api_keys WHERE user_id = $1',
      [u.id],
    );
    assert.equal(keys.length, 1);
    assert.match(keys[0]!.key_hash, /^[0-9a-f]{64}$/);
    assert.equal(keys[0]!.prefix, u.apiKey.slice(0, 12));
    const all = JSON.stringify(await ctx.deps.database.query('SELECT * FROM api_keys WHERE user_id = $1', [u.id]));
    assert.ok(!all.includes(u.apiKey));
  });

  test('409 CONFLICT for an email that exists (any case)', async () => {
    const u = await ctx.signup();
    const res = await ctx.inject({
      method: 'POST',
      url: '/api/auth/signup',
      remoteAddress: '127.0.9.2',
      payload: signupBody(u.email.toUpperCase()),
    });
    assert.equal(res.statusCode, 409);
    assert.equal(res.json().error.code, 'CONFLICT');
  });

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ['bad email', { ...signupBody('not-an-email') }, 'email'],
    ['short password', { ...signupBody('a@example.com'), password: 'short' }, 'password'],
    ['terms not accepted', { ...signupBody('b@example.com'), termsAccepted: false }, 'termsAccepted'],
    ['privacy missing', { email: 'c@example.com', password: 'long enough pw', termsAccepted: true }, 'privacyAccepted'],
    ['wrong type', { ...signupBody('d@example.com'), marketingConsent: 'yes' }, 'marketingConsent'],
  ];
  for (const [name, payload, field] of invalid) {
    test(`400 VALIDATION_ERROR naming the field: ${name}`, async () => {
      const res = await ctx.inject({
        method: 'POST',
        url: '/api/auth/signup',
        remoteAddress: `127.0.10.${invalid.findIndex((i) => i[0] === name) + 1}`,
        payload,
      });
      assert.equal(res.statusCode, 400);
      const body = res.json();
      assert.equal(body.success, false);
      assert.equal(body.error.code, 'VALIDATION_ERROR');
      assert.ok(
        body.error.details.some((d: { field: string }) => d.field === field),
        JSON.stringify(body.error.details),
      );
    });
  }

  test('malformed JSON is a 400 VALIDATION_ERROR, not a 500', async () => {
    const res = await ctx.inject({
      method: 'POST',
      url: '/api/auth/signup',
      remoteAddress: '127.0.11.1',
      headers: { 'content-type': 'application/json' },
      payload: '{"email": "x@y.z",',
    });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().error.code, 'VALIDATION_ERROR');
    assert.equal(res.json().error.details[0].field, 'body');
  });
});

describe('POST /api/auth/login', () => {
  test('200 with a new key; wrong password 401 INVALID_CREDENTIALS', async () => {
    const u = await ctx.signup({ password: 'my secret pw' });
    const ok = await ctx.inject({
      method: 'POST',
      url: '/api/auth/login',
      remoteAddress: '127.0.12.1',
      payload: { email: u.email, password: 'my secret pw' },
    });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.json().data.user.id, u.id);
    assert.notEqual(ok.json().data.apiKey, u.apiKey);
    const bad = await ctx.inject({
      method: 'POST',
      url: '/api/auth/login',
      remoteAddress: '127.0.12.1',
      payload: { email: u.email, password: 'wrong pw!' },
    });
    assert.equal(bad.statusCode, 401);
    assert.equal(bad.json().error.code, 'INVALID_CREDENTIALS');
    const unknown = await ctx.inject({
      method: 'POST',
      url: '/api/auth/login',
      remoteAddress: '127.0.12.1',
      payload: { email: 'nobody@example.com', password: 'whatever1' },
    });
    assert.equal(unknown.statusCode, 401);
  });
});

describe('authentication', () => {
  test('401 UNAUTHORIZED without, or with a malformed, unknown or revoked credential', async () => {
    const u = await ctx.signup();
    const tampered = u.apiKey.slice(0, -1) + (u.apiKey.endsWith('x') ? 'y' : 'x'); // checksum no longer matches
    for (const authorization of [
      undefined,
      'Basic abc',
      'Bearer nope',
      `Bearer ${tampered}`,
      `Bearer qk_live_${'A'.repeat(49)}`,
    ]) {
      const res = await ctx.inject({
        method: 'GET',
        url: '/api/users',
        headers: authorization ? { authorization } : {},
      });
      assert.equal(res.statusCode, 401, String(authorization));
      assert.deepEqual(Object.keys(res.json()).sort(), ['error', 'success']);
      assert.equal(res.json().error.code, 'UNAUTHORIZED');
    }
  });

  test("a key without 'Bearer', or another scheme: 401 saying the header's form, never echoing the key", async () => {
    const u = await ctx.signup();
    for (const authorization of [u.apiKey, `Basic ${u.apiKey}`, `Bearer`, `Bearer ${u.apiKey} extra`]) {
      const res = await ctx.inject({ method: 'GET', url: '/api/users', headers: { authorization } });
      assert.equal(res.statusCode, 401, authorization);
      const { error } = res.json();
      assert.equal(error.code, 'UNAUTHORIZED');
      assert.match(error.message, /Authorization header must be 'Bearer <API key>'/);
      assert.deepEqual(error.details, [{ field: 'authorization', message: "must be 'Bearer <API key>'" }]);
      assert.ok(!res.body.includes(u.apiKey), 'the key is not echoed');
    }
    const missing = await ctx.inject({ method: 'GET', url: '/api/users' });
    assert.match(missing.json().error.message, /^Authentication required/);
  });

  test('unknown routes answer 404 NOT_FOUND in the envelope', async () => {
    const res = await ctx.inject({ method: 'GET', url: '/api/nothing-here' });
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), {
      success: false,
      error: { code: 'NOT_FOUND', message: 'Route GET /api/nothing-here not found' },
    });
  });
});

describe('rate limits', () => {
  test('signup: 5 per 15 minutes per IP, counted on the socket address of real connections', async () => {
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = ctx.app.server.address() as { port: number };
    const post = (localAddress: string, n: number) =>
      new Promise<number>((resolve, reject) => {
        const body = JSON.stringify(signupBody(`rl-${localAddress}-${n}-${Date.now()}@example.com`));
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            localAddress,
            method: 'POST',
            path: '/api/auth/signup',
            headers: { 'content-type': 'application/json', 'x-forwarded-for': `10.0.0.${n}` },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode!));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push(await post('127.0.0.21', i));
    assert.deepEqual(statuses, [201, 201, 201, 201, 201, 429]);
    // Another source address has its own budget; X-Forwarded-For is ignored without TRUST_PROXY.
    assert.equal(await post('127.0.0.22', 9), 201);
    const retry = await ctx.inject({
      method: 'POST',
      url: '/api/auth/signup',
      remoteAddress: '127.0.0.21',
      payload: signupBody('late@example.com'),
    });
    assert.equal(retry.statusCode, 429);
    assert.equal(retry.json().error.code, 'RATE_LIMIT_EXCEEDED');
    assert.ok(Number(retry.headers['retry-after']) > 0);
  });

  test('invalid requests count too, and the count lives in the database', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await ctx.inject({
        method: 'POST',
        url: '/api/auth/login',
        remoteAddress: '127.0.0.31',
        payload: { email: 'bad' },
      });
      assert.equal(res.statusCode, 400);
    }
    const res = await ctx.inject({
      method: 'POST',
      url: '/api/auth/login',
      remoteAddress: '127.0.0.31',
      payload: { email: 'x@example.com', password: 'whatever1' },
    });
    assert.equal(res.statusCode, 429);
    const [row] = await ctx.deps.database.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM rate_limit_events WHERE bucket = 'auth:login' AND subject = '127.0.0.31'`,
    );
    assert.equal(Number(row!.n), 6);
  });
});

describe('signup name', () => {
  test('optional: empty or null means no name', async () => {
    for (const [i, name] of ['', null].entries()) {
      const res = await ctx.inject({
        method: 'POST',
        url: '/api/auth/signup',
        remoteAddress: `127.0.13.${i + 1}`,
        payload: { ...signupBody(`noname${i}@example.com`), name },
      });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.json().data.user.name, null);
    }
  });
});
