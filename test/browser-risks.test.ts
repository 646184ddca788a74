/**
 * The cloud browser's known risks, closed: a client's Browser.close releases its session (Playwright's close of a
 * connectOverCDP browser only disconnects), a suspended user's cdpUrl opens nothing and their open connections
 * close, and the guard proxy's peer check learns which Chromium process opens connections instead of scanning
 * /proc for each.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { after, before, describe, it, mock } from 'node:test';
import { sql } from 'drizzle-orm';
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import WebSocket from 'ws';
import { queryRows } from '../src/db/client.ts';
import { browserSessionsOf } from '../src/modules/browser/index.ts';
import { forgetGroup, peerInGroup } from '../src/modules/browser/pool/peer.ts';
import { CLOSED_BY_CLIENT } from '../src/modules/browser/sessions/sessions.service.ts';
import { eventDataSchemas } from '../src/shared/event-payloads.ts';
import { eventually, type TestUser } from './helpers/app.ts';
import { type BrowserTestContext, createBrowserContext, running, upgradeStatus } from './helpers/browser.ts';

let ctx: BrowserTestContext;
let root: TestUser;
let alice: TestUser;

before(async () => {
  ctx = await createBrowserContext({ env: { ADMIN_EMAILS: 'root@example.com' } });
  root = await ctx.signup({ email: 'root@example.com' });
  alice = await ctx.signup();
});
after(async () => {
  await ctx.close();
});

const create = async (user: TestUser, body: object = {}) => {
  const res = await ctx.api(user, 'POST', '/api/browser/sessions', body);
  assert.equal(res.statusCode, 201, JSON.stringify(res.json()));
  return res.json().data.session;
};

/** The stored row, read past the API (a suspended user's key cannot read it). */
const rowOf = async (id: string) => {
  const [row] = await queryRows<{ status: string; end_reason: string | null }>(
    ctx.deps.db,
    sql`SELECT status, end_reason FROM browser_sessions WHERE id = ${id}`,
  );
  return row!;
};

const opened = (url: string) =>
  new Promise<WebSocket>((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });

describe("a client's Browser.close", () => {
  it("Playwright's close of a connectOverCDP browser disconnects only; the session stays LIVE", async () => {
    const session = await create(alice);
    const pid = browserSessionsOf(ctx.deps).host!.get(session.id)!.chromium.pid;
    const pw = await chromium.connectOverCDP(session.cdpUrl);
    const page = await pw.contexts()[0]!.newPage();
    await page.setContent('<p>kept</p>');
    await pw.close();
    await eventually(async () => {
      const s = (await ctx.api(alice, 'GET', `/api/browser/sessions/${session.id}`)).json().data.session;
      return s.connectedClients === 0;
    }, 5000);
    // Past a reaper round: still running, page and all.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const s = (await ctx.api(alice, 'GET', `/api/browser/sessions/${session.id}`)).json().data.session;
    assert.equal(s.status, 'LIVE');
    assert.ok(running(pid));
    const again = await chromium.connectOverCDP(s.cdpUrl);
    const texts = await Promise.all(
      again
        .contexts()[0]!
        .pages()
        .map((p) => p.content()),
    );
    assert.ok(texts.some((t) => t.includes('kept')));
    await again.close();
    await ctx.api(alice, 'DELETE', `/api/browser/sessions/${session.id}`);
  });

  it('a raw Browser.close ends the session RELEASED by its client: event, minutes, Chromium gone', async () => {
    const hook = await ctx.api(alice, 'POST', '/api/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      eventTypes: ['browser.session.ended'],
    });
    assert.equal(hook.statusCode, 201, JSON.stringify(hook.json()));
    const session = await create(alice, { metadata: { run: 'close' } });
    const live = browserSessionsOf(ctx.deps).host!.get(session.id)!;
    const { pid, userDataDir } = live.chromium;
    const balance = await ctx.deps.credits.balance(ctx.deps.db, alice.id);
    const ws = await opened(session.cdpUrl);
    const closed = new Promise((resolve) => ws.once('close', resolve));
    const answer = new Promise<any>((resolve) => ws.once('message', (data) => resolve(JSON.parse(String(data)))));
    ws.send(JSON.stringify({ id: 7, method: 'Browser.close' }));
    assert.deepEqual(await answer, { id: 7, result: {} });
    await closed;
    const done = await eventually(async () => {
      const s = (await ctx.api(alice, 'GET', `/api/browser/sessions/${session.id}`)).json().data.session;
      return s.status === 'LIVE' ? undefined : s;
    }, 10_000);
    assert.equal(done.status, 'RELEASED');
    assert.equal(done.endReason, CLOSED_BY_CLIENT);
    assert.ok(!running(pid), 'Chromium is gone');
    assert.ok(!fs.existsSync(userDataDir), 'its profile directory too');
    assert.equal(await ctx.deps.credits.balance(ctx.deps.db, alice.id), balance - 1, 'one started minute charged');
    const events = await queryRows<{ data: Record<string, unknown> }>(
      ctx.deps.db,
      sql`SELECT data FROM webhook_events WHERE user_id = ${alice.id} AND type = 'browser.session.ended'`,
    );
    const mine = events
      .map((e) => eventDataSchemas['browser.session.ended'].parse(e.data))
      .filter((d) => d.sessionId === session.id);
    assert.equal(mine.length, 1);
    assert.equal(mine[0]!.status, 'RELEASED');
    assert.equal(mine[0]!.endReason, CLOSED_BY_CLIENT);
  });

  it("Puppeteer's browser.close() (which sends Browser.close) releases the session too", async () => {
    const session = await create(alice);
    const pp = await puppeteer.connect({ browserWSEndpoint: session.cdpUrl, defaultViewport: null });
    await pp.close();
    const done = await eventually(async () => {
      const row = await rowOf(session.id);
      return row.status === 'LIVE' ? undefined : row;
    }, 10_000);
    assert.deepEqual(done, { status: 'RELEASED', end_reason: CLOSED_BY_CLIENT });
  });
});

describe('a suspended user', () => {
  it('a cdpUrl of a suspended user opens nothing (403), and opens again once they are active', async () => {
    const session = await create(alice);
    await ctx.deps.db.execute(sql`UPDATE users SET status = 'suspended' WHERE id = ${alice.id}`);
    try {
      // Suspended behind the service's back (no notification): the token alone still must not do.
      assert.equal(await upgradeStatus(session.cdpUrl), 403);
    } finally {
      await ctx.deps.db.execute(sql`UPDATE users SET status = 'active' WHERE id = ${alice.id}`);
    }
    assert.equal(await upgradeStatus(session.cdpUrl), 101);
    await ctx.api(alice, 'DELETE', `/api/browser/sessions/${session.id}`);
  });

  it('suspending closes their open CDP connections and releases their sessions', async () => {
    const bob = await ctx.signup();
    const session = await create(alice);
    const bobs = await create(bob);
    const ws = await opened(session.cdpUrl);
    const closed = new Promise<number>((resolve) => ws.once('close', resolve));
    const res = await ctx.api(root, 'PATCH', `/api/admin/users/${alice.id}`, { status: 'suspended' });
    assert.equal(res.statusCode, 200, JSON.stringify(res.json()));
    assert.notEqual(await closed, 1000);
    const done = await eventually(async () => {
      const row = await rowOf(session.id);
      return row.status === 'LIVE' ? undefined : row;
    }, 10_000);
    assert.deepEqual(done, { status: 'RELEASED', end_reason: 'the account was suspended' });
    assert.equal(await upgradeStatus(session.cdpUrl), 403);
    // Another user's session is not touched.
    assert.equal((await rowOf(bobs.id)).status, 'LIVE');
    await ctx.api(root, 'PATCH', `/api/admin/users/${alice.id}`, { status: 'active' });
    await ctx.api(bob, 'DELETE', `/api/browser/sessions/${bobs.id}`);
  });
});

describe("the guard proxy's peer check", () => {
  /** A process in a group of its own that opens `count` connections to `port`, `burst` at a time. */
  const connector = (port: number, count: number, burst = 1) =>
    spawn(
      process.execPath,
      [
        '-e',
        `const net = require('node:net');
         (async () => {
           const one = () => new Promise((resolve) => {
             const s = net.connect(${port}, '127.0.0.1');
             s.once('data', () => { s.destroy(); resolve(); });
             s.once('error', resolve);
           });
           for (let i = 0; i < ${count}; i += ${burst}) await Promise.all(Array.from({ length: ${burst} }, one));
         })();`,
      ],
      { detached: true, stdio: 'ignore' },
    );

  it("admits the group's connections, scanning /proc once for the group, and nobody else's", async () => {
    const verdicts: boolean[] = [];
    let pgid = 0;
    /** When set, connections wait until that many are open, then are all checked at once (a page's first burst). */
    let holdFor = 0;
    let held: net.Socket[] = [];
    const server = net.createServer(async (socket) => {
      if (holdFor === 0) {
        verdicts.push(await peerInGroup(socket, pgid));
        socket.end('x');
        return;
      }
      held.push(socket);
      if (held.length < holdFor) return;
      const burst = held;
      held = [];
      verdicts.push(...(await Promise.all(burst.map((s) => peerInGroup(s, pgid)))));
      for (const s of burst) s.end('x');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const readdir = fs.readdirSync;
    let procScans = 0;
    mock.method(fs, 'readdirSync', (...args: Parameters<typeof readdir>) => {
      if (args[0] === '/proc') procScans++;
      return readdir(...args);
    });
    try {
      const child = connector(port, 20);
      pgid = child.pid!;
      await new Promise((resolve) => child.once('exit', resolve));
      assert.equal(verdicts.length, 20);
      assert.ok(verdicts.every(Boolean), 'every connection of the group admitted');
      assert.equal(procScans, 1, 'one scan of /proc, then the member learnt answers');

      // This process is not in the group, and a forgotten group is scanned again.
      forgetGroup(pgid);
      const own = net.connect(port, '127.0.0.1');
      await eventually(async () => verdicts.length === 21, 5000);
      own.destroy();
      assert.equal(verdicts[20], false);
      assert.equal(procScans, 2);

      // Many at once (a page's first requests): they share reads of the socket table.
      const readFile = fs.promises.readFile;
      let tableReads = 0;
      mock.method(fs.promises, 'readFile', (...args: Parameters<typeof readFile>) => {
        if (args[0] === '/proc/net/tcp') tableReads++;
        return readFile(...args);
      });
      holdFor = 20;
      const burst = connector(port, 20, 20);
      pgid = burst.pid!;
      await new Promise((resolve) => burst.once('exit', resolve));
      assert.equal(verdicts.length, 41);
      assert.ok(verdicts.slice(21).every(Boolean), 'every connection of the burst admitted');
      assert.ok(tableReads <= 10, `${tableReads} reads of /proc/net/tcp for 20 connections`);
    } finally {
      mock.restoreAll();
      server.close();
    }
  });
});
