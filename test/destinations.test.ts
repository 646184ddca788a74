/**
 * Destinations over HTTP (docs/destinations.md): a real second PostgreSQL database (on the PGlite run too: the
 * destination is always PostgreSQL), a loopback S3 server checking SigV4, a webhook receiver verifying Standard
 * Webhooks signatures; append and upsert, resumption after a failed batch and after a dead worker without
 * duplicates, deterministic S3 keys, secrets sealed, isolation, bad input, the SSRF guard.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import pg from 'pg';
import { queryRows } from '../src/db/client.ts';
import { destinationPushes, leads } from '../src/db/schema/index.ts';
import { postgresTarget } from '../src/modules/destinations/destinations.postgres.ts';
import { type CopySource, LEAD_COLUMNS, TargetError } from '../src/modules/destinations/destinations.target.ts';
import { createDestinationPushRecovery, createDestinationService } from '../src/modules/destinations/index.ts';
import { eventDataSchemas } from '../src/shared/event-payloads.ts';
import { createTestContext, createTwoUserContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';
import { type S3Server, startS3Server } from './helpers/s3-server.ts';
import { seedLeads } from './helpers/seed.ts';
import { startWebhookReceiver, verifyWith, type WebhookReceiver } from './helpers/webhook-receiver.ts';

const ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const destName = `quarry_dest_${crypto.randomBytes(5).toString('hex')}`;
const destUrl = `postgres://postgres:not-a-real-password@127.0.0.1:5432/${destName}`;

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
let admin: pg.Client;
let dest: pg.Client;
let s3: S3Server;
let hooks: WebhookReceiver;

/** 12,000 leads (two postgres batches of 10,000): every 10th shares an email with the one before, every 100th has none. */
const N = 12_000;
let aliceIds: string[];

before(async () => {
  admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${destName}`);
  dest = new pg.Client({ connectionString: destUrl });
  await dest.connect();
  s3 = await startS3Server({ buckets: ['leads'] });
  hooks = await startWebhookReceiver();
  ({ ctx, alice, bob } = await createTwoUserContext());
  aliceIds = await seedLeads(
    ctx.deps.db,
    alice.id,
    Array.from({ length: N }, (_, i) => ({
      firstName: `First${i}`,
      lastName: i === 7 ? 'O"Brien, "Jr"' : `Last${i}`,
      email: i % 100 === 99 ? null : `lead${i % 10 === 9 ? i - 1 : i}@example.com`,
      company: i % 2 ? 'Acme' : 'Globex',
      tags: i % 3 ? ['b2b'] : ['b2b', 'hot "one"'],
    })),
  );
});
after(async () => {
  await ctx?.close();
  await s3?.close();
  await hooks?.close();
  await dest?.end();
  await admin?.query(`DROP DATABASE IF EXISTS ${destName} WITH (FORCE)`);
  await admin?.end();
});

interface PushView {
  id: string;
  status: string;
  error: string | null;
  progress: { total: number | null; pushed: number; failed: number; parts: number };
}

async function createDestination(user: TestUser, body: Record<string, unknown>, c = ctx) {
  const res = await c.call(user, 'POST', '/api/destinations', body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data as { destination: { id: string; config: Record<string, unknown> }; signingSecret?: string };
}

async function push(user: TestUser, id: string, body: Record<string, unknown>, c = ctx): Promise<PushView> {
  const res = await c.call(user, 'POST', `/api/destinations/${id}/push`, body);
  assert.equal(res.statusCode, 202, res.body);
  return res.json().data.push;
}

async function finished(user: TestUser, id: string, pushId: string, c = ctx): Promise<PushView> {
  return eventually(async () => {
    const res = await c.call(user, 'GET', `/api/destinations/${id}/pushes/${pushId}`);
    assert.equal(res.statusCode, 200, res.body);
    const p = res.json().data.push as PushView;
    return p.status === 'COMPLETED' || p.status === 'FAILED' ? p : undefined;
  }, 60_000);
}

const rowCount = async (table: string) =>
  Number((await dest.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n);
const distinctEmails = new Set(
  Array.from({ length: N }, (_, i) => (i % 100 === 99 ? null : i % 10 === 9 ? i - 1 : i)).filter((v) => v !== null),
).size;

describe('postgres destinations', () => {
  let destinationId: string;

  test('create: the connection is checked, the secret sealed and never shown', async () => {
    const { destination } = await createDestination(alice, {
      name: 'Warehouse',
      type: 'postgres',
      config: { connectionString: destUrl, table: 'leads_out' },
    });
    destinationId = destination.id;
    assert.equal(destination.config.table, 'leads_out');
    assert.equal(destination.config.connectionString, undefined);
    const got = await ctx.call(alice, 'GET', `/api/destinations/${destinationId}`);
    assert.equal(got.statusCode, 200);
    assert.ok(!got.body.includes('not-a-real-password'));
    assert.deepEqual(got.json().data.destination.secretSet, { connectionString: true, password: false });
    const list = await ctx.call(alice, 'GET', '/api/destinations');
    assert.deepEqual(
      list.json().data.destinations.map((d: { id: string }) => d.id),
      [destinationId],
    );
    assert.ok(!list.body.includes('not-a-real-password'));
    const [stored] = await queryRows<{ config: unknown; secrets: string }>(
      ctx.deps.db,
      sql`SELECT config, secrets FROM destinations WHERE id = ${destinationId}`,
    );
    assert.ok(!JSON.stringify(stored).includes('not-a-real-password'));
    assert.match(stored!.secrets, /^v1\./);
  });

  test('append: the table is created, every lead lands once, a second push adds nothing', async () => {
    const first = await finished(alice, destinationId, (await push(alice, destinationId, { filter: {} })).id);
    assert.equal(first.status, 'COMPLETED', first.error ?? '');
    assert.deepEqual(first.progress, { total: N, pushed: N, failed: 0, parts: 2 });
    assert.equal(await rowCount('leads_out'), N);
    const columns = (
      await dest.query(
        `SELECT column_name FROM information_schema.columns WHERE table_name = 'leads_out' ORDER BY ordinal_position`,
      )
    ).rows.map((r) => r.column_name);
    assert.deepEqual(columns, [
      'id',
      'first_name',
      'last_name',
      'email',
      'phone',
      'company',
      'job_title',
      'status',
      'tags',
      'source_url',
      'created_at',
      'pushed_at',
      'updated_at',
    ]);
    const { rows } = await dest.query('SELECT * FROM leads_out WHERE id = $1', [aliceIds[7]]);
    assert.equal(rows[0].last_name, 'O"Brien, "Jr"');
    assert.deepEqual(rows[0].tags, ['b2b']);
    const tagged = await dest.query('SELECT tags FROM leads_out WHERE id = $1', [aliceIds[0]]);
    assert.deepEqual(tagged.rows[0].tags, ['b2b', 'hot "one"']);
    assert.equal(rows[0].status, 'NEW');

    const again = await finished(alice, destinationId, (await push(alice, destinationId, { filter: {} })).id);
    assert.equal(again.status, 'COMPLETED');
    assert.equal(await rowCount('leads_out'), N);
  });

  test('a filter selects as the leads list does', async () => {
    const { destination } = await createDestination(alice, {
      name: 'Acme only',
      type: 'postgres',
      config: { host: '127.0.0.1', port: 5432, database: destName, user: 'postgres', table: 'acme', schema: 'crm' },
    });
    const p = await finished(
      alice,
      destination.id,
      (await push(alice, destination.id, { filter: { company: 'acme' } })).id,
    );
    assert.equal(p.status, 'COMPLETED', p.error ?? '');
    assert.equal(await rowCount('crm.acme'), N / 2);
    assert.equal(Number((await dest.query(`SELECT count(*) AS n FROM crm.acme WHERE company <> 'Acme'`)).rows[0].n), 0);
  });

  test('a table made by hand with other column types takes the push as text (the server converts)', async () => {
    await dest.query(
      'CREATE TABLE by_hand (id text PRIMARY KEY, first_name varchar(100), last_name text, email text, phone text, ' +
        'company text, job_title text, status text, tags text, source_url text, created_at text)',
    );
    const { destination } = await createDestination(alice, {
      name: 'By hand',
      type: 'postgres',
      config: { connectionString: destUrl, table: 'by_hand' },
    });
    const p = await finished(
      alice,
      destination.id,
      (await push(alice, destination.id, { filter: { company: 'acme' } })).id,
    );
    assert.equal(p.status, 'COMPLETED', p.error ?? '');
    assert.equal(await rowCount('by_hand'), N / 2);
    const [lead] = await ctx.deps.db.select().from(leads).where(eq(leads.id, aliceIds[7]!));
    const { rows } = await dest.query('SELECT *, tags::text[] AS tag_list FROM by_hand WHERE id = $1', [aliceIds[7]]);
    assert.equal(rows[0].last_name, 'O"Brien, "Jr"');
    assert.deepEqual(rows[0].tag_list, ['b2b']);
    assert.equal(new Date(rows[0].created_at).getTime(), lead!.createdAt.getTime());
  });

  test("Quarry's side failing mid-batch is no destination error; the connection stays usable", async () => {
    const target = postgresTarget({ connectionString: destUrl, table: 'source_fails' }, true, {
      pushId: 'p',
      destinationId: 'd',
      mode: 'append',
    });
    await target.open();
    // Another encoding than the table's: CSV, so the rows can be written here by hand.
    const source = (rows: () => AsyncGenerator<string>): CopySource => ({
      columns: LEAD_COLUMNS.map(([c]) => [c, 'text'] as const),
      encoding: 'none',
      open: async () => Readable.from(rows()),
    });
    const row = (id: string) => `${id},A,B,a@example.com,,,,NEW,{x},,2026-01-01T00:00:00Z\n`;
    try {
      await assert.rejects(
        target.writeCopy!(
          source(async function* () {
            yield row(crypto.randomUUID());
            throw new Error('the leads database went away');
          }),
          1,
        ),
        (error: Error) => !(error instanceof TargetError) && /went away/.test(error.message),
      );
      assert.equal(await rowCount('source_fails'), 0);
      const written = await target.writeCopy!(
        source(async function* () {
          yield row(crypto.randomUUID());
        }),
        1,
      );
      assert.equal(written, 1);
      assert.equal(await rowCount('source_fails'), 1);
    } finally {
      await target.close();
    }
  });

  test('upsert: one row per email, updated rather than duplicated', async () => {
    const { destination } = await createDestination(alice, {
      name: 'By email',
      type: 'postgres',
      config: { connectionString: destUrl, table: 'by_email' },
    });
    const p = await finished(
      alice,
      destination.id,
      (await push(alice, destination.id, { filter: {}, mode: 'upsert' })).id,
    );
    assert.equal(p.status, 'COMPLETED', p.error ?? '');
    const nulls = N / 100;
    assert.equal(await rowCount('by_email'), distinctEmails + nulls);
    // The newest lead of a shared email wins: lead 9 shares lead8@ with lead 8.
    const shared = await dest.query(`SELECT id FROM by_email WHERE email = 'lead8@example.com'`);
    assert.deepEqual(
      shared.rows.map((r) => r.id),
      [aliceIds[9]],
    );

    await ctx.deps.db.update(leads).set({ company: 'Initech' }).where(eq(leads.id, aliceIds[0]!));
    const res = await ctx.call(alice, 'PATCH', `/api/leads/${aliceIds[2]}`, { email: 'moved@example.com' });
    assert.equal(res.statusCode, 200, res.body);
    const again = await finished(
      alice,
      destination.id,
      (await push(alice, destination.id, { leadIds: [aliceIds[0], aliceIds[2]], mode: 'upsert' })).id,
    );
    assert.equal(again.status, 'COMPLETED', again.error ?? '');
    assert.deepEqual(again.progress, { total: 2, pushed: 2, failed: 0, parts: 1 });
    assert.equal(await rowCount('by_email'), distinctEmails + nulls);
    const updated = await dest.query(`SELECT company FROM by_email WHERE email = 'lead0@example.com'`);
    assert.equal(updated.rows[0].company, 'Initech');
    const moved = await dest.query(`SELECT email FROM by_email WHERE id = $1`, [aliceIds[2]]);
    assert.deepEqual(
      moved.rows.map((r) => r.email),
      ['moved@example.com'],
    );
  });

  test('a batch that fails stops the push; a retry resumes after the last batch delivered: exactly N rows', async () => {
    // The table exists with a trigger failing the second batch's insert, once (a sequence is not rolled back).
    await dest.query(`
      CREATE SEQUENCE flaky_calls;
      CREATE TABLE flaky (id uuid PRIMARY KEY, first_name text, last_name text, email text, phone text, company text,
        job_title text, status text, tags text[], source_url text, created_at timestamptz,
        pushed_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now());
      CREATE FUNCTION flaky_once() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF nextval('flaky_calls') = 2 THEN RAISE EXCEPTION 'disk full (test)'; END IF; RETURN NULL; END $$;
      CREATE TRIGGER flaky_once BEFORE INSERT ON flaky FOR EACH STATEMENT EXECUTE FUNCTION flaky_once();`);
    const { destination } = await createDestination(alice, {
      name: 'Flaky',
      type: 'postgres',
      config: { connectionString: destUrl, table: 'flaky' },
    });
    const started = await push(alice, destination.id, { filter: {} });
    const failed = await finished(alice, destination.id, started.id);
    assert.equal(failed.status, 'FAILED');
    assert.match(failed.error ?? '', /disk full \(test\)/);
    assert.deepEqual(failed.progress, { total: null, pushed: 10_000, failed: 0, parts: 1 });
    assert.equal(await rowCount('flaky'), 10_000);

    const retried = await ctx.call(alice, 'POST', `/api/destinations/${destination.id}/pushes/${started.id}/retry`);
    assert.equal(retried.statusCode, 202, retried.body);
    const done = await finished(alice, destination.id, started.id);
    assert.equal(done.status, 'COMPLETED', done.error ?? '');
    assert.deepEqual(done.progress, { total: N, pushed: N, failed: 0, parts: 2 });
    assert.equal(await rowCount('flaky'), N);
    const again = await ctx.call(alice, 'POST', `/api/destinations/${destination.id}/pushes/${started.id}/retry`);
    assertError(again, 400, 'INVALID_STATUS');
  });

  test('a push whose worker died resumes from its cursor; the batch delivered but not recorded is not doubled', async () => {
    const { destination } = await createDestination(alice, {
      name: 'Crash',
      type: 'postgres',
      config: { connectionString: destUrl, table: 'crashed' },
    });
    // The state a worker killed mid-push leaves: both batches in the table (the second delivered, its commit done)
    // but only the first recorded, and a stale heartbeat.
    const first = await finished(alice, destination.id, (await push(alice, destination.id, { filter: {} })).id);
    assert.equal(first.status, 'COMPLETED', first.error ?? '');
    assert.equal(await rowCount('crashed'), N);
    const [row] = await ctx.deps.db.select().from(destinationPushes).where(eq(destinationPushes.id, first.id));
    const batchOneEnd = aliceIds[N - 10_000]!; // newest first: the first batch ends at the 10,000th newest lead
    await ctx.deps.db
      .update(destinationPushes)
      .set({
        status: 'RUNNING',
        workerId: 'dead-worker',
        heartbeatAt: new Date(Date.now() - 120_000),
        pushed: 10_000,
        parts: 1,
        cursor: batchOneEnd,
        error: null,
        finishedAt: null,
        attempts: 1,
      })
      .where(eq(destinationPushes.id, row!.id));
    const swept = await createDestinationPushRecovery(ctx.deps, createDestinationService(ctx.deps)).sweep();
    assert.deepEqual(swept.requeued, [first.id]);
    const done = await finished(alice, destination.id, first.id);
    assert.equal(done.status, 'COMPLETED', done.error ?? '');
    assert.deepEqual(done.progress, { total: N, pushed: N, failed: 0, parts: 2 });
    assert.equal(await rowCount('crashed'), N);
    assert.equal(Number((await dest.query('SELECT count(DISTINCT id) AS n FROM crashed')).rows[0].n), N);
  });

  test('a push whose queue message never left (PENDING, untouched) is sent again by the sweep and runs once', async () => {
    const { destination } = await createDestination(alice, {
      name: 'Lost message',
      type: 'postgres',
      config: { connectionString: destUrl, table: 'lost_message' },
    });
    const made = await push(alice, destination.id, { filter: {} });
    await finished(alice, destination.id, made.id);
    // As if the process had stopped between the INSERT and the queue send: PENDING, nothing queued, long untouched.
    await ctx.deps.db
      .update(destinationPushes)
      .set({
        status: 'PENDING',
        pushed: 0,
        parts: 0,
        cursor: null,
        finishedAt: null,
        updatedAt: new Date(Date.now() - 600_000),
      })
      .where(eq(destinationPushes.id, made.id));
    await dest.query('TRUNCATE lost_message');
    const swept = await createDestinationPushRecovery(ctx.deps, createDestinationService(ctx.deps)).sweep();
    assert.deepEqual(swept.requeued, [made.id]);
    const done = await finished(alice, destination.id, made.id);
    assert.equal(done.status, 'COMPLETED', done.error ?? '');
    assert.equal(await rowCount('lost_message'), N);
    const again = await createDestinationPushRecovery(ctx.deps, createDestinationService(ctx.deps)).sweep();
    assert.deepEqual(again.requeued, [], 'a push just touched is not sent again');
  });
});

describe('s3 destinations', () => {
  const s3Config = (over: Record<string, unknown> = {}) => ({
    bucket: 'leads',
    region: s3.region,
    endpoint: s3.endpoint,
    forcePathStyle: true,
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    prefix: 'exports/quarry/',
    ...over,
  });

  test('JSONL objects under deterministic keys; a resumed push overwrites, never adds', async () => {
    const { destination } = await createDestination(alice, { name: 'Bucket', type: 's3', config: s3Config() });
    const got = await ctx.call(alice, 'GET', `/api/destinations/${destination.id}`);
    assert.ok(!got.body.includes(s3.secretAccessKey));
    assert.deepEqual(got.json().data.destination.secretSet, { secretAccessKey: true });
    const ids = [aliceIds[0]!, aliceIds[5]!, aliceIds[7]!];
    const p = await finished(alice, destination.id, (await push(alice, destination.id, { leadIds: ids })).id);
    assert.equal(p.status, 'COMPLETED', p.error ?? '');
    const key = `exports/quarry/${p.id}/part-00001.jsonl`;
    const object = s3.buckets.get('leads')!.get(key);
    assert.ok(object, [...s3.buckets.get('leads')!.keys()].join());
    const lines = object.body
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      lines.map((l) => l.id),
      [...ids].reverse(),
    );
    assert.equal(lines[0].lastName, 'O"Brien, "Jr"');

    // As if the worker died before recording its batch: the run again puts the same key.
    await ctx.deps.db
      .update(destinationPushes)
      .set({ status: 'RUNNING', workerId: 'dead', heartbeatAt: new Date(Date.now() - 120_000), pushed: 0, parts: 0 })
      .where(eq(destinationPushes.id, p.id));
    await ctx.deps.db.update(destinationPushes).set({ cursor: null }).where(eq(destinationPushes.id, p.id));
    await createDestinationPushRecovery(ctx.deps, createDestinationService(ctx.deps)).sweep();
    const again = await finished(alice, destination.id, p.id);
    assert.equal(again.status, 'COMPLETED');
    const mine = [...s3.buckets.get('leads')!.keys()].filter((k) => k.includes(p.id));
    assert.deepEqual(mine, [key]);
    assert.deepEqual(
      s3.puts.filter((k) => k.includes(p.id)),
      [`leads/${key}`, `leads/${key}`],
    );
  });

  test('CSV objects; a wrong secret is refused on create, and fails the push with skipTest', async () => {
    const { destination } = await createDestination(alice, {
      name: 'CSV',
      type: 's3',
      config: s3Config({ format: 'csv', prefix: undefined }),
    });
    const p = await finished(
      alice,
      destination.id,
      (await push(alice, destination.id, { filter: { company: 'Acme' } })).id,
    );
    assert.equal(p.status, 'COMPLETED', p.error ?? '');
    const csv = s3.buckets.get('leads')!.get(`${p.id}/part-00001.csv`)!.body.toString('utf8');
    const lines = csv.trim().split('\r\n');
    assert.equal(lines[0], 'id,first_name,last_name,email,phone,company,job_title,status,tags,source_url,created_at');
    assert.equal(lines.length, 1 + N / 2);
    assert.ok(lines.includes(lines.find((l) => l.includes('O""Brien, ""Jr""'))!));

    const wrong = await ctx.call(alice, 'POST', '/api/destinations', {
      name: 'Wrong',
      type: 's3',
      config: s3Config({ secretAccessKey: 'not-the-secret' }),
    });
    assertError(wrong, 400, 'CONNECTION_FAILED');
    assert.match(wrong.json().error.message, /403/);
    const skipped = await createDestination(alice, {
      name: 'Wrong, unchecked',
      type: 's3',
      skipTest: true,
      config: s3Config({ secretAccessKey: 'not-the-secret' }),
    });
    const failed = await finished(
      alice,
      skipped.destination.id,
      (await push(alice, skipped.destination.id, { leadIds: [aliceIds[0]] })).id,
    );
    assert.equal(failed.status, 'FAILED');
    assert.match(failed.error ?? '', /SignatureDoesNotMatch/);
    assert.ok(!failed.error!.includes('not-the-secret'));
  });
});

describe('webhook destinations', () => {
  test('batches are POSTed signed as webhooks are; the secret is shown once; events fire', async () => {
    const events = await startWebhookReceiver();
    try {
      const hook = await ctx.call(alice, 'POST', '/api/webhooks', {
        url: events.url,
        eventTypes: ['destination.push.completed'],
      });
      assert.equal(hook.statusCode, 201, hook.body);
      const eventSecret = hook.json().data.secret ?? hook.json().data.webhook?.secret;

      const { destination, signingSecret } = await createDestination(alice, {
        name: 'Hook',
        type: 'webhook',
        config: { url: hooks.url },
      });
      assert.match(signingSecret ?? '', /^whsec_/);
      // The answer carrying the secret is never kept for an Idempotency-Key replay: the same key makes another.
      const again = async () =>
        ctx.inject({
          method: 'POST',
          url: '/api/destinations',
          headers: { ...alice.headers, 'idempotency-key': 'hook-once' },
          payload: { name: 'Hook 2', type: 'webhook', config: { url: hooks.url }, skipTest: true },
        });
      const [first, second] = [await again(), await again()];
      assert.notEqual(first.json().data.destination.id, second.json().data.destination.id);
      for (const made of [first, second])
        await ctx.call(alice, 'DELETE', `/api/destinations/${made.json().data.destination.id}`);
      const test = verifyWith(signingSecret!, (await hooks.waitFor(1))[0]!);
      assert.equal(test.type, 'destination.test');
      const got = await ctx.call(alice, 'GET', `/api/destinations/${destination.id}`);
      assert.ok(!got.body.includes(signingSecret!.slice(6)));
      assert.deepEqual(got.json().data.destination.config, { url: hooks.url });

      const p = await finished(
        alice,
        destination.id,
        (await push(alice, destination.id, { filter: { tag: 'b2b' } })).id,
      );
      assert.equal(p.status, 'COMPLETED', p.error ?? '');
      assert.equal(p.progress.parts, N / 500);
      const batches = (await hooks.waitFor(1 + N / 500)).slice(1);
      const received = batches.map((r) => verifyWith(signingSecret!, r));
      assert.deepEqual(
        batches.map((r) => r.headers['webhook-id']),
        batches.map((_, i) => `${p.id}_${i + 1}`),
      );
      assert.equal(
        received.every((b) => b.type === 'destination.push.batch'),
        true,
      );
      const ids = received.flatMap((b) => b.data.leads.map((l: { id: string }) => l.id));
      assert.equal(new Set(ids).size, N);

      const [event] = await events.waitFor(1, 20_000);
      const body = eventSecret ? verifyWith(eventSecret, event!) : JSON.parse(event!.body);
      assert.equal(body.type, 'destination.push.completed');
      assert.equal(body.data.pushId, p.id);
      assert.equal(body.data.pushed, N);
      eventDataSchemas['destination.push.completed'].parse(body.data);
    } finally {
      await events.close();
    }
  });
});

describe('isolation and bad input', () => {
  test("another user's destination, push and leads are 404", async () => {
    const { destination } = await createDestination(alice, {
      name: 'Mine',
      type: 'postgres',
      skipTest: true,
      config: { connectionString: destUrl, table: 'mine' },
    });
    assertError(await ctx.call(bob, 'GET', `/api/destinations/${destination.id}`), 404, 'NOT_FOUND');
    assertError(
      await ctx.call(bob, 'POST', `/api/destinations/${destination.id}/push`, { filter: {} }),
      404,
      'NOT_FOUND',
    );
    assertError(await ctx.call(bob, 'GET', `/api/destinations/${destination.id}/pushes`), 404, 'NOT_FOUND');
    assertError(await ctx.call(bob, 'DELETE', `/api/destinations/${destination.id}`), 404, 'NOT_FOUND');
    assert.deepEqual((await ctx.call(bob, 'GET', '/api/destinations')).json().data.destinations, []);
    const [bobLead] = await seedLeads(ctx.deps.db, bob.id, [{ email: 'bob@example.com' }]);
    const res = await ctx.call(alice, 'POST', `/api/destinations/${destination.id}/push`, {
      leadIds: [aliceIds[0], bobLead],
    });
    assertError(res, 404, 'NOT_FOUND');
    assert.equal(res.json().error.details[0].field, 'leadIds');
    const p = await push(alice, destination.id, { leadIds: [aliceIds[1]] });
    assertError(await ctx.call(bob, 'GET', `/api/destinations/${destination.id}/pushes/${p.id}`), 404, 'NOT_FOUND');
    assertError(await ctx.call(alice, 'GET', `/api/destinations/${destination.id}/pushes/nope`), 404, 'NOT_FOUND');
    await finished(alice, destination.id, p.id);
    const deleted = await ctx.call(alice, 'DELETE', `/api/destinations/${destination.id}`);
    assert.equal(deleted.statusCode, 200);
    assertError(await ctx.call(alice, 'GET', `/api/destinations/${destination.id}`), 404, 'NOT_FOUND');
  });

  test('bad input is a 400 naming the field, and nothing is stored', async () => {
    const bad = (body: unknown) => ctx.call(alice, 'POST', '/api/destinations', body);
    assertValidation(await bad({ name: 'x', type: 'ftp', config: {} }), 'type');
    assertValidation(await bad({ name: 'x', type: 'postgres', config: { connectionString: destUrl } }), 'config.table');
    assertValidation(
      await bad({ name: 'x', type: 'postgres', config: { connectionString: destUrl, table: 'a; drop table x' } }),
      'config.table',
    );
    assertValidation(await bad({ name: 'x', type: 'postgres', config: { table: 't', host: 'h' } }), 'config.database');
    assertValidation(await bad({ name: 'x', type: 'webhook', config: { url: 'ftp://x' } }), 'config.url');
    assertValidation(
      await bad({ name: 'x', type: 'webhook', config: { url: 'https://me:secret@hooks.example.com/in' } }),
      'config.url',
    );
    // Quarry parses the URL itself: the driver's parser would read the files ssl* name on this server, and take a
    // host= from the query string past the SSRF guard.
    for (const query of ['sslrootcert=/etc/hostname', 'sslcert=/etc/hostname&sslkey=/proc/self/environ', 'host=/tmp']) {
      assertValidation(
        await bad({ name: 'x', type: 'postgres', config: { connectionString: `${destUrl}?${query}`, table: 't' } }),
        'config.connectionString',
      );
    }
    assertValidation(
      await bad({ name: 'x', type: 'postgres', config: { connectionString: 'postgres://u:p@h:abc/db', table: 't' } }),
      'config.connectionString',
    );
    assertValidation(
      await bad({
        name: 'x',
        type: 's3',
        config: { bucket: 'B', region: 'us-east-1', accessKeyId: 'a', secretAccessKey: 'b' },
      }),
      'config.bucket',
    );
    assertValidation(await bad({ name: '', type: 'webhook', config: { url: hooks.url } }), 'name');
    const before = (await ctx.call(alice, 'GET', '/api/destinations?limit=1000')).json().data.destinations.length;
    const { destination } = await createDestination(alice, {
      name: 'For pushes',
      type: 'webhook',
      skipTest: true,
      config: { url: hooks.url },
    });
    const pushBad = (body: unknown) => ctx.call(alice, 'POST', `/api/destinations/${destination.id}/push`, body);
    assertValidation(await pushBad({ mode: 'append' }), 'leadIds');
    assertValidation(await pushBad({ leadIds: [aliceIds[0]], filter: {} }), 'leadIds');
    assertValidation(await pushBad({ leadIds: ['nope'] }), 'leadIds.0');
    assertValidation(await pushBad({ filter: {}, mode: 'merge' }), 'mode');
    assertValidation(await pushBad({ filter: { status: 'SHINY' } }), 'filter.status');
    assertValidation(await pushBad({ filter: { colour: 'red' } }), 'filter');
    assertValidation(await ctx.call(alice, 'GET', '/api/destinations?cursor=zz'), 'cursor');
    const after = (await ctx.call(alice, 'GET', '/api/destinations?limit=1000')).json().data.destinations.length;
    assert.equal(after, before + 1);
  });
});

describe('the SSRF guard', () => {
  let guarded: TestContext;
  let user: TestUser;
  before(async () => {
    guarded = await createTestContext({ env: { ALLOW_PRIVATE_NETWORK: 'false' } });
    user = await guarded.signup();
  });
  after(async () => guarded?.close());

  test('destinations on loopback are refused on create, and their pushes fail with skipTest', async () => {
    for (const [type, config] of [
      ['postgres', { connectionString: destUrl, table: 'ssrf' }],
      ['webhook', { url: hooks.url }],
      [
        's3',
        {
          bucket: 'leads',
          region: 'us-east-1',
          endpoint: s3.endpoint,
          forcePathStyle: true,
          accessKeyId: 'a',
          secretAccessKey: 'b',
        },
      ],
    ] as const) {
      const res = await guarded.call(user, 'POST', '/api/destinations', { name: type, type, config });
      assertError(res, 400, 'CONNECTION_FAILED');
      assert.match(res.json().error.message, /Refused to connect to 127\.0\.0\.1/, type);
    }
    const [lead] = await seedLeads(guarded.deps.db, user.id, [{ email: 'a@example.com' }]);
    const { destination } = await createDestination(
      user,
      {
        name: 'pg',
        type: 'postgres',
        skipTest: true,
        config: { host: 'localhost', database: destName, user: 'postgres', table: 'ssrf' },
      },
      guarded,
    );
    const p = await finished(
      user,
      destination.id,
      (await push(user, destination.id, { leadIds: [lead] }, guarded)).id,
      guarded,
    );
    assert.equal(p.status, 'FAILED');
    assert.match(p.error ?? '', /Refused to connect/);
    const exists = await dest.query(`SELECT to_regclass('public.ssrf') AS t`);
    assert.equal(exists.rows[0].t, null);
  });
});
