import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../src/app.ts';
import { assembleDeps } from '../src/assemble-deps.ts';
import { ManualClock } from '../src/shared/clock.ts';
import { createNotifier } from '../src/shared/notify.ts';
import { asAnotherInstance, createTestContext, eventually, type TestContext } from './helpers/app.ts';

const clock = new ManualClock(new Date('2026-03-01T10:00:00Z'));
let ctx: TestContext;
before(async () => {
  ctx = await createTestContext({ clock });
});
after(async () => ctx?.close());

const create = (headers: Record<string, string>, payload: unknown) =>
  ctx.inject({ method: 'POST', url: '/api/api-keys', headers, payload: payload as object });

describe('API keys', () => {
  test('mint a scoped key: shown once, listed by prefix, scopes enforced', async () => {
    const u = await ctx.signup();
    const res = await create(u.headers, { name: 'reader', scopes: ['leads:read', 'users:read'] });
    assert.equal(res.statusCode, 201);
    const key = res.json().data.apiKey;
    assert.match(key.key, /^qk_live_/);
    assert.equal(key.prefix, key.key.slice(0, 12));
    assert.deepEqual(key.scopes, ['leads:read', 'users:read']);

    const list = await ctx.inject({ method: 'GET', url: '/api/api-keys', headers: u.headers });
    assert.equal(list.statusCode, 200);
    const listed = list.json().data.apiKeys;
    assert.equal(listed.length, 2); // signup key + this one
    assert.ok(listed.every((k: Record<string, unknown>) => k.key === undefined && k.keyHash === undefined));
    assert.ok(listed.some((k: { prefix: string }) => k.prefix === key.prefix));

    const scoped = { authorization: `Bearer ${key.key}` };
    assert.equal((await ctx.inject({ method: 'GET', url: '/api/users', headers: scoped })).statusCode, 200);
    const denied = await ctx.inject({ method: 'GET', url: '/api/api-keys', headers: scoped });
    assert.equal(denied.statusCode, 403);
    assert.equal(denied.json().error.code, 'INSUFFICIENT_SCOPE');
    const write = await ctx.inject({
      method: 'PATCH',
      url: '/api/users/password',
      headers: scoped,
      payload: { currentPassword: 'x', newPassword: 'yyyyyyyy' },
    });
    assert.equal(write.statusCode, 403);
  });

  test('a key cannot mint a key with scopes it does not hold', async () => {
    const u = await ctx.signup();
    const limited = (await create(u.headers, { name: 'keys', scopes: ['api-keys:write'] })).json().data.apiKey.key;
    const res = await create({ authorization: `Bearer ${limited}` }, { name: 'escalate', scopes: ['*'] });
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().error.code, 'FORBIDDEN');
    const ok = await create({ authorization: `Bearer ${limited}` }, { name: 'same', scopes: ['api-keys:read'] });
    assert.equal(ok.statusCode, 201);
  });

  test('bad input names the field', async () => {
    const u = await ctx.signup();
    for (const [payload, field] of [
      [{ scopes: ['*'] }, 'name'],
      [{ name: 'x', scopes: ['leads:delete'] }, 'scopes.0'],
      [{ name: 'x', scopes: [] }, 'scopes'],
      [{ name: 'x', scopes: ['*'], expiresAt: 'tomorrow' }, 'expiresAt'],
      [{ name: 'x', scopes: ['*'], expiresAt: '2020-01-01T00:00:00Z' }, 'expiresAt'],
    ] as const) {
      const res = await create(u.headers, payload);
      assert.equal(res.statusCode, 400, JSON.stringify(payload));
      assert.equal(res.json().error.code, 'VALIDATION_ERROR');
      assert.ok(
        res.json().error.details.some((d: { field: string }) => d.field === field),
        `${field}: ${res.body}`,
      );
    }
  });

  test('an expiring key stops working at expiresAt', async () => {
    const u = await ctx.signup();
    const expiresAt = new Date(clock.now().getTime() + 60 * 60_000).toISOString();
    const key = (await create(u.headers, { name: 'short', scopes: ['*'], expiresAt })).json().data.apiKey.key;
    const h = { authorization: `Bearer ${key}` };
    assert.equal((await ctx.inject({ method: 'GET', url: '/api/users', headers: h })).statusCode, 200);
    clock.advance(61 * 60_000);
    assert.equal((await ctx.inject({ method: 'GET', url: '/api/users', headers: h })).statusCode, 401);
  });

  test('lastUsedAt is written, at most once a minute', async () => {
    const u = await ctx.signup();
    const readLastUsed = async () =>
      (
        await ctx.deps.database.query<{ last_used_at: Date | null }>(
          'SELECT last_used_at FROM api_keys WHERE user_id = $1',
          [u.id],
        )
      )[0]!.last_used_at;
    await ctx.inject({ method: 'GET', url: '/api/users', headers: u.headers });
    const first = await eventually(readLastUsed);
    clock.advance(20_000);
    await ctx.inject({ method: 'GET', url: '/api/users', headers: u.headers });
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await readLastUsed())!.getTime(), new Date(first).getTime());
    clock.advance(45_000);
    await ctx.inject({ method: 'GET', url: '/api/users', headers: u.headers });
    const second = await eventually(async () => {
      const v = await readLastUsed();
      return v && new Date(v).getTime() > new Date(first).getTime() ? v : undefined;
    });
    assert.equal(new Date(second).getTime(), clock.now().getTime());
  });

  test('rotate: a new key; the old one keeps working for 24 hours, then not', async () => {
    const u = await ctx.signup();
    const created = (await create(u.headers, { name: 'ci', scopes: ['users:read'] })).json().data.apiKey;
    const rotated = await ctx.inject({ method: 'POST', url: `/api/api-keys/${created.id}/rotate`, headers: u.headers });
    assert.equal(rotated.statusCode, 200);
    const fresh = rotated.json().data.apiKey;
    assert.notEqual(fresh.key, created.key);
    assert.deepEqual(fresh.scopes, ['users:read']);
    assert.equal(fresh.previousKey.id, created.id);
    const oldH = { authorization: `Bearer ${created.key}` };
    assert.equal((await ctx.inject({ method: 'GET', url: '/api/users', headers: oldH })).statusCode, 200);
    clock.advance(23 * 60 * 60_000);
    assert.equal((await ctx.inject({ method: 'GET', url: '/api/users', headers: oldH })).statusCode, 200);
    clock.advance(2 * 60 * 60_000);
    assert.equal((await ctx.inject({ method: 'GET', url: '/api/users', headers: oldH })).statusCode, 401);
    assert.equal(
      (await ctx.inject({ method: 'GET', url: '/api/users', headers: { authorization: `Bearer ${fresh.key}` } }))
        .statusCode,
      200,
    );
  });

  test("revoke works at once; another user's key is a 404", async () => {
    const u = await ctx.signup();
    const other = await ctx.signup();
    const created = (await create(u.headers, { name: 'tmp', scopes: ['*'] })).json().data.apiKey;
    const h = { authorization: `Bearer ${created.key}` };
    assert.equal((await ctx.inject({ method: 'GET', url: '/api/users', headers: h })).statusCode, 200); // now cached
    const foreign = await ctx.inject({ method: 'DELETE', url: `/api/api-keys/${created.id}`, headers: other.headers });
    assert.equal(foreign.statusCode, 404);
    assert.equal(
      (await ctx.inject({ method: 'DELETE', url: '/api/api-keys/not-a-uuid', headers: u.headers })).statusCode,
      404,
    );
    assert.equal(
      (await ctx.inject({ method: 'POST', url: `/api/api-keys/${created.id}/rotate`, headers: other.headers }))
        .statusCode,
      404,
    );
    const del = await ctx.inject({ method: 'DELETE', url: `/api/api-keys/${created.id}`, headers: u.headers });
    assert.equal(del.statusCode, 200);
    assert.equal((await ctx.inject({ method: 'GET', url: '/api/users', headers: h })).statusCode, 401);
    assert.equal(
      (await ctx.inject({ method: 'DELETE', url: `/api/api-keys/${created.id}`, headers: u.headers })).statusCode,
      404,
    );
  });

  test('a revoke in one process evicts the cached key in another process at once', async () => {
    // A second API instance on the same database, with its own key cache and its own listener.
    const notifier = createNotifier(ctx.deps.database, ctx.deps.config.DATABASE_URL);
    const deps2 = assembleDeps(asAnotherInstance({ ...ctx.deps, notifier }));
    const app2 = await buildApp(deps2);
    await app2.ready();
    try {
      const u = await ctx.signup();
      const created = (await create(u.headers, { name: 'shared', scopes: ['*'] })).json().data.apiKey;
      const h = { authorization: `Bearer ${created.key}` };
      const cachedInApp2 = await app2.inject({ method: 'GET', url: '/api/users', headers: h });
      assert.equal(cachedInApp2.statusCode, 200);
      await eventually(async () => true, 200); // give the listener time to be attached
      assert.equal(
        (await ctx.inject({ method: 'DELETE', url: `/api/api-keys/${created.id}`, headers: u.headers })).statusCode,
        200,
      );
      // No clock movement: without the notification app2 would serve its cached entry for 30 s.
      await eventually(
        async () => (await app2.inject({ method: 'GET', url: '/api/users', headers: h })).statusCode === 401,
        3000,
        20,
      );
    } finally {
      await app2.close();
      await notifier.close();
    }
  });
});

describe('API keys: who may manage which key', () => {
  test('a narrowly scoped key cannot rotate or revoke a broader key (no escalation through rotation)', async () => {
    const u = await ctx.signup();
    const narrow = (await create(u.headers, { name: 'keys only', scopes: ['api-keys:write'] })).json().data.apiKey;
    const narrowH = { authorization: `Bearer ${narrow.key}` };
    const keys = (await ctx.inject({ method: 'GET', url: '/api/api-keys', headers: u.headers })).json().data.apiKeys;
    const signupKey = keys.find((k: { name: string }) => k.name === 'signup');
    const rotate = await ctx.inject({ method: 'POST', url: `/api/api-keys/${signupKey.id}/rotate`, headers: narrowH });
    assert.equal(rotate.statusCode, 403);
    assert.equal(rotate.json().error.code, 'FORBIDDEN');
    assert.equal(
      (await ctx.inject({ method: 'DELETE', url: `/api/api-keys/${signupKey.id}`, headers: narrowH })).statusCode,
      403,
    );
    assert.equal(
      (await ctx.inject({ method: 'GET', url: '/api/users', headers: u.headers })).statusCode,
      200,
      'the broad key still works',
    );
    // A key it covers is fine.
    const sibling = (await create(u.headers, { name: 'sibling', scopes: ['api-keys:read'] })).json().data.apiKey;
    const ok = await ctx.inject({ method: 'POST', url: `/api/api-keys/${sibling.id}/rotate`, headers: narrowH });
    assert.equal(ok.statusCode, 200);
    assert.deepEqual(ok.json().data.apiKey.scopes, ['api-keys:read']);
  });

  test('a rotated key cannot be rotated again (409); an expired key is a 404', async () => {
    const u = await ctx.signup();
    const k = (await create(u.headers, { name: 'once', scopes: ['users:read'] })).json().data.apiKey;
    const first = await ctx.inject({ method: 'POST', url: `/api/api-keys/${k.id}/rotate`, headers: u.headers });
    assert.equal(first.statusCode, 200);
    assert.equal(first.json().data.apiKey.expiresAt, null, 'the successor keeps the original (no) expiry');
    const again = await ctx.inject({ method: 'POST', url: `/api/api-keys/${k.id}/rotate`, headers: u.headers });
    assert.equal(again.statusCode, 409);
    assert.equal(again.json().error.code, 'CONFLICT');
    clock.advance(25 * 60 * 60_000); // past the rotation grace period
    assert.equal(
      (await ctx.inject({ method: 'POST', url: `/api/api-keys/${k.id}/rotate`, headers: u.headers })).statusCode,
      404,
    );
    assert.equal(
      (await ctx.inject({ method: 'DELETE', url: `/api/api-keys/${k.id}`, headers: u.headers })).statusCode,
      404,
    );
  });

  test('an orgId that names no organization of the caller is a 404 naming orgId', async () => {
    const u = await ctx.signup();
    const res = await create(u.headers, { name: 'org', scopes: ['*'], orgId: '0190a8a0-0000-7000-8000-000000000000' });
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().error.details[0].field, 'orgId');
  });

  test('the list is cursor-paginated, newest first', async () => {
    const u = await ctx.signup();
    for (const name of ['k1', 'k2', 'k3'])
      assert.equal((await create(u.headers, { name, scopes: ['leads:read'] })).statusCode, 201);
    const p1 = (await ctx.inject({ method: 'GET', url: '/api/api-keys?limit=2', headers: u.headers })).json().data;
    assert.deepEqual(
      p1.apiKeys.map((k: { name: string }) => k.name),
      ['k3', 'k2'],
    );
    assert.ok(p1.nextCursor);
    const p2 = (
      await ctx.inject({ method: 'GET', url: `/api/api-keys?limit=2&cursor=${p1.nextCursor}`, headers: u.headers })
    ).json().data;
    assert.deepEqual(
      p2.apiKeys.map((k: { name: string }) => k.name),
      ['k1', 'signup'],
    );
    assert.equal(p2.nextCursor, null);
  });
});

describe('Idempotency-Key', () => {
  test('a retried write gets the first answer; the same key with another request is a 409', async () => {
    const u = await ctx.signup();
    const created = (await create(u.headers, { name: 'idem', scopes: ['*'] })).json().data.apiKey;
    const headers = { ...u.headers, 'idempotency-key': 'delete-once-123' };
    const first = await ctx.inject({ method: 'DELETE', url: `/api/api-keys/${created.id}`, headers });
    assert.equal(first.statusCode, 200);
    const replay = await ctx.inject({ method: 'DELETE', url: `/api/api-keys/${created.id}`, headers });
    assert.equal(replay.statusCode, 200);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.json(), first.json());
    // Without the key the same call really runs again, and finds nothing.
    assert.equal(
      (await ctx.inject({ method: 'DELETE', url: `/api/api-keys/${created.id}`, headers: u.headers })).statusCode,
      404,
    );
    const other = await ctx.inject({ method: 'DELETE', url: `/api/api-keys/${u.id}`, headers });
    assert.equal(other.statusCode, 409);
    assert.equal(other.json().error.code, 'CONFLICT');
    // Keys are per user: another user may use the same key string.
    const v = await ctx.signup();
    const theirs = await ctx.inject({
      method: 'DELETE',
      url: `/api/api-keys/${created.id}`,
      headers: { ...v.headers, 'idempotency-key': 'delete-once-123' },
    });
    assert.equal(theirs.statusCode, 404);
  });

  test('answers carrying a new secret are never stored', async () => {
    const u = await ctx.signup();
    const headers = { ...u.headers, 'idempotency-key': 'mint-1' };
    const a = await create(headers, { name: 'a', scopes: ['*'] });
    assert.equal(a.statusCode, 201);
    const rows = await ctx.deps.database.query('SELECT * FROM idempotency_keys WHERE user_id = $1', [u.id]);
    assert.equal(rows.length, 0);
  });
});
