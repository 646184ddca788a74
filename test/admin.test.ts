import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { buildApp } from '../src/app.ts';
import { assembleDeps } from '../src/assemble-deps.ts';
import { queryRows } from '../src/db/client.ts';
import { creditTransactions, jobs, sources } from '../src/db/schema/index.ts';
import { QUEUES } from '../src/queue/queues.ts';
import { ManualClock } from '../src/shared/clock.ts';
import { newId } from '../src/shared/ids.ts';
import { createNotifier } from '../src/shared/notify.ts';
import { asAnotherInstance, createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { freePort, type ServiceProcess, startService, waitHealthy } from './helpers/process.ts';
import { seedLeads } from './helpers/seed.ts';

const NOW = new Date('2026-05-20T12:00:00Z');
// The clock never moves: a cached key would be served for ever here unless the change evicts it.
const clock = new ManualClock(NOW);
const DAY = 86_400_000;
let ctx: TestContext;
let root: TestUser;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
const users: TestUser[] = [];

const call = (user: TestUser | undefined, method: 'GET' | 'PATCH', url: string, body?: unknown) =>
  ctx.call(user, method, url, body);
const patch = (user: TestUser, target: string, body: unknown) =>
  call(user, 'PATCH', `/api/admin/users/${target}`, body);
const rows = <T>(query: ReturnType<typeof sql>) => queryRows<T>(ctx.deps.db, query);
const auditOf = (target: string) =>
  rows<{ actor_id: string; before: unknown; after: unknown; reason: string | null; created_at: Date }>(
    sql`SELECT actor_id, before, after, reason, created_at FROM admin_audit_events
        WHERE target_user_id = ${target} ORDER BY created_at, id`,
  );

before(async () => {
  ctx = await createTestContext({
    clock,
    workers: false,
    env: { ADMIN_EMAILS: 'Root@Example.com', CREDITS_SIGNUP_GRANT: '1000' },
  });
  root = await ctx.signup({ email: 'root@example.com', name: 'Root' });
  alice = await ctx.signup({ email: 'alice@example.com', name: 'Alice Liddell' });
  bob = await ctx.signup({ email: 'bob.b@example.org', name: 'Bob Builder' });
  carol = await ctx.signup({ email: 'carol@example.net', name: 'Carol 100%' });
  users.push(root, alice, bob, carol);
});
after(() => ctx?.close());

describe('who may use the admin routes', () => {
  test('everyone but an admin gets 403 FORBIDDEN, before any input is read', async () => {
    for (const user of [alice, bob]) {
      for (const [method, url, body] of [
        ['GET', '/api/admin/stats'],
        ['GET', '/api/admin/users?limit=0'],
        ['PATCH', `/api/admin/users/${alice.id}`, { status: 'suspended' }],
        ['PATCH', '/api/admin/users/not-an-id', { status: 'frozen' }],
      ] as const) {
        const res = await call(user, method, url, body);
        assert.equal(res.statusCode, 403, `${method} ${url}`);
        assert.equal(res.json().error.code, 'FORBIDDEN');
      }
    }
    assert.equal((await call(undefined, 'GET', '/api/admin/stats')).statusCode, 401);
    // An admin's key without the admin scope.
    const narrow = await ctx.call(root, 'POST', '/api/api-keys', { name: 'n', scopes: ['users:read'] });
    const headers = { authorization: `Bearer ${narrow.json().data.apiKey.key}` };
    const res = await ctx.inject({ method: 'GET', url: '/api/admin/stats', headers });
    assert.equal(res.json().error.code, 'INSUFFICIENT_SCOPE');
  });
});

describe('GET /api/admin/stats', () => {
  test('users, leads, jobs by state, queue depth and credits, counted from what was put in', async () => {
    await seedLeads(ctx.deps.db, alice.id, [
      { firstName: 'a1', createdAt: NOW },
      { firstName: 'a2', createdAt: new Date(NOW.getTime() - 2 * DAY) },
      { firstName: 'a3', createdAt: new Date(NOW.getTime() - 30 * DAY) },
    ]);
    await seedLeads(ctx.deps.db, bob.id, [{ firstName: 'b1', createdAt: NOW }]);
    const sourceId = newId();
    await ctx.deps.db
      .insert(sources)
      .values({ id: sourceId, userId: bob.id, name: 's', url: 'https://example.com', scrapeType: 'STATIC' });
    const states = ['PENDING', 'RUNNING', 'COMPLETED', 'COMPLETED', 'FAILED', 'CANCELLED'] as const;
    await ctx.deps.db
      .insert(jobs)
      .values(states.map((status, i) => ({ userId: bob.id, sourceId, name: `j${i}`, status })));
    // Two background tasks no worker takes (this context runs none).
    for (let i = 0; i < 2; i++) await ctx.deps.boss.send(QUEUES.dataExport, { exportId: newId(), userId: alice.id });
    await ctx.deps.credits.spend(ctx.deps.db, alice.id, 'pages', 40);
    await ctx.deps.credits.spend(ctx.deps.db, bob.id, 'email_validations', 7);
    await ctx.deps.db.insert(creditTransactions).values({
      userId: bob.id,
      kind: 'usage',
      amount: -100,
      balanceAfter: 0,
      feature: 'pages',
      units: 100,
      createdAt: new Date(NOW.getTime() - 60 * DAY),
    });
    // Webhook attempts: three in the last day (one failed), one failed a week ago; one endpoint disabled.
    await ctx.deps.database.query(
      `INSERT INTO webhook_endpoints (id, user_id, url, event_types, enabled, secret_encrypted)
       VALUES (gen_random_uuid(), $1, 'https://hooks.example.com/', '{job.completed}', false, 'sealed')`,
      [alice.id],
    );
    await ctx.deps.database.query(
      `INSERT INTO webhook_attempts (id, delivery_id, endpoint_id, attempt, success, latency_ms, created_at)
       SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 1, ok, 5, $1::timestamptz - age
       FROM (VALUES (true, interval '1 hour'), (true, interval '2 hours'), (false, interval '3 hours'),
                    (false, interval '7 days')) AS v(ok, age)`,
      [NOW.toISOString()],
    );

    const data = (await call(root, 'GET', '/api/admin/stats')).json().data;
    assert.deepEqual(data.users, { total: 4, active: 4, suspended: 0, admins: 1, newLast7Days: 4 });
    assert.deepEqual(data.leads, { total: 4, createdLast7Days: 3 });
    assert.deepEqual(data.jobs, {
      total: 6,
      byStatus: { PENDING: 1, RUNNING: 1, COMPLETED: 2, FAILED: 1, CANCELLED: 1 },
    });
    const exports = data.queue.byQueue.find((q: { name: string }) => q.name === QUEUES.dataExport);
    assert.deepEqual(exports, { name: QUEUES.dataExport, queued: 2, active: 0 });
    assert.equal(
      data.queue.queued,
      data.queue.byQueue.reduce((n: number, q: { queued: number }) => n + q.queued, 0),
    );
    const balances = await Promise.all(users.map((u) => ctx.deps.credits.balance(ctx.deps.db, u.id)));
    assert.deepEqual(data.credits, {
      usedLast30Days: 47,
      usedTotal: 147,
      outstandingBalance: balances.reduce((a, b) => a + b, 0),
    });
    assert.deepEqual(data.webhooks, {
      attemptsLast24Hours: 3,
      failedLast24Hours: 1,
      failureRate: 1 / 3,
      disabledEndpoints: 1,
    });
  });
});

describe('GET /api/admin/users', () => {
  const emails = (data: { users: Array<{ email: string }> }) => data.users.map((u) => u.email);

  test('search by email or name, filters, newest first in pages, with balance and usage', async () => {
    const list = async (qs: string) => {
      const res = await call(root, 'GET', `/api/admin/users?${qs}`);
      assert.equal(res.statusCode, 200, res.body);
      return res.json().data;
    };
    assert.deepEqual(emails(await list('q=BOB')), ['bob.b@example.org']);
    assert.deepEqual(emails(await list('q=liddell')), ['alice@example.com']);
    assert.deepEqual(emails(await list('q=example.com')), ['alice@example.com', 'root@example.com']);
    assert.deepEqual(emails(await list('q=100%25')), ['carol@example.net'], '% is taken literally');
    assert.deepEqual(emails(await list('q=_')), [], '_ is taken literally');
    assert.deepEqual(emails(await list('role=user&q=example.com')), ['alice@example.com', 'root@example.com']);

    const seen: string[] = [];
    let cursor = '';
    do {
      const page = await list(`limit=3${cursor && `&cursor=${cursor}`}`);
      seen.push(...emails(page));
      cursor = page.nextCursor ?? '';
    } while (cursor);
    assert.deepEqual(
      seen,
      [carol, bob, alice, root].map((u) => u.email),
    );

    const [view] = (await list('q=bob.b')).users;
    const { lastActiveAt, createdAt, ...rest } = view;
    assert.deepEqual(rest, {
      id: bob.id,
      email: 'bob.b@example.org',
      name: 'Bob Builder',
      status: 'active',
      role: 'user',
      isAdmin: false,
      balance: await ctx.deps.credits.balance(ctx.deps.db, bob.id),
      usage: { leads: 1, sources: 1, jobs: 6, creditsUsedLast30Days: 7 },
    });
    assert.equal(createdAt, NOW.toISOString());
    assert.equal(lastActiveAt, NOW.toISOString(), 'bob used his key at the clock time');
    const rootView = (await list('q=root')).users[0];
    assert.equal(rootView.isAdmin, true, 'ADMIN_EMAILS, compared without case');
    assert.equal(rootView.role, 'user');
  });
});

/**
 * Another instance with its own API-key cache and notification listener: on PostgreSQL a real second
 * process (`npm start`'s entry) on the same database, embedded a second app in this process.
 */
async function secondInstance(): Promise<{ status(key: string): Promise<[number, string]>; close(): Promise<void> }> {
  const url = ctx.deps.config.DATABASE_URL;
  if (url) {
    const port = await freePort();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-admin-'));
    const service: ServiceProcess = startService({
      DATABASE_URL: url,
      PORT: String(port),
      RUN_WORKERS: 'false',
      DATA_DIR: dataDir,
    });
    await waitHealthy(port, service);
    return {
      async status(key) {
        const res = await fetch(`http://127.0.0.1:${port}/api/users`, { headers: { authorization: `Bearer ${key}` } });
        const body = (await res.json()) as { error?: { code: string } };
        return [res.status, body.error?.code ?? ''];
      },
      async close() {
        service.child.kill('SIGTERM');
        await service.exited;
        fs.rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  const notifier = createNotifier(ctx.deps.database, url);
  const app = await buildApp(assembleDeps(asAnotherInstance({ ...ctx.deps, notifier })));
  await app.ready();
  return {
    async status(key) {
      const res = await app.inject({ method: 'GET', url: '/api/users', headers: { authorization: `Bearer ${key}` } });
      return [res.statusCode, res.json().error?.code ?? ''];
    },
    async close() {
      await app.close();
      await notifier.close();
    },
  };
}

describe('PATCH /api/admin/users/{id}: status', () => {
  test("a suspended user's keys answer 403 ACCOUNT_SUSPENDED at once everywhere; reactivating restores", async () => {
    const other = await secondInstance();
    try {
      const key = bob.apiKey;
      assert.deepEqual(await other.status(key), [200, ''], 'cached in the other instance');
      assert.equal((await call(bob, 'GET', '/api/users')).statusCode, 200, 'cached here');
      const leadsBefore = await rows<{ n: number }>(
        sql`SELECT count(*)::int AS n FROM leads WHERE user_id = ${bob.id}`,
      );

      const res = await patch(root, bob.id, { status: 'suspended' });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.user.status, 'suspended');
      assert.deepEqual(res.json().data.audit.before, { status: 'active' });
      assert.deepEqual(res.json().data.audit.after, { status: 'suspended' });
      const here = await call(bob, 'GET', '/api/users');
      assert.equal(here.statusCode, 403);
      assert.equal(here.json().error.code, 'ACCOUNT_SUSPENDED');
      // No clock movement here, and far less than the 30 s cache in the other process: only the broadcast explains it.
      await eventually(async () => (await other.status(key))[1] === 'ACCOUNT_SUSPENDED', 5000, 20);
      assert.deepEqual(await other.status(key), [403, 'ACCOUNT_SUSPENDED']);
      const login = await ctx.inject({
        method: 'POST',
        url: '/api/auth/login',
        remoteAddress: '127.9.0.1',
        payload: { email: bob.email, password: 'correct horse battery' },
      });
      assert.equal(login.statusCode, 403);
      assert.equal(login.json().error.code, 'ACCOUNT_SUSPENDED');
      const leadsAfter = await rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM leads WHERE user_id = ${bob.id}`);
      assert.deepEqual(leadsAfter, leadsBefore, 'nothing of theirs is deleted');
      const listed = (await call(root, 'GET', '/api/admin/users?status=suspended')).json().data.users;
      assert.deepEqual(
        listed.map((u: { id: string }) => u.id),
        [bob.id],
      );

      const again = await patch(root, bob.id, { status: 'suspended' });
      assert.equal(again.json().data.audit, null, 'no change, no audit record');

      assert.equal((await patch(root, bob.id, { status: 'active' })).statusCode, 200);
      assert.equal((await call(bob, 'GET', '/api/users')).statusCode, 200);
      await eventually(async () => (await other.status(key))[0] === 200, 5000, 20);
      const audit = await auditOf(bob.id);
      assert.deepEqual(
        audit.map((a) => [a.actor_id, a.before, a.after]),
        [
          [root.id, { status: 'active' }, { status: 'suspended' }],
          [root.id, { status: 'suspended' }, { status: 'active' }],
        ],
      );
      assert.equal(new Date(audit[0]!.created_at).toISOString(), NOW.toISOString());
    } finally {
      await other.close();
    }
  });

  test('an admin cannot suspend themselves (409 naming status)', async () => {
    const res = await patch(root, root.id, { status: 'suspended' });
    assert.equal(res.statusCode, 409);
    assert.equal(res.json().error.code, 'CONFLICT');
    assert.equal(res.json().error.details[0].field, 'status');
    assert.equal((await call(root, 'GET', '/api/admin/stats')).statusCode, 200);
    assert.deepEqual(await auditOf(root.id), []);
  });
});

describe('PATCH /api/admin/users/{id}: credits and role', () => {
  test('creditAdjustment changes the balance, writes a ledger row and an audit record', async () => {
    const before = await ctx.deps.credits.balance(ctx.deps.db, carol.id);
    const res = await patch(root, carol.id, { creditAdjustment: { amount: 250, reason: 'conference voucher' } });
    assert.equal(res.statusCode, 200, res.body);
    const { user, audit } = res.json().data;
    assert.equal(user.balance, before + 250);
    assert.equal(await ctx.deps.credits.balance(ctx.deps.db, carol.id), before + 250);
    assert.deepEqual(
      { before: audit.before, after: audit.after, reason: audit.reason, actorId: audit.actorId },
      {
        before: { balance: before },
        after: { balance: before + 250, creditAdjustment: 250 },
        reason: 'conference voucher',
        actorId: root.id,
      },
    );
    const ledger = await rows<Record<string, unknown>>(
      sql`SELECT kind, amount, balance_after, reason, actor FROM credit_transactions
          WHERE user_id = ${carol.id} ORDER BY id DESC LIMIT 1`,
    );
    assert.deepEqual(ledger, [
      { kind: 'adjustment', amount: 250, balance_after: before + 250, reason: 'conference voucher', actor: root.id },
    ]);
  });

  test('one request, one transaction: a refused debit leaves the status and the audit untouched', async () => {
    const balance = await ctx.deps.credits.balance(ctx.deps.db, carol.id);
    const audits = (await auditOf(carol.id)).length;
    const res = await patch(root, carol.id, {
      status: 'suspended',
      role: 'admin',
      creditAdjustment: { amount: -(balance + 1), reason: 'too much' },
    });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().error.details[0].field, 'creditAdjustment.amount');
    const [row] = await rows<{ status: string; role: string }>(
      sql`SELECT status, role FROM users WHERE id = ${carol.id}`,
    );
    assert.deepEqual(row, { status: 'active', role: 'user' });
    assert.equal(await ctx.deps.credits.balance(ctx.deps.db, carol.id), balance);
    assert.equal((await auditOf(carol.id)).length, audits);
    assert.equal((await call(carol, 'GET', '/api/users')).statusCode, 200);
  });

  test('role admin lets the user in at once; demoting takes it back; an admin cannot demote themselves', async () => {
    assert.equal((await call(carol, 'GET', '/api/admin/stats')).statusCode, 403);
    const promoted = await patch(root, carol.id, { role: 'admin' });
    assert.equal(promoted.statusCode, 200);
    assert.deepEqual([promoted.json().data.user.role, promoted.json().data.user.isAdmin], ['admin', true]);
    assert.equal((await call(carol, 'GET', '/api/admin/stats')).statusCode, 200);
    const self = await patch(carol, carol.id, { role: 'user' });
    assert.equal(self.statusCode, 409);
    assert.equal(self.json().error.details[0].field, 'role');
    // Carol (an admin by role) demotes the ADMIN_EMAILS admin's stored role: root stays an admin.
    assert.equal((await patch(carol, root.id, { role: 'admin' })).statusCode, 200);
    assert.equal((await patch(carol, root.id, { role: 'user' })).statusCode, 200);
    assert.equal((await call(root, 'GET', '/api/admin/stats')).statusCode, 200);
    const demoted = await patch(root, carol.id, { role: 'user' });
    assert.deepEqual(demoted.json().data.audit.before, { role: 'admin' });
    assert.deepEqual(demoted.json().data.audit.after, { role: 'user' });
    assert.equal((await call(carol, 'GET', '/api/admin/stats')).statusCode, 403);
    assert.deepEqual(
      (await auditOf(root.id)).map((a) => [a.actor_id, a.before, a.after]),
      [
        [carol.id, { role: 'user' }, { role: 'admin' }],
        [carol.id, { role: 'admin' }, { role: 'user' }],
      ],
    );
  });
});

describe('PATCH /api/admin/users/{id}: bad input', () => {
  test('400 naming the field, 404 for an unknown user, nothing written', async () => {
    const audits = (await rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM admin_audit_events`))[0]!.n;
    const cases: Array<[unknown, string]> = [
      [{ status: 'frozen' }, 'status'],
      [{ role: 'owner' }, 'role'],
      [{ creditAdjustment: { amount: 1.5, reason: 'x' } }, 'creditAdjustment.amount'],
      [{ creditAdjustment: { amount: 0, reason: 'x' } }, 'creditAdjustment.amount'],
      [{ creditAdjustment: { amount: '10', reason: 'x' } }, 'creditAdjustment.amount'],
      [{ creditAdjustment: { amount: 10, reason: '  ' } }, 'creditAdjustment.reason'],
      [{ creditAdjustment: { amount: 10 } }, 'creditAdjustment.reason'],
      [{ status: 'active', email: 'x@example.com' }, 'body'],
    ];
    for (const [body, field] of cases) {
      const res = await patch(root, alice.id, body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.ok(
        res.json().error.details.some((d: { field: string }) => d.field === field),
        `${JSON.stringify(body)}: ${res.body}`,
      );
    }
    for (const id of [newId(), 'not-a-uuid']) {
      const res = await patch(root, id, { status: 'suspended' });
      assert.equal(res.statusCode, 404);
    }
    for (const qs of ['limit=0', 'status=gone', 'cursor=xyz', `q=${'x'.repeat(201)}`]) {
      const res = await call(root, 'GET', `/api/admin/users?${qs}`);
      assert.equal(res.statusCode, 400, qs);
    }
    assert.equal((await rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM admin_audit_events`))[0]!.n, audits);
    const empty = await patch(root, alice.id, {});
    assert.equal(empty.statusCode, 200);
    assert.equal(empty.json().data.audit, null);
  });
});
