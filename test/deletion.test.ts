import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { jobs, leads, profiles, profileTypes, projects, sources, suppressions } from '../src/db/schema/index.ts';
import { createAccountDeletionService } from '../src/modules/account-deletion/account-deletion.service.ts';
import { createProfileStore, profilesRoot } from '../src/modules/browser/profiles/profiles.store.ts';
import { QUEUES } from '../src/queue/queues.ts';
import { DAY_MS, ManualClock } from '../src/shared/clock.ts';
import { createSecretBox, secretKeyMaterial, sha256 } from '../src/shared/crypto.ts';
import { registerSchedules } from '../src/workers.ts';
import { createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError } from './helpers/assertions.ts';
import { freePort } from './helpers/process.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';

let ctx: TestContext;
let smtp: TestSmtpServer;
const clock = new ManualClock(new Date());
before(async () => {
  smtp = await startSmtpServer();
  ctx = await createTestContext({ clock, env: { SMTP_URL: smtp.url } });
});
after(async () => {
  await ctx?.close();
  await smtp?.close();
});

const call = (u: TestUser, method: 'GET' | 'POST', path: string, payload?: object) =>
  ctx.inject({ method, url: `/api/users/deletion${path}`, headers: u.headers, ...(payload ? { payload } : {}) });
const status = async (u: TestUser) => {
  const res = await call(u, 'GET', '/status');
  assert.equal(res.statusCode, 200);
  return res.json().data;
};
/** The confirmation token in a received mail (an indented line of 43 base64url characters). */
function tokenIn(mail: { text: string }): string {
  const match = /^\s+([A-Za-z0-9_-]{43})$/m.exec(mail.text);
  assert.ok(match, mail.text);
  return match[1]!;
}
/** Requests deletion and reads the token from the mail the SMTP server received. */
async function requestToken(u: TestUser): Promise<string> {
  const res = await call(u, 'POST', '');
  assert.equal(res.statusCode, 200, res.body);
  return tokenIn(await smtp.waitFor(u.email));
}
async function schedule(u: TestUser) {
  const token = await requestToken(u);
  const res = await call(u, 'POST', '/confirm', { token });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data as { scheduledAt: string; gracePeriodDays: number };
}
describe('deletion flow', () => {
  test('end to end over real SMTP: request → mail with token → confirm → scheduled → cancel', async () => {
    const u = await ctx.signup();
    assert.deepEqual(await status(u), { status: 'none', scheduledAt: null, gracePeriodDays: 30 });

    const requestedAt = clock.now().getTime();
    const res = await call(u, 'POST', '');
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { success: true, data: { expiresAt: new Date(requestedAt + DAY_MS).toISOString() } });
    const mail = await smtp.waitFor(u.email);
    assert.deepEqual(mail.to, [u.email]);
    assert.match(mail.subject, /deletion/i);
    const token = tokenIn(mail);

    // Only the token's SHA-256 is stored.
    const rows = await ctx.deps.database.query<{ token_hash: string }>(
      'SELECT * FROM deletion_requests WHERE user_id = $1',
      [u.id],
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.token_hash, sha256(token));
    assert.ok(!JSON.stringify(rows).includes(token));

    const st = await status(u);
    assert.deepEqual(st, {
      status: 'requested',
      scheduledAt: null,
      gracePeriodDays: 30,
      expiresAt: new Date(requestedAt + DAY_MS).toISOString(),
    });

    clock.advance(3600_000);
    const confirmedAt = clock.now().getTime();
    const confirm = await call(u, 'POST', '/confirm', { token });
    assert.equal(confirm.statusCode, 200, confirm.body);
    const scheduledAt = new Date(confirmedAt + 30 * DAY_MS).toISOString();
    assert.deepEqual(confirm.json(), { success: true, data: { scheduledAt, gracePeriodDays: 30 } });
    assert.deepEqual(await status(u), { status: 'scheduled', scheduledAt, gracePeriodDays: 30 });
    assertError(await call(u, 'POST', '/confirm', { token }), 400, 'INVALID_TOKEN'); // used

    // The account keeps working during the grace period.
    assert.equal((await ctx.inject({ method: 'GET', url: '/api/users', headers: u.headers })).statusCode, 200);

    const cancel = await call(u, 'POST', '/cancel');
    assert.equal(cancel.statusCode, 200);
    assert.equal(cancel.json().success, true);
    assert.equal(typeof cancel.json().message, 'string');
    assert.deepEqual(await status(u), { status: 'none', scheduledAt: null, gracePeriodDays: 30 });
    assertError(await call(u, 'POST', '/cancel'), 400, 'NO_PENDING_DELETION');
  });

  test(
    '400 NO_PENDING_DELETION when nothing was requested; a requested (unconfirmed) deletion can be ' + 'cancelled',
    async () => {
      const u = await ctx.signup();
      const res = await call(u, 'POST', '/cancel');
      assertError(res, 400, 'NO_PENDING_DELETION');
      const token = await requestToken(u);
      assert.equal((await call(u, 'POST', '/cancel')).statusCode, 200);
      assert.equal((await status(u)).status, 'none');
      assertError(await call(u, 'POST', '/confirm', { token }), 400, 'INVALID_TOKEN');
    },
  );

  test("400 INVALID_TOKEN: wrong, another user's, or expired token; the state is unchanged", async () => {
    const a = await ctx.signup();
    const b = await ctx.signup();
    const tokenA = await requestToken(a);
    const tokenB = await requestToken(b);

    assertError(await call(a, 'POST', '/confirm', { token: 'x'.repeat(43) }), 400, 'INVALID_TOKEN');
    const stolen = await call(a, 'POST', '/confirm', { token: tokenB });
    assertError(stolen, 400, 'INVALID_TOKEN');
    assert.equal(stolen.json().error.details[0].field, 'token');
    assert.equal((await status(a)).status, 'requested');
    assert.equal((await status(b)).status, 'requested', "B is not scheduled by A using B's token");

    clock.advance(DAY_MS + 1000);
    assertError(await call(a, 'POST', '/confirm', { token: tokenA }), 400, 'INVALID_TOKEN');
    assert.equal((await status(a)).status, 'none', 'an expired request is no longer pending');
    assertError(await call(a, 'POST', '/cancel'), 400, 'NO_PENDING_DELETION');
  });

  test('400 VALIDATION_ERROR naming token for a missing, empty or wrong-typed token', async () => {
    const u = await ctx.signup();
    for (const payload of [{}, { token: '' }, { token: 42 }, { token: null }]) {
      const res = await call(u, 'POST', '/confirm', payload);
      assertError(res, 400, 'VALIDATION_ERROR');
      assert.equal(res.json().error.details[0].field, 'token', JSON.stringify(payload));
    }
  });

  test('one accepted request per day: the 2nd is 429 with Retry-After; 25 hours later it is allowed', async () => {
    const u = await ctx.signup();
    await requestToken(u);
    clock.advance(3600_000);
    const again = await call(u, 'POST', '');
    assertError(again, 429, 'RATE_LIMIT_EXCEEDED');
    assert.equal(Number(again.headers['retry-after']), (DAY_MS - 3600_000) / 1000);
    assert.equal((await call(u, 'POST', '/cancel')).statusCode, 200);
    assertError(await call(u, 'POST', ''), 429, 'RATE_LIMIT_EXCEEDED'); // cancelling does not reset it
    const [n] = await ctx.deps.database.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM deletion_requests WHERE user_id = $1',
      [u.id],
    );
    assert.equal(Number(n!.n), 1, 'refused requests are not recorded');

    clock.advance(24 * 3600_000);
    const token = await requestToken(u);
    assert.equal((await call(u, 'POST', '/confirm', { token })).statusCode, 200);
    // Someone else is not affected by this user's limit.
    assert.equal((await call(await ctx.signup(), 'POST', '')).statusCode, 200);
  });

  test('concurrent requests: only one is accepted', async () => {
    const u = await ctx.signup();
    const codes = (await Promise.all(Array.from({ length: 5 }, () => call(u, 'POST', ''))))
      .map((r) => r.statusCode)
      .sort();
    assert.deepEqual(codes, [200, 429, 429, 429, 429]);
    await smtp.waitFor(u.email);
  });

  test('409 CONFLICT when a deletion is already scheduled', async () => {
    const u = await ctx.signup();
    await schedule(u);
    clock.advance(2 * DAY_MS);
    assertError(await call(u, 'POST', ''), 409, 'CONFLICT');
    assert.equal((await status(u)).status, 'scheduled');
  });

  test('a mail the SMTP server refuses (550 at RCPT TO): 503, and the request does not count', async () => {
    const u = await ctx.signup();
    smtp.refused.add(u.email.toLowerCase());
    try {
      assertError(await call(u, 'POST', ''), 503, 'SERVICE_UNAVAILABLE');
      assert.equal(smtp.messages.filter((m) => m.to.includes(u.email.toLowerCase())).length, 0);
    } finally {
      smtp.refused.delete(u.email.toLowerCase());
    }
    assert.equal((await status(u)).status, 'none');
    const rows = await ctx.deps.database.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM deletion_requests WHERE user_id = $1',
      [u.id],
    );
    assert.equal(rows[0]!.n, 0);
    // One accepted request a day: a second one passing shows the refused one was not counted.
    await requestToken(u);
  });

  test('an SMTP server that cannot be reached (closed loopback port): 503, nothing stored', async () => {
    const own = await createTestContext({ env: { SMTP_URL: `smtp://127.0.0.1:${await freePort()}` }, workers: false });
    try {
      const u = await own.signup();
      assertError(await own.call(u, 'POST', '/api/users/deletion'), 503, 'SERVICE_UNAVAILABLE');
      assert.equal((await own.call(u, 'GET', '/api/users/deletion/status')).json().data.status, 'none');
    } finally {
      await own.close();
    }
  });

  test('once the grace period has ended the deletion can no longer be cancelled', async () => {
    // Its own clock: moving the shared one 30 days would make the other tests' users due.
    const ownClock = new ManualClock(new Date());
    const own = await createTestContext({ clock: ownClock, env: { SMTP_URL: smtp.url }, workers: false });
    try {
      const u = await own.signup();
      assert.equal((await own.call(u, 'POST', '/api/users/deletion')).statusCode, 200);
      const mail = await smtp.waitFor(u.email);
      const token = tokenIn(mail);
      assert.equal((await own.call(u, 'POST', '/api/users/deletion/confirm', { token })).statusCode, 200);
      ownClock.advance(30 * DAY_MS + 1000); // due; the hourly purge has not run yet
      assertError(await own.call(u, 'POST', '/api/users/deletion/cancel'), 400, 'NO_PENDING_DELETION');
      assert.equal((await own.call(u, 'GET', '/api/users/deletion/status')).json().data.status, 'scheduled');
    } finally {
      await own.close();
    }
  });

  test('401 without a key; users:read cannot request deletion', async () => {
    for (const [method, path] of [
      ['POST', ''],
      ['POST', '/confirm'],
      ['POST', '/cancel'],
      ['GET', '/status'],
    ] as const) {
      assertError(await ctx.inject({ method, url: `/api/users/deletion${path}` }), 401, 'UNAUTHORIZED');
    }
    const u = await ctx.signup();
    const key = await ctx.inject({
      method: 'POST',
      url: '/api/api-keys',
      headers: u.headers,
      payload: { name: 'ro', scopes: ['users:read'] },
    });
    const ro = {
      id: u.id,
      email: u.email,
      apiKey: '',
      headers: { authorization: `Bearer ${key.json().data.apiKey.key}` },
    };
    assertError(await call(ro, 'POST', ''), 403, 'INSUFFICIENT_SCOPE');
    assert.equal((await call(ro, 'GET', '/status')).statusCode, 200);
  });
});

/** Rows of `userId` in every public table that has a user_id column (future tables included). */
async function rowsByTable(userId: string): Promise<Record<string, number>> {
  const tables = await ctx.deps.database.query<{ table_name: string }>(
    `SELECT DISTINCT c.table_name FROM information_schema.columns c
     JOIN information_schema.tables t USING (table_schema, table_name)
     WHERE c.table_schema = 'public' AND c.column_name = 'user_id' AND t.table_type = 'BASE TABLE' ORDER BY 1`,
  );
  const out: Record<string, number> = {};
  for (const { table_name } of tables) {
    const [row] = await ctx.deps.database.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${table_name}" WHERE user_id::text = $1`,
      [userId],
    );
    out[table_name] = Number(row!.n);
  }
  return out;
}

async function userWithEverything(): Promise<TestUser> {
  const u = await ctx.signup();
  const db = ctx.deps.db;
  const [project] = await db.insert(projects).values({ userId: u.id, name: 'p' }).returning();
  const [source] = await db
    .insert(sources)
    .values({ userId: u.id, projectId: project!.id, name: 's', url: 'https://example.com', scrapeType: 'STATIC' })
    .returning();
  const [job] = await db.insert(jobs).values({ userId: u.id, sourceId: source!.id, name: 'j' }).returning();
  await db.insert(leads).values([
    { userId: u.id, sourceId: source!.id, jobId: job!.id, email: `lead-${u.id}@example.com` },
    { userId: u.id, firstName: 'x' },
  ]);
  const [type] = await db.insert(profileTypes).values({ userId: u.id, name: 't', slug: 't', fields: [] }).returning();
  await db.insert(profiles).values({ userId: u.id, profileTypeId: type!.id });
  await db.insert(suppressions).values({ userId: u.id, type: 'email', value: 'no@example.com' });
  assert.equal(
    (
      await ctx.inject({
        method: 'POST',
        url: '/api/api-keys',
        headers: u.headers,
        payload: { name: 'ci', scopes: ['leads:read'] },
      })
    ).statusCode,
    201,
  );
  assert.equal(
    (
      await ctx.inject({
        method: 'PATCH',
        url: '/api/users/consent',
        headers: u.headers,
        payload: { marketingConsent: true },
      })
    ).statusCode,
    200,
  );
  const exp = await ctx.inject({
    method: 'POST',
    url: '/api/users/export',
    headers: u.headers,
    payload: { format: 'CSV' },
  });
  assert.equal(exp.statusCode, 200);
  await eventually(async () => {
    const [r] = await ctx.deps.database.query<{ status: string }>('SELECT status FROM data_exports WHERE id = $1', [
      exp.json().data.requestId,
    ]);
    return r?.status === 'COMPLETED';
  });
  return u;
}

describe('purge after the grace period', () => {
  test('erases due users with everything they own; not-yet-due, cancelled and unconfirmed ones stay', async () => {
    const doomed = await userWithEverything();
    const later = await userWithEverything();
    const cancelled = await userWithEverything();
    const unconfirmed = await ctx.signup();
    await schedule(doomed);
    // Leftovers keyed by the user outside the cascading tables: a queued job and a rate-limit entry.
    await ctx.deps.boss.send(
      QUEUES.dataExport,
      { exportId: '00000000-0000-7000-8000-000000000000', userId: doomed.id },
      { startAfter: 3600 },
    );
    await ctx.deps.database.query(
      `INSERT INTO rate_limit_events (id, bucket, subject) VALUES (gen_random_uuid(), 'test', $1)`,
      [doomed.id],
    );
    // And a browser profile's state file on disk.
    const browserProfile = await ctx.inject({
      method: 'POST',
      url: '/api/browser/profiles',
      headers: doomed.headers,
      payload: { name: 'doomed' },
    });
    assert.equal(browserProfile.statusCode, 201, browserProfile.body);
    const profileDir = path.join(profilesRoot(ctx.deps.config), doomed.id);
    await createProfileStore(profilesRoot(ctx.deps.config), createSecretBox(secretKeyMaterial(ctx.deps.config))).write(
      doomed.id,
      browserProfile.json().data.profile.id,
      1,
      Buffer.from('{"cookies":[],"origins":[]}'),
    );
    assert.ok(fs.existsSync(profileDir));
    clock.advance(5 * DAY_MS);
    await schedule(later);
    await schedule(cancelled);
    assert.equal((await call(cancelled, 'POST', '/cancel')).statusCode, 200);
    await requestToken(unconfirmed);

    const before = await rowsByTable(doomed.id);
    for (const table of [
      'users',
      'consent_events',
      'api_keys',
      'projects',
      'sources',
      'jobs',
      'leads',
      'profile_types',
      'profiles',
      'suppressions',
      'data_exports',
      'deletion_requests',
    ]) {
      if (table !== 'users') assert.ok(before[table]! > 0, `${table} has rows before the purge`);
    }
    const deletion = createAccountDeletionService(ctx.deps);
    assert.deepEqual(await deletion.purgeDueAccounts(), { purged: [] }, 'nobody is due yet');

    clock.advance(26 * DAY_MS); // doomed: 31 days after confirmation; later: 26 days
    // The key is in the auth cache right before the purge.
    assert.equal(
      (await ctx.inject({ method: 'GET', url: '/api/users/export/status', headers: doomed.headers })).statusCode,
      200,
    );
    const { purged } = await deletion.purgeDueAccounts();
    // Users scheduled by the earlier tests of this file are due as well; these four decide the test.
    assert.ok(purged.includes(doomed.id));
    for (const u of [later, cancelled, unconfirmed]) assert.ok(!purged.includes(u.id));

    const afterPurge = await rowsByTable(doomed.id);
    assert.ok(Object.keys(afterPurge).length >= 12, Object.keys(afterPurge).join());
    for (const [table, n] of Object.entries(afterPurge))
      assert.equal(n, 0, `${table} still has rows of the purged user`);
    const [userRow] = await ctx.deps.database.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM users WHERE id = $1',
      [doomed.id],
    );
    assert.equal(Number(userRow!.n), 0);
    const [rl] = await ctx.deps.database.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM rate_limit_events WHERE subject = $1',
      [doomed.id],
    );
    assert.equal(Number(rl!.n), 0);
    assert.ok(!fs.existsSync(profileDir), 'the browser profile files went with the account');
    assert.deepEqual(await ctx.deps.boss.findJobs(QUEUES.dataExport, { data: { userId: doomed.id } }), []);
    // The key was cached: without the cache invalidation, a route that does not load the user would still answer.
    assertError(
      await ctx.inject({ method: 'GET', url: '/api/users/export/status', headers: doomed.headers }),
      401,
      'UNAUTHORIZED',
    );
    assertError(await ctx.inject({ method: 'GET', url: '/api/users', headers: doomed.headers }), 401, 'UNAUTHORIZED');

    // The others are untouched.
    for (const u of [later, cancelled]) {
      assert.equal((await ctx.inject({ method: 'GET', url: '/api/users', headers: u.headers })).statusCode, 200);
      const counts = await rowsByTable(u.id);
      assert.ok(counts.leads === 2 && counts.projects === 1 && counts.api_keys! >= 2, JSON.stringify(counts));
    }
    assert.equal((await status(later)).status, 'scheduled');
    assert.equal((await status(cancelled)).status, 'none');
    assert.equal(
      (await ctx.inject({ method: 'GET', url: '/api/users', headers: unconfirmed.headers })).statusCode,
      200,
    );
    assert.deepEqual(await deletion.purgeDueAccounts(), { purged: [] }, 'nothing left to do');

    // The hourly job runs the same purge: once `later` is due, a job on the queue erases it.
    clock.advance(5 * DAY_MS);
    await ctx.deps.boss.send(QUEUES.accountPurge, {});
    await eventually(
      async () => (await ctx.deps.database.query('SELECT 1 FROM users WHERE id = $1', [later.id])).length === 0,
    );
    for (const [table, n] of Object.entries(await rowsByTable(later.id))) assert.equal(n, 0, table);
    assertError(await ctx.inject({ method: 'GET', url: '/api/users', headers: later.headers }), 401, 'UNAUTHORIZED');
    assert.equal((await ctx.inject({ method: 'GET', url: '/api/users', headers: cancelled.headers })).statusCode, 200);
  });

  test('the purge queue is scheduled hourly', async () => {
    await registerSchedules(ctx.deps);
    const schedules = await ctx.deps.boss.getSchedules();
    const purge = schedules.find((s) => s.name === QUEUES.accountPurge);
    assert.ok(purge, JSON.stringify(schedules));
    assert.match(purge.cron, /^\d+ \* \* \* \*$/);
  });
});
