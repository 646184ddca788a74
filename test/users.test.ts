import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { jobs, leads, sources } from '../src/db/schema/index.ts';
import { createTestContext, type TestContext } from './helpers/app.ts';

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext();
});
after(async () => ctx?.close());

describe('GET /api/users', () => {
  test('the user with counts of their own sources, jobs and leads only', async () => {
    const u = await ctx.signup({ name: 'Grace' });
    const other = await ctx.signup();
    for (const owner of [u.id, u.id, other.id]) {
      const [source] = await ctx.deps.db
        .insert(sources)
        .values({ userId: owner, name: 's', url: 'https://example.com', scrapeType: 'STATIC' })
        .returning();
      const [job] = await ctx.deps.db
        .insert(jobs)
        .values({ userId: owner, sourceId: source!.id, name: 'j' })
        .returning();
      await ctx.deps.db
        .insert(leads)
        .values(
          [1, 2, 3].map((n) => ({ userId: owner, sourceId: source!.id, jobId: job!.id, email: `p${n}@example.com` })),
        );
    }
    const res = await ctx.inject({ method: 'GET', url: '/api/users', headers: u.headers });
    assert.equal(res.statusCode, 200);
    const { user, stats } = res.json().data;
    assert.deepEqual(Object.keys(user).sort(), ['createdAt', 'email', 'id', 'name']);
    assert.equal(user.id, u.id);
    assert.equal(user.name, 'Grace');
    assert.deepEqual(stats, { sources: 2, jobs: 2, leads: 6 });
  });

  test('401 without a key', async () => {
    const res = await ctx.inject({ method: 'GET', url: '/api/users' });
    assert.equal(res.statusCode, 401);
    assert.equal(res.json().error.code, 'UNAUTHORIZED');
  });
});

describe('PATCH /api/users/password', () => {
  test('changes the password; the old one stops working', async () => {
    const u = await ctx.signup({ password: 'first password' });
    const res = await ctx.inject({
      method: 'PATCH',
      url: '/api/users/password',
      headers: u.headers,
      payload: { currentPassword: 'first password', newPassword: 'second password' },
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().success, true);
    const login = (password: string) =>
      ctx.inject({
        method: 'POST',
        url: '/api/auth/login',
        remoteAddress: '127.0.5.5',
        payload: { email: u.email, password },
      });
    assert.equal((await login('first password')).statusCode, 401);
    assert.equal((await login('second password')).statusCode, 200);
  });

  test('400 INVALID_PASSWORD when the current password is wrong; 400 VALIDATION_ERROR for a short one', async () => {
    const u = await ctx.signup({ password: 'first password' });
    const wrong = await ctx.inject({
      method: 'PATCH',
      url: '/api/users/password',
      headers: u.headers,
      payload: { currentPassword: 'nope nope', newPassword: 'second password' },
    });
    assert.equal(wrong.statusCode, 400);
    assert.equal(wrong.json().error.code, 'INVALID_PASSWORD');
    const short = await ctx.inject({
      method: 'PATCH',
      url: '/api/users/password',
      headers: u.headers,
      payload: { currentPassword: 'first password', newPassword: 'short' },
    });
    assert.equal(short.statusCode, 400);
    assert.equal(short.json().error.code, 'VALIDATION_ERROR');
    assert.equal(short.json().error.details[0].field, 'newPassword');
    const missing = await ctx.inject({ method: 'PATCH', url: '/api/users/password', headers: u.headers, payload: {} });
    assert.equal(missing.statusCode, 400);
    const fields = missing
      .json()
      .error.details.map((d: { field: string }) => d.field)
      .sort();
    assert.deepEqual(fields, ['currentPassword', 'newPassword']);
  });
});
