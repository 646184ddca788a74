import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.ts';
import { assembleDeps } from '../src/assemble-deps.ts';
import { type Database, openDatabase } from '../src/db/client.ts';
import { createNotifier, LISTENER_APPLICATION_NAME, type Notifier } from '../src/shared/notify.ts';
import { asAnotherInstance, createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { type PgAdmin, pgAdmin } from './helpers/pg-admin.ts';

// PGlite's notifications are in-process: there is no connection to lose.
const skip = process.env.TEST_DATABASE_URL
  ? false
  : 'the LISTEN connection exists on PostgreSQL only: run with TEST_DATABASE_URL=postgres://…';

describe('cross-process notifications survive a database blip', { skip }, () => {
  let ctx: TestContext;
  let admin: PgAdmin;
  // A second instance on the same database: its own pool, listener and API-key cache, as another process has.
  let database2: Database;
  let notifier2: Notifier;
  let app2: FastifyInstance;

  before(async () => {
    ctx = await createTestContext();
    const url = ctx.deps.config.DATABASE_URL!;
    admin = await pgAdmin(url);
    database2 = await openDatabase({ databaseUrl: url, poolSize: 4 });
    notifier2 = createNotifier(database2, url, { logger: ctx.deps.logger });
    app2 = await buildApp(assembleDeps(asAnotherInstance({ ...ctx.deps, database: database2, notifier: notifier2 })));
    await app2.ready();
  });
  after(async () => {
    await admin?.allowConnections(true);
    await app2?.close();
    await notifier2?.close();
    await database2?.close();
    await admin?.close();
    await ctx?.close();
  });

  const listeners = async () => (await admin.backends('application_name = $2', [LISTENER_APPLICATION_NAME])).length;
  const newKey = async (user: TestUser) => {
    const res = await ctx.inject({
      method: 'POST',
      url: '/api/api-keys',
      headers: user.headers,
      payload: { name: 'blip', scopes: ['*'] },
    });
    assert.equal(res.statusCode, 201);
    const { id, key } = res.json().data.apiKey;
    return { id: id as string, headers: { authorization: `Bearer ${key}` } };
  };
  const statusOn = async (app: FastifyInstance, headers: Record<string, string>) =>
    (await app.inject({ method: 'GET', url: '/api/users', headers })).statusCode;

  test('one listener connection per process, however many subscribe at once', async () => {
    // Both instances have subscribed (API-key cache, job cancels); this waits for the second's listener.
    await notifier2.subscribe('quarry_test_settle', () => {});
    assert.equal(await listeners(), 2, 'one LISTEN connection for each of the two instances');

    const notifier = createNotifier(ctx.deps.database, ctx.deps.config.DATABASE_URL);
    try {
      const received: string[] = [];
      const channels = ['quarry_test_a', 'quarry_test_b', 'quarry_test_c'];
      await Promise.all(
        channels.map((channel) => notifier.subscribe(channel, (payload) => received.push(`${channel}:${payload}`))),
      );
      assert.equal(await listeners(), 3, 'three overlapping subscribe() calls share one new connection');
      for (const channel of channels) await ctx.deps.notifier.publish(channel, 'x');
      await eventually(async () => received.length === 3, 5000, 20);
      assert.deepEqual(
        received.sort(),
        channels.map((c) => `${c}:x`),
      );
    } finally {
      await notifier.close();
    }
  });

  test('listeners killed, connections refused for 5 s: they come back, and caches are re-read', async () => {
    const probes: string[] = [];
    await notifier2.subscribe('quarry_test_probe', (payload) => probes.push(payload));
    const user = await ctx.signup();
    const revokedDuringOutage = await newKey(user);
    const revokedAfter = await newKey(user);
    // Cached on the second instance (its cache would serve them for 30 s without a notification).
    assert.equal(await statusOn(app2, revokedDuringOutage.headers), 200);
    assert.equal(await statusOn(app2, revokedAfter.headers), 200);
    assert.equal(await statusOn(ctx.app, user.headers), 200); // the first instance's pool has a live connection

    await admin.allowConnections(false);
    try {
      assert.ok((await admin.terminate('application_name = $2', [LISTENER_APPLICATION_NAME])) >= 2);
      // Revoked through the first instance (its pool's open connection) while no listener can hear it.
      const revoke = await ctx.inject({
        method: 'DELETE',
        url: `/api/api-keys/${revokedDuringOutage.id}`,
        headers: user.headers,
      });
      assert.equal(revoke.statusCode, 200);
      await new Promise((r) => setTimeout(r, 5000));
      assert.equal(await listeners(), 0, 'no listener while the database refuses connections');
    } finally {
      await admin.allowConnections(true);
    }

    // The second instance listens again once a notification from the first reaches it.
    let probe = 0;
    await eventually(
      async () => {
        await ctx.deps.notifier.publish('quarry_test_probe', String(++probe));
        return probes.length > 0;
      },
      30_000,
      50,
    ).catch(() => {
      throw new Error('the listener did not reconnect after the database accepted connections again');
    });
    // It dropped its cached keys on reconnecting: the key revoked meanwhile is refused.
    await eventually(async () => (await statusOn(app2, revokedDuringOutage.headers)) === 401, 2000, 20);

    // And notifications flow again: a revoke now reaches the second instance at once.
    assert.equal(await statusOn(app2, revokedAfter.headers), 200);
    const revoke = await ctx.inject({
      method: 'DELETE',
      url: `/api/api-keys/${revokedAfter.id}`,
      headers: user.headers,
    });
    assert.equal(revoke.statusCode, 200);
    await eventually(async () => (await statusOn(app2, revokedAfter.headers)) === 401, 2000, 20);
    // Each instance is back to its one listener (the first may still be waiting out its backoff).
    await eventually(async () => (await listeners()) === 2, 30_000, 100);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await listeners(), 2, 'one listener per instance after reconnecting');
  });
});
