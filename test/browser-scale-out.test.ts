/**
 * Scale-out on PostgreSQL: two service processes on one database, A hosting browsers and B without. Everything
 * goes through B: the create (forwarded to the live host with room), reads, actions, a screenshot, the SSE log
 * stream, Playwright over the cdpUrl B answers, release; tenancy is the host's; a forwarded request is never
 * forwarded again; a second live process cannot take A's host id; a kill -9 of A fails its session within 30 s.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium } from 'playwright-core';
import WebSocket from 'ws';
import { cdpTokenKey, signCdpToken } from '../src/modules/browser/cdp/token.ts';
import { forwardedHeaders, HOP_HEADER, openUpstream, wasForwarded } from '../src/modules/browser/hosts/forward.ts';
import { recordedChromium, running, upgradeStatus } from './helpers/browser.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { type ApiClient, signedUpClient } from './helpers/http-client.ts';
import { freePort, pollUntil, type ServiceProcess, startService, waitHealthy } from './helpers/process.ts';

const skip = process.env.TEST_DATABASE_URL
  ? false
  : 'scale-out runs on PostgreSQL only (set TEST_DATABASE_URL): PGlite serves one process';
const S = '/api/browser/sessions';
const SECRET = 'scale-out-test-secret-material-0123456789';

describe('the forwarding loop guard', () => {
  it('a forwarded request carries the hop mark, and a marked request counts as forwarded', () => {
    const request = { headers: { authorization: 'Bearer k', cookie: 'c=1' }, host: 'b:1', protocol: 'http' };
    const headers = forwardedHeaders(request as never);
    assert.equal(headers[HOP_HEADER], '1');
    assert.equal(headers.authorization, 'Bearer k');
    assert.equal(headers.cookie, undefined, 'only the headers that matter cross');
    assert.equal(wasForwarded({ headers }), true);
    assert.equal(wasForwarded({ headers: request.headers }), false);
  });

  it('an upgrade to a host that is gone is a 503, not a hang', async () => {
    const port = await freePort();
    await assert.rejects(openUpstream(`http://127.0.0.1:${port}`, '/x', {}), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'SERVICE_UNAVAILABLE');
      return true;
    });
  });
});

describe('two processes on one PostgreSQL database', { skip }, () => {
  let db: TestDatabase;
  let a: ServiceProcess | undefined;
  let b: ServiceProcess | undefined;
  let portA: number;
  let portB: number;
  let site: http.Server;
  let siteUrl: string;
  let alice: ApiClient;
  let bob: ApiClient;
  let dirs: string[] = [];
  const env = (extra: Record<string, string>) => ({
    DATABASE_URL: db.url!,
    RUN_WORKERS: 'false',
    LOG_LEVEL: 'warn',
    ALLOW_PRIVATE_NETWORK: 'true',
    SECRET_KEY: SECRET,
    ...extra,
  });
  const baseB = () => `http://127.0.0.1:${portB}`;

  before(async () => {
    dirs = [1, 2, 3, 4].map((n) => fs.mkdtempSync(path.join(os.tmpdir(), `quarry-scale-${n}-`)));
    db = await createTestDatabase();
    site = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<title>Fixture</title><h1>Scale-out</h1><script>console.log("hello from the fixture")</script>');
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
    [portA, portB] = [await freePort(), await freePort()];
    a = startService(env({ DATA_DIR: dirs[0]!, PORT: String(portA), RUN_BROWSERS: 'true' }));
    b = startService(env({ DATA_DIR: dirs[1]!, PORT: String(portB), RUN_BROWSERS: 'false' }));
    await Promise.all([waitHealthy(portA, a), waitHealthy(portB, b)]);
    [alice, bob] = await Promise.all(
      ['alice', 'bob'].map((name) => signedUpClient(baseB(), `${name}-${process.pid}-${Date.now()}@example.com`)),
    );
  });

  after(async () => {
    const chromiumLeft = dirs[0] ? recordedChromium(dirs[0]).map((e) => e.pid) : [];
    for (const service of [a, b]) service?.child.kill('SIGKILL');
    await Promise.all([a?.exited, b?.exited]);
    // A was killed with -9: its Chromium is ours to end.
    for (const pid of chromiumLeft.filter(running)) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    site?.close();
    await db?.database.close();
    await db?.drop();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  const request = (client: ApiClient, method: string, url: string, body?: unknown, headers = {}) =>
    fetch(`${baseB()}${url}`, {
      method,
      headers: { authorization: client.headers.authorization!, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  let sessionId: string;

  it('through B: create on A, read, act, screenshot, stream logs, Playwright over cdpUrl, release', async () => {
    const created = await alice.call('POST', S, { metadata: { via: 'b' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const session = created.body.data.session;
    sessionId = session.id;
    assert.equal(session.status, 'LIVE');
    // The host built the cdpUrl from the address the client used: B's.
    assert.match(session.cdpUrl, new RegExp(`^ws://127\\.0\\.0\\.1:${portB}${S}/${session.id}/cdp\\?token=`));
    const recorded = await db.database.query<{ host_address: string | null }>(
      'SELECT host_address FROM browser_sessions WHERE id = $1',
      [session.id],
    );
    assert.equal(recorded[0]?.host_address, `http://127.0.0.1:${portA}`);

    const got = await alice.call('GET', `${S}/${session.id}`);
    assert.equal(got.status, 200);
    assert.equal(got.body.data.session.connectedClients, 0, 'answered by the host, which counts its clients');

    const nav = await alice.call('POST', `${S}/${session.id}/actions/navigate`, { url: siteUrl });
    assert.equal(nav.status, 200, JSON.stringify(nav.body));

    // A multipart upload crosses as a stream (its body is not parsed before the handler reads it).
    const form = new FormData();
    form.append('file', new Blob(['hello through B']), 'note.txt');
    const uploaded = await fetch(`${baseB()}${S}/${session.id}/files`, {
      method: 'POST',
      headers: { authorization: alice.headers.authorization! },
      body: form,
    });
    assert.equal(uploaded.status, 201, await uploaded.clone().text());
    const fileId = ((await uploaded.json()) as any).data.id;
    const bytes = await request(alice, 'GET', `${S}/${session.id}/files/${fileId}`);
    assert.equal(await bytes.text(), 'hello through B');

    const shot = await request(alice, 'GET', `${S}/${session.id}/page/screenshot`);
    assert.equal(shot.status, 200);
    assert.equal(shot.headers.get('content-type'), 'image/png');
    const png = Buffer.from(await shot.arrayBuffer());
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.ok(png.length > 1000);

    const stop = new AbortController();
    const stream = await fetch(`${baseB()}${S}/${session.id}/logs/stream`, {
      headers: { authorization: alice.headers.authorization! },
      signal: stop.signal,
    });
    assert.equal(stream.status, 200);
    assert.match(stream.headers.get('content-type') ?? '', /text\/event-stream/);
    let text = '';
    const decoder = new TextDecoder();
    for await (const chunk of stream.body!) {
      text += decoder.decode(chunk as Uint8Array);
      if (text.includes('hello from the fixture')) break;
    }
    stop.abort();
    assert.match(text, /event: log/);

    const browser = await chromium.connectOverCDP(session.cdpUrl);
    try {
      const page = browser
        .contexts()[0]!
        .pages()
        .find((p) => p.url() === siteUrl);
      assert.ok(page, 'the page navigated through REST is there over CDP');
      assert.equal(await page.evaluate('document.querySelector("h1").textContent'), 'Scale-out');
      assert.equal((await alice.call('GET', `${S}/${session.id}`)).body.data.session.connectedClients, 1);
    } finally {
      await browser.close();
    }
    // The client's close crossed the relay: the host counts no client any more.
    await pollUntil(
      async () => (await alice.call('GET', `${S}/${session.id}`)).body.data.session.connectedClients,
      (n) => n === 0,
      5000,
    );

    const patched = await alice.call('PATCH', `${S}/${session.id}`, { extendMs: 60_000 });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.equal(Date.parse(patched.body.data.session.expiresAt), Date.parse(session.expiresAt) + 60_000);
  });

  it("another user's session is 404 through B, the WebSocket included; a forwarded request is not forwarded again", async () => {
    for (const [method, url] of [
      ['GET', `${S}/${sessionId}`],
      ['POST', `${S}/${sessionId}/actions/evaluate`],
      ['DELETE', `${S}/${sessionId}`],
    ] as const) {
      const res = await bob.call(method, url, method === 'POST' ? { expression: '1 + 1' } : undefined);
      assert.equal(res.status, 404, `${method} ${url}`);
    }
    // Bob's own token names Alice's session nowhere: his cdpUrl cannot reach it (404 before the upgrade).
    const own = (await bob.call('POST', S, {})).body.data.session;
    const crossed = own.cdpUrl.replace(own.id, sessionId);
    const status = await upgradeStatus(crossed);
    assert.equal(status, 404);
    assert.equal((await bob.call('DELETE', `${S}/${own.id}`)).status, 200);
    // A token that names Alice's session for another user passes B's signature check and is forwarded: the host
    // refuses it, and B gives the client that refusal before the upgrade.
    const foreign = signCdpToken(cdpTokenKey(SECRET), {
      sessionId,
      userId: crypto.randomUUID(),
      clientRef: null,
      keyId: null,
      expiresAt: Date.now() + 60_000,
    });
    assert.equal(await upgradeStatus(`ws://127.0.0.1:${portB}${S}/${sessionId}/cdp?token=${foreign}`), 404);

    // Marked as forwarded already, B answers itself: it holds no browser, so 503, never a second hop.
    const looped = await request(
      alice,
      'POST',
      `${S}/${sessionId}/actions/evaluate`,
      { expression: '1' },
      { [HOP_HEADER]: '1' },
    );
    assert.equal(looped.status, 503);
    assert.equal(((await looped.json()) as any).error.code, 'SERVICE_UNAVAILABLE');
    const evaluated = await alice.call('POST', `${S}/${sessionId}/actions/evaluate`, { expression: '1 + 1' });
    assert.equal(evaluated.status, 200, JSON.stringify(evaluated.body));
  });

  it('a live view through B: its URL is on B, its stream is relayed from A, a DELETE through B closes it', async () => {
    assert.equal((await bob.call('POST', `${S}/${sessionId}/live-views`, { mode: 'view' })).status, 404);
    const created = await alice.call('POST', `${S}/${sessionId}/live-views`, { mode: 'view' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { id, url } = created.body.data;
    assert.match(url, new RegExp(`^http://127\\.0\\.0\\.1:${portB}/api/browser/live/`));
    assert.equal((await fetch(url)).status, 200);
    const stream = `${url.replace(/^http/, 'ws')}/stream`;
    const ws = new WebSocket(stream);
    const frame = await new Promise<{ data: string }>((resolve, reject) => {
      ws.on('message', (data) => {
        const message = JSON.parse(String(data));
        if (message.type === 'frame') resolve(message);
      });
      ws.once('error', reject);
    });
    assert.ok(frame.data.length > 1000, 'a JPEG frame of the session, from A');
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    assert.equal((await alice.call('DELETE', `${S}/${sessionId}/live-views/${id}`)).status, 200);
    assert.equal(await closed, 1008, "A closed its viewer; B's relay closed the client");
    assert.equal(await upgradeStatus(stream), 404);
  });

  it('sleep and wake through B: the sleep goes to A, every wake to a host with room (A)', async () => {
    const created = await alice.call('POST', S, {});
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.data.session.id;
    assert.equal((await alice.call('POST', `${S}/${id}/actions/navigate`, { url: siteUrl })).status, 200);
    const sleep = async () => {
      const slept = await alice.call('POST', `${S}/${id}/sleep`);
      assert.equal(slept.status, 200, JSON.stringify(slept.body));
      assert.equal(slept.body.data.session.status, 'SLEEPING');
      return slept.body.data;
    };
    await sleep();
    // A REST action through B (which runs no browsers) wakes it where there is room, and is answered from there.
    const act = await alice.call('POST', `${S}/${id}/actions/evaluate`, { expression: 'location.href' });
    assert.equal(act.status, 200, JSON.stringify(act.body));
    assert.equal(act.body.data.result, siteUrl);
    const { snapshot } = await sleep();
    const woke = await alice.call('POST', `/api/browser/snapshots/${snapshot.id}/wake`);
    assert.equal(woke.status, 200, JSON.stringify(woke.body));
    assert.equal(woke.body.data.session.status, 'LIVE');
    assert.equal(woke.body.data.session.id, id);
    const { session } = await sleep();
    assert.match(session.cdpUrl, new RegExp(`^ws://127\\.0\\.0\\.1:${portB}${S}/${id}/cdp`));
    const browser = await chromium.connectOverCDP(session.cdpUrl);
    try {
      const urls = browser
        .contexts()[0]!
        .pages()
        .map((p) => p.url());
      assert.deepEqual(urls, [siteUrl]);
    } finally {
      await browser.close();
    }
    const held = await db.database.query<{ host_address: string | null; status: string }>(
      'SELECT host_address, status FROM browser_sessions WHERE id = $1',
      [id],
    );
    assert.deepEqual(held[0], { host_address: `http://127.0.0.1:${portA}`, status: 'LIVE' });
    assert.equal((await alice.call('DELETE', `${S}/${id}`)).status, 200);
  });

  it('releases through B', async () => {
    const released = await alice.call('DELETE', `${S}/${sessionId}`);
    assert.equal(released.status, 200);
    assert.equal(released.body.data.session.status, 'RELEASED');
    assert.equal(released.body.data.session.endReason, 'released');
  });

  it('a request line in absolute form is forwarded to the host, never to the server it names', async () => {
    let reached = 0;
    const evil = http.createServer((_req, res) => {
      reached++;
      res.end('{"data":"evil"}');
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    const created = await alice.call('POST', S, {});
    assert.equal(created.status, 201);
    const id = created.body.data.session.id;
    try {
      const evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}${S}/${id}/logs`;
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(portB, '127.0.0.1', () => {
          socket.write(
            `GET ${evilUrl} HTTP/1.1\r\nHost: 127.0.0.1:${portB}\r\n` +
              `Authorization: ${alice.headers.authorization}\r\nConnection: close\r\n\r\n`,
          );
        });
        let text = '';
        socket.on('data', (d) => (text += d));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      assert.equal(reached, 0, 'the server the request line names is never contacted');
      assert.match(raw, /^HTTP\/1\.1 200/, raw.slice(0, 200));
      assert.doesNotMatch(raw, /evil/);
    } finally {
      evil.close();
      await alice.call('DELETE', `${S}/${id}`);
    }
  });

  it("release-all through B releases the request's sessions on A, and only those (X-Client-Ref)", async () => {
    const make = async (clientRef?: string) => {
      const created = await alice.call('POST', S, clientRef ? { clientRef } : {});
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body.data.session.id as string;
    };
    const [first, second, other] = [await make('tenant-1'), await make('tenant-1'), await make('tenant-2')];
    const all = await request(
      alice,
      'POST',
      `${S}/release-all`,
      {},
      {
        'x-client-ref': 'tenant-1',
        'idempotency-key': `release-all-${Date.now()}`,
      },
    );
    assert.equal(all.status, 200);
    assert.deepEqual(((await all.json()) as any).data, { released: 2, elsewhere: 0 });
    for (const id of [first, second])
      assert.equal((await alice.call('GET', `${S}/${id}`)).body.data.session.status, 'RELEASED');
    assert.equal((await alice.call('GET', `${S}/${other}`)).body.data.session.status, 'LIVE', "another ref's stays");
    assert.equal((await alice.call('DELETE', `${S}/${other}`)).status, 200);
  });

  it("a second live process with A's host id is refused at start, in one line", async () => {
    const hostId = fs.readFileSync(path.join(dirs[0]!, 'browser-host-id'), 'utf8').trim();
    const c = startService(
      env({ DATA_DIR: dirs[2]!, PORT: String(await freePort()), RUN_BROWSERS: 'true', BROWSER_HOST_ID: hostId }),
    );
    assert.equal(await c.exited, 1, c.output());
    assert.match(c.output(), new RegExp(`Browser host id ${hostId} is in use by another running process`));
    assert.doesNotMatch(c.output(), /\n\s+at /, 'no stack trace');
  });

  it('a full host passes a create on to a host with room; with none, it answers 429', async () => {
    const portC = await freePort();
    const c = startService(
      env({ DATA_DIR: dirs[3]!, PORT: String(portC), RUN_BROWSERS: 'true', BROWSER_MAX_SESSIONS: '1' }),
    );
    try {
      await waitHealthy(portC, c);
      const viaC = (body: object) =>
        fetch(`http://127.0.0.1:${portC}${S}`, {
          method: 'POST',
          headers: { authorization: alice.headers.authorization!, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const hostOf = async (id: string) =>
        (
          await db.database.query<{ host_address: string }>('SELECT host_address FROM browser_sessions WHERE id = $1', [
            id,
          ])
        )[0]?.host_address;
      const first = await viaC({});
      assert.equal(first.status, 201);
      const firstId = ((await first.json()) as { data: { session: { id: string } } }).data.session.id;
      assert.equal(await hostOf(firstId), `http://127.0.0.1:${portC}`, 'C had room: its own');
      const second = await viaC({});
      assert.equal(second.status, 201, 'C is full: A takes it');
      const secondId = ((await second.json()) as { data: { session: { id: string } } }).data.session.id;
      assert.equal(await hostOf(secondId), `http://127.0.0.1:${portA}`);
      // A full as well (its registry row says so, until its next heartbeat): C answers itself.
      const hostC = fs.readFileSync(path.join(dirs[3]!, 'browser-host-id'), 'utf8').trim();
      await db.database.query('UPDATE browser_hosts SET max_sessions = live_sessions WHERE host_id <> $1', [hostC]);
      const refused = await viaC({});
      assert.equal(refused.status, 429);
      assert.ok(refused.headers.get('retry-after'));
      for (const id of [firstId, secondId]) assert.equal((await alice.call('DELETE', `${S}/${id}`)).status, 200);
    } finally {
      c.child.kill('SIGTERM');
      await c.exited;
      // A's room (the default BROWSER_MAX_SESSIONS) back at once for the next test, not at its next heartbeat.
      const hostA = fs.readFileSync(path.join(dirs[0]!, 'browser-host-id'), 'utf8').trim();
      await db.database.query('UPDATE browser_hosts SET max_sessions = 10 WHERE host_id = $1', [hostA]);
    }
  });

  it('a kill -9 of the host: its live session is FAILED within 30 s, as B tells', async () => {
    const hook = await alice.call('POST', '/api/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      eventTypes: ['browser.session.ended'],
    });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));
    const live = (await alice.call('POST', S, {})).body.data.session;
    assert.equal(live.status, 'LIVE');
    // A live row of a host the registry never heard of (an earlier version's host id) is lost too.
    const orphan = crypto.randomUUID();
    await db.database.query(
      `INSERT INTO browser_sessions SELECT (jsonb_populate_record(NULL::browser_sessions,
         to_jsonb(s) || jsonb_build_object('id', $2::uuid, 'host_id', 'a-host-of-old'))).* FROM browser_sessions s
       WHERE s.id = $1`,
      [live.id, orphan],
    );
    a!.child.kill('SIGKILL');
    await a!.exited;
    const killedAt = Date.now();
    // Until then B reads the session from the database (the host no longer answers): LIVE, with no client count.
    const { body } = await pollUntil(
      () => alice.call('GET', `${S}/${live.id}`),
      (res) => res.status === 200 && res.body.data.session.status !== 'LIVE',
      30_000,
    );
    const ended = body.data.session;
    assert.ok(Date.now() - killedAt < 30_000);
    assert.equal(ended.status, 'FAILED');
    assert.equal(ended.endReason, 'host lost');
    const events = await db.database.query<{ data: { status: string; endReason: string } }>(
      "SELECT data FROM webhook_events WHERE type = 'browser.session.ended' AND data->>'sessionId' = $1",
      [live.id],
    );
    assert.equal(events.length, 1, 'the ended event, once');
    assert.equal(events[0]!.data.status, 'FAILED');
    assert.equal(events[0]!.data.endReason, 'host lost');
    const [gone] = await db.database.query<{ status: string; end_reason: string }>(
      'SELECT status, end_reason FROM browser_sessions WHERE id = $1',
      [orphan],
    );
    assert.deepEqual(gone, { status: 'FAILED', end_reason: 'host lost' });
  });
});
