/**
 * How sessions end and whether they may start: idle and hard timeouts (short settings), a connected client
 * holding a session, keepAlive, Chromium killed → FAILED, capacity 429 with Retry-After, minutes charged.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'drizzle-orm';
import WebSocket from 'ws';
import { queryRows } from '../src/db/client.ts';
import { browserSessionsOf } from '../src/modules/browser/index.ts';
import { admit, dueEnding, minutesOf } from '../src/modules/browser/sessions/lifecycle.ts';
import { eventDataSchemas } from '../src/shared/event-payloads.ts';
import { eventually, type TestUser } from './helpers/app.ts';
import { type BrowserTestContext, createBrowserContext, ourChromiumPids } from './helpers/browser.ts';

describe('decisions', () => {
  const live = { expiresAt: 10_000, idleTimeoutMs: 1000, keepAlive: false, clients: 0, lastActivity: 0 };
  it('ends at the deadline, or idle without clients unless keepAlive', () => {
    assert.equal(dueEnding(live, 999), undefined);
    assert.deepEqual(dueEnding(live, 1000), { status: 'EXPIRED', reason: 'idle' });
    assert.equal(dueEnding({ ...live, clients: 1 }, 5000), undefined);
    assert.equal(dueEnding({ ...live, keepAlive: true }, 5000), undefined);
    assert.deepEqual(dueEnding({ ...live, keepAlive: true, clients: 2 }, 10_000), {
      status: 'EXPIRED',
      reason: 'timeout',
    });
  });
  it('admits within every limit, and says why not otherwise', () => {
    const limits = { maxPerHost: 2, maxPerUser: 2, maxPerClientRef: 1, minFreeMemoryMb: 100 };
    const room = { hostLive: 1, userLive: 1, refLive: 0, freeMemoryMb: 500 };
    assert.equal(admit(room, limits), undefined);
    assert.match(admit({ ...room, hostLive: 2 }, limits)!.message, /host/);
    assert.match(admit({ ...room, freeMemoryMb: 99 }, limits)!.message, /memory/);
    assert.match(admit({ ...room, userLive: 2 }, limits)!.message, /per user/);
    assert.match(admit({ ...room, refLive: 1 }, limits)!.message, /clientRef/);
    assert.equal(admit({ ...room, refLive: undefined }, limits), undefined);
    assert.ok(admit({ ...room, hostLive: 2 }, limits)!.retryAfterSeconds > 0);
  });
  it('charges started minutes, at least one', () => {
    assert.equal(minutesOf(0, 1), 1);
    assert.equal(minutesOf(0, 60_000), 1);
    assert.equal(minutesOf(0, 60_001), 2);
  });
});

describe('sessions on a host', () => {
  let ctx: BrowserTestContext;
  let alice: TestUser;
  let bob: TestUser;
  const S = '/api/browser/sessions';

  before(async () => {
    ctx = await createBrowserContext({
      env: { BROWSER_MAX_SESSIONS: '3', BROWSER_MAX_SESSIONS_PER_USER: '2', BROWSER_MAX_SESSIONS_PER_CLIENT_REF: '1' },
    });
    [alice, bob] = await Promise.all([ctx.signup(), ctx.signup()]);
  });
  after(async () => {
    await ctx.close();
  });

  const create = async (user: TestUser, body: object = {}, headers: Record<string, string> = {}) => {
    const res = await ctx.api(user, 'POST', S, body, headers);
    assert.equal(res.statusCode, 201, JSON.stringify(res.json()));
    return res.json().data.session;
  };
  const read = async (user: TestUser, id: string) => (await ctx.api(user, 'GET', `${S}/${id}`)).json().data.session;
  const ended = (user: TestUser, id: string) =>
    eventually(async () => {
      const s = await read(user, id);
      return s.status !== 'LIVE' && s;
    }, 8000);

  it('idle: ends with no client and no action; a connected client or keepAlive holds it', async () => {
    const balance = await ctx.deps.credits.balance(ctx.deps.db, alice.id);
    const idle = await create(alice, { idleTimeoutMs: 1000 });
    const kept = await create(alice, { idleTimeoutMs: 1000, keepAlive: true });
    const s = await ended(alice, idle.id);
    assert.equal(s.status, 'EXPIRED');
    assert.equal(s.endReason, 'idle');
    assert.equal(await ctx.deps.credits.balance(ctx.deps.db, alice.id), balance - 1, 'one started minute charged');
    assert.equal((await read(alice, kept.id)).status, 'LIVE');
    // keepAlive off again, but a client is connected: still live until it leaves.
    await ctx.api(alice, 'PATCH', `${S}/${kept.id}`, { keepAlive: false });
    const ws = new WebSocket((await read(alice, kept.id)).cdpUrl);
    await new Promise((resolve) => ws.once('open', resolve));
    await eventually(async () => (await read(alice, kept.id)).connectedClients === 1, 3000);
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal((await read(alice, kept.id)).status, 'LIVE');
    ws.close();
    assert.equal((await ended(alice, kept.id)).endReason, 'idle');
  });

  it('hard timeout: ends at expiresAt whatever the clients', async () => {
    // Long enough that a loaded machine still connects before the deadline (a connect after it is refused).
    const s = await create(alice, { timeoutMs: 4000, keepAlive: true });
    const ws = new WebSocket(s.cdpUrl);
    await new Promise((resolve) => ws.once('open', resolve));
    const closed = new Promise((resolve) => ws.once('close', resolve));
    const done = await eventually(async () => {
      const now = await read(alice, s.id);
      return now.status !== 'LIVE' && now;
    }, 12_000);
    assert.equal(done.status, 'EXPIRED');
    assert.equal(done.endReason, 'timeout');
    assert.ok(Date.parse(done.endedAt) - Date.parse(done.expiresAt) < 5000, 'within the reaper period');
    await closed;
  });

  it('a Chromium killed by SIGKILL marks its session FAILED with the reason, and tells the webhooks', async () => {
    const hook = await ctx.api(alice, 'POST', '/api/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      eventTypes: ['browser.session.ended'],
    });
    assert.equal(hook.statusCode, 201, JSON.stringify(hook.json()));
    const s = await create(alice, { metadata: { run: 'kill' } });
    const live = browserSessionsOf(ctx.deps).host!.get(s.id)!;
    process.kill(live.chromium.pid, 'SIGKILL');
    const done = await ended(alice, s.id);
    assert.equal(done.status, 'FAILED');
    assert.match(done.endReason, /SIGKILL/);
    const events = await queryRows<{ data: Record<string, unknown> }>(
      ctx.deps.db,
      sql`SELECT data FROM webhook_events WHERE user_id = ${alice.id} AND type = 'browser.session.ended'`,
    );
    const data = events.map((e) => eventDataSchemas['browser.session.ended'].parse(e.data));
    const mine = data.find((d) => d.sessionId === s.id);
    assert.ok(mine, 'one event for the session');
    assert.equal(mine.status, 'FAILED');
    assert.deepEqual(mine.metadata, { run: 'kill' });
    assert.equal(mine.minutes, 1);
  });

  it('a browser whose row another process ended (a sweep while this host lagged) is stopped here', async () => {
    const s = await create(alice);
    const host = browserSessionsOf(ctx.deps).host!;
    const pid = host.get(s.id)!.chromium.pid;
    await ctx.deps.db.execute(
      sql`UPDATE browser_sessions SET status = 'FAILED', end_reason = 'host lost', ended_at = now() WHERE id = ${s.id}`,
    );
    // The host looks for such rows every 30 reaper rounds (one a second).
    await eventually(async () => host.get(s.id) === undefined, 45_000, 250);
    await eventually(async () => !ourChromiumPids().includes(pid), 10_000);
  });

  it('capacity: per clientRef, per user and per host, 429 CAPACITY_EXCEEDED with Retry-After', async () => {
    const refused = async (user: TestUser, headers: Record<string, string> = {}) => {
      const res = await ctx.api(user, 'POST', S, {}, headers);
      assert.equal(res.statusCode, 429, JSON.stringify(res.json()));
      assert.equal(res.json().error.code, 'CAPACITY_EXCEEDED');
      assert.ok(Number(res.headers['retry-after']) > 0);
      return res.json().error.message as string;
    };
    const x = { 'x-client-ref': 'x' };
    const before = (await ctx.api(alice, 'GET', S)).json().data.sessions;
    assert.deepEqual(
      before.filter((s: any) => s.status === 'LIVE'),
      [],
      'earlier sessions ended',
    );
    const first = await create(alice, {}, x);
    assert.match(await refused(alice, x), /clientRef/);
    const second = await create(alice);
    assert.match(await refused(alice), /per user/);
    const third = await create(bob);
    assert.match(await refused(bob), /host/);
    // Refusals are not counted: one released, one more fits.
    await ctx.api(alice, 'DELETE', `${S}/${first.id}`);
    const fourth = await create(bob);
    const all = await Promise.all([second, third, fourth].map((s) => read(s === second ? alice : bob, s.id)));
    assert.deepEqual(
      all.map((s) => s.status),
      ['LIVE', 'LIVE', 'LIVE'],
    );
    await ctx.api(alice, 'POST', `${S}/release-all`);
    await ctx.api(bob, 'POST', `${S}/release-all`);
  });
});

describe('a warm pool', () => {
  it('hands a launched Chromium to the next session and launches another', async () => {
    const ctx = await createBrowserContext({ env: { BROWSER_WARM_POOL: '1' } });
    try {
      const user = await ctx.signup();
      const host = browserSessionsOf(ctx.deps).host!;
      await eventually(async () => host.warmCount === 1, 15_000);
      const before = new Set(ourChromiumPids());
      const res = await ctx.api(user, 'POST', '/api/browser/sessions', {});
      assert.equal(res.statusCode, 201);
      const live = host.get(res.json().data.session.id)!;
      assert.ok(before.has(live.chromium.pid), 'the session runs on the warm Chromium');
      await eventually(async () => host.warmCount === 1, 15_000);
      const other = await ctx.api(user, 'POST', '/api/browser/sessions', { viewport: { width: 640, height: 480 } });
      assert.equal(other.statusCode, 201);
      assert.equal(host.warmCount, 1, 'another viewport launches its own');
    } finally {
      await ctx.close();
    }
  });
});

/** Our direct Chromium children (each the leader of its session's process group). */
function childChromium(): number[] {
  return ourChromiumPids().filter((pid) => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid;
    } catch {
      return false;
    }
  });
}

describe('a warm pool that is refilling', () => {
  it('stopping the service waits for the launch under way: no Chromium outlives stop()', async () => {
    const ctx = await createBrowserContext({ env: { BROWSER_WARM_POOL: '1' } });
    let closed = false;
    try {
      const user = await ctx.signup();
      const host = browserSessionsOf(ctx.deps).host!;
      await eventually(async () => host.warmCount === 1, 15_000);
      assert.equal((await ctx.api(user, 'POST', '/api/browser/sessions', {})).statusCode, 201);
      // The pool refills a moment after the session took its warm Chromium: stop while that launch runs.
      await eventually(async () => host.warmingCount === 1, 5_000, 10);
      await ctx.close();
      closed = true;
      assert.deepEqual(childChromium(), [], 'no Chromium of this service runs after stop()');
    } finally {
      if (!closed) await ctx.close();
    }
  });
});

describe('a host that cannot take sessions', () => {
  it('below the free-memory floor: 429; with RUN_BROWSERS=false: 503', async () => {
    for (const [env, status, code] of [
      [{ BROWSER_MIN_FREE_MEMORY_MB: '1000000' }, 429, 'CAPACITY_EXCEEDED'],
      [{ RUN_BROWSERS: 'false' }, 503, 'SERVICE_UNAVAILABLE'],
    ] as const) {
      const ctx = await createBrowserContext({ env });
      try {
        const user = await ctx.signup();
        const res = await ctx.api(user, 'POST', '/api/browser/sessions', {});
        assert.equal(res.statusCode, status, JSON.stringify(res.json()));
        assert.equal(res.json().error.code, code);
        if (status === 429) assert.match(res.json().error.message, /memory/);
        assert.deepEqual((await ctx.api(user, 'GET', '/api/browser/sessions')).json().data.sessions, []);
      } finally {
        await ctx.close();
      }
    }
  });
});

describe('a Chromium that does not come up', () => {
  it('a missing binary: 503 and the session FAILED; one that exits at start: 201, then FAILED with the reason', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-chromium-stub-'));
    const exiting = path.join(dir, 'chromium');
    fs.writeFileSync(exiting, '#!/bin/sh\nexit 3\n', { mode: 0o755 });
    try {
      const missing = await createBrowserContext({ env: { CHROMIUM_PATH: path.join(dir, 'absent') } });
      try {
        const user = await missing.signup();
        const res = await missing.api(user, 'POST', '/api/browser/sessions', {});
        assert.equal(res.statusCode, 503, JSON.stringify(res.json()));
        const [row] = (await missing.api(user, 'GET', '/api/browser/sessions')).json().data.sessions;
        assert.equal(row.status, 'FAILED');
        assert.match(row.endReason, /ENOENT/);
      } finally {
        await missing.close();
      }
      // The create answers once the process runs (CDP clients may connect while it starts); it never answers.
      const ctx = await createBrowserContext({ env: { CHROMIUM_PATH: exiting } });
      try {
        const user = await ctx.signup();
        const res = await ctx.api(user, 'POST', '/api/browser/sessions', {});
        assert.equal(res.statusCode, 201, JSON.stringify(res.json()));
        const done = await eventually(async () => {
          const s = (await ctx.api(user, 'GET', `/api/browser/sessions/${res.json().data.session.id}`)).json().data
            .session;
          return s.status !== 'LIVE' && s;
        }, 8000);
        assert.equal(done.status, 'FAILED');
        assert.equal(done.endReason, 'chromium exited (3)');
      } finally {
        await ctx.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
