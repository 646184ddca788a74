/**
 * Nothing the service opens listens beyond loopback, and what listens on loopback asks for a credential
 * (docs/CONVENTIONS.md, Listeners): the guard proxy of DYNAMIC crawls (made per crawl, with its own
 * credentials) and, after a real DYNAMIC job in a real service process, every socket that process listens on; and
 * with a live cloud browser session (a CDP client attached, a page navigated through its guard proxy), every socket
 * the service and that session's Chromium processes listen on.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium } from 'playwright-core';
import { startGuardProxy } from '../src/shared/guard-proxy.ts';
import { CHROMIUM_PATH, CHROMIUM_SKIP, chromiumMissing } from './fixtures/crawl-run.ts';
import { DIRECTORY_SELECTORS, type FixtureSite, startFixtureSite } from './fixtures/sites.ts';
import { listenersOf, nonLoopbackListeners } from './helpers/listeners.ts';
import { freePort, pollUntil, startService, waitHealthy } from './helpers/process.ts';

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** A plain-HTTP request through the proxy: its status. */
function viaProxy(proxyUrl: string, target: string, authorization?: string): Promise<number> {
  const proxy = new URL(proxyUrl);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: proxy.hostname,
        port: proxy.port,
        path: target,
        headers: authorization ? { 'proxy-authorization': authorization } : {},
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A CONNECT through the proxy: the status line it answers. */
function connectViaProxy(proxyUrl: string, authority: string, authorization?: string): Promise<string> {
  const proxy = new URL(proxyUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(proxy.port), proxy.hostname, () => {
      socket.write(
        `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n` +
          (authorization ? `Proxy-Authorization: ${authorization}\r\n` : '') +
          '\r\n',
      );
    });
    let data = '';
    socket.on('data', (d) => {
      data += d;
      if (data.includes('\r\n')) {
        resolve(data.split('\r\n')[0]!);
        socket.destroy();
      }
    });
    socket.on('error', reject);
  });
}

describe('the guard proxy of DYNAMIC crawls', () => {
  let site: FixtureSite;
  before(async () => {
    site = await startFixtureSite({ pages: 1, leadsPerPage: 1 });
  });
  after(() => site.close());

  it('listens on loopback only and refuses every request without its credentials', async () => {
    const proxy = await startGuardProxy({ allowPrivateNetwork: true, signal: new AbortController().signal });
    try {
      const port = Number(new URL(proxy.url).port);
      assert.deepEqual(
        listenersOf().filter((l) => l.port === port),
        [{ address: '127.0.0.1', port }],
      );
      const target = `${site.origin}/robots.txt`;
      const authority = new URL(site.origin).host;
      assert.equal(await viaProxy(proxy.url, target), 407);
      assert.equal(await viaProxy(proxy.url, target, basic(proxy.username, 'wrong')), 407);
      assert.equal(await viaProxy(proxy.url, target, basic('quarry', proxy.password)), 407);
      assert.match(await connectViaProxy(proxy.url, authority), /^HTTP\/1\.1 407 /);
      assert.match(await connectViaProxy(proxy.url, authority, basic(proxy.username, 'x')), /^HTTP\/1\.1 407 /);
      // With them: relayed (ALLOW_PRIVATE_NETWORK here, so the loopback fixture may be reached).
      assert.equal(await viaProxy(proxy.url, target, basic(proxy.username, proxy.password)), 200);
      assert.match(
        await connectViaProxy(proxy.url, authority, basic(proxy.username, proxy.password)),
        /^HTTP\/1\.1 200 /,
      );
    } finally {
      await proxy.close();
    }
  });

  it('each crawl gets credentials of its own, and the SSRF guard still applies with them', async () => {
    const [a, b] = await Promise.all([
      startGuardProxy({ allowPrivateNetwork: false, signal: new AbortController().signal }),
      startGuardProxy({ allowPrivateNetwork: false, signal: new AbortController().signal }),
    ]);
    try {
      assert.notEqual(a.password, b.password);
      assert.equal(await viaProxy(a.url, `${site.origin}/`, basic(b.username, b.password)), 407);
      // Loopback behind the right credentials: the guard refuses it (403), it is not relayed.
      assert.equal(await viaProxy(a.url, `${site.origin}/`, basic(a.username, a.password)), 403);
      assert.match(
        await connectViaProxy(a.url, new URL(site.origin).host, basic(a.username, a.password)),
        /^HTTP\/1\.1 403 /,
      );
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('a service process after a DYNAMIC job', { skip: chromiumMissing ? CHROMIUM_SKIP : false }, () => {
  it('listens on no address but loopback (the browser pool opens no proxy of its own)', {
    timeout: 300_000,
  }, async () => {
    const site = await startFixtureSite({ pages: 2, leadsPerPage: 2 });
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-listeners-'));
    const port = await freePort();
    // The embedded database on both passes of the suite: what is checked is the process, not the database.
    const env: Record<string, string> = {
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      ALLOW_PRIVATE_NETWORK: 'true',
      CHROMIUM_PATH,
      LOG_LEVEL: 'warn',
    };
    const service = startService(env);
    try {
      await waitHealthy(port, service);
      const api = async (method: string, url: string, body?: unknown, key?: string) => {
        const res = await fetch(`http://127.0.0.1:${port}${url}`, {
          method,
          headers: {
            ...(body ? { 'content-type': 'application/json' } : {}),
            ...(key ? { authorization: `Bearer ${key}` } : {}),
          },
          body: body ? JSON.stringify(body) : undefined,
        });
        return (await res.json()) as { success: boolean; data: Record<string, any> };
      };
      const signup = await api('POST', '/api/auth/signup', {
        email: 'listeners@example.com',
        password: 'a long password',
        termsAccepted: true,
        privacyAccepted: true,
      });
      const key = signup.data.apiKey as string;
      const source = await api(
        'POST',
        '/api/sources',
        {
          name: 'js directory',
          url: `${site.origin}/js-directory`,
          scrapeType: 'DYNAMIC',
          selectors: { ...DIRECTORY_SELECTORS, waitFor: '.person' },
        },
        key,
      );
      const sourceId = source.data.source.id as string;
      await api('POST', `/api/sources/${sourceId}/activate`, undefined, key);
      const job = await api('POST', '/api/jobs', { name: 'dynamic', sourceId }, key);
      const jobId = job.data.job.id as string;
      const done = await pollUntil(
        () => api('GET', `/api/jobs/${jobId}`, undefined, key),
        (r) => ['COMPLETED', 'FAILED'].includes(r.data.job.status),
        240_000,
      );
      assert.equal(done.data.job.status, 'COMPLETED', JSON.stringify(done.data.job));
      assert.ok(done.data.job.leadsFound > 0, 'the crawl found leads, so Chromium ran');
      const pid = service.child.pid!;
      assert.deepEqual(nonLoopbackListeners(pid), [], 'every socket the service listens on is on loopback');
      // What is left is the API itself: the crawl's guard proxy closed with the crawl.
      assert.deepEqual(
        listenersOf(pid).map((l) => l.port),
        [port],
      );
    } finally {
      service.child.kill('SIGKILL');
      await service.exited;
      await site.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

/** A process's parent and group, from /proc/<pid>/stat (undefined once it is gone). */
function parentAndGroup(pid: number): { ppid: number; pgrp: number } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), pgrp: Number(fields[2]) };
  } catch {
    return undefined;
  }
}

/** Every process in the groups led by children of `pid` (a session's Chromium is a group of its own). */
function childGroupMembers(pid: number): number[] {
  const stats = fs
    .readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .map((e) => ({ pid: Number(e), ...parentAndGroup(Number(e)) }));
  const leaders = new Set(stats.filter((s) => s.ppid === pid && s.pgrp === s.pid).map((s) => s.pid));
  return stats.filter((s) => s.pgrp !== undefined && leaders.has(s.pgrp)).map((s) => s.pid);
}

describe('a service process with a live browser session', { skip: chromiumMissing ? CHROMIUM_SKIP : false }, () => {
  it('the service and its Chromium listen on loopback only, and the guard proxy refuses what has no credential', {
    timeout: 300_000,
  }, async () => {
    const site = await startFixtureSite({ pages: 1, leadsPerPage: 1 });
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-listeners-'));
    const port = await freePort();
    const service = startService({
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      // The session's traffic goes through its guard proxy only when private networks are off.
      ALLOW_PRIVATE_NETWORK: 'false',
      RUN_BROWSERS: 'true',
      CHROMIUM_PATH,
      LOG_LEVEL: 'warn',
    });
    let chromiumPids: number[] = [];
    try {
      await waitHealthy(port, service);
      const api = async (method: string, url: string, body?: unknown, key?: string) => {
        const res = await fetch(`http://127.0.0.1:${port}${url}`, {
          method,
          headers: {
            ...(body ? { 'content-type': 'application/json' } : {}),
            ...(key ? { authorization: `Bearer ${key}` } : {}),
          },
          body: body ? JSON.stringify(body) : undefined,
        });
        return (await res.json()) as { success: boolean; data: Record<string, any> };
      };
      const signup = await api('POST', '/api/auth/signup', {
        email: 'browser-listeners@example.com',
        password: 'a long password',
        termsAccepted: true,
        privacyAccepted: true,
      });
      const key = signup.data.apiKey as string;
      const created = await api('POST', '/api/browser/sessions', {}, key);
      const session = created.data.session as { id: string; cdpUrl: string };
      assert.ok(session?.cdpUrl, JSON.stringify(created));
      const browser = await chromium.connectOverCDP(session.cdpUrl);
      try {
        const page = await browser.contexts()[0]!.newPage();
        // Loopback is private: the guard admitted Chromium's connection, then refused the address (403).
        const response = await page.goto(`${site.origin}/`);
        assert.equal(response?.status(), 403, 'the navigation went through the guard proxy');
        // A REST operation too: the service's own Playwright on its loopback CDP endpoint.
        const content = await api(
          'GET',
          `/api/browser/sessions/${session.id}/page/content?format=text`,
          undefined,
          key,
        );
        assert.equal(content.success, true, JSON.stringify(content));

        const pid = service.child.pid!;
        chromiumPids = childGroupMembers(pid);
        assert.ok(chromiumPids.length > 1, 'the session runs Chromium processes');
        for (const p of [pid, ...chromiumPids]) {
          assert.deepEqual(nonLoopbackListeners(p), [], `process ${p} listens on loopback only`);
        }
        // Chromium's DevTools endpoint is a pipe: none of its processes listens at all.
        for (const p of chromiumPids) assert.deepEqual(listenersOf(p), [], `Chromium process ${p} listens on nothing`);

        // Beyond the API: the guard proxy and the internal CDP endpoint. No request without a credential passes
        // either, and the guard answers one from outside Chromium's group 407 whatever credential it carries.
        const others = listenersOf(pid).filter((l) => l.port !== port);
        assert.ok(others.length >= 2, JSON.stringify(others));
        const target = `${site.origin}/robots.txt`;
        const authority = new URL(site.origin).host;
        const answers = await Promise.all(others.map((l) => viaProxy(`http://127.0.0.1:${l.port}`, target)));
        assert.ok(answers.includes(407), `the guard proxy is among them: ${answers}`);
        assert.ok(
          answers.every((status) => status >= 400),
          `nothing answers without a credential: ${answers}`,
        );
        const guard = `http://127.0.0.1:${others[answers.indexOf(407)]!.port}`;
        assert.equal(await viaProxy(guard, target, basic('crawl-x', 'guess')), 407);
        assert.match(await connectViaProxy(guard, authority), /^HTTP\/1\.1 407 /);
      } finally {
        await browser.close();
      }
      await api('DELETE', `/api/browser/sessions/${session.id}`, undefined, key);
    } finally {
      service.child.kill('SIGTERM');
      const code = await Promise.race([service.exited, new Promise((r) => setTimeout(() => r('timeout'), 30_000))]);
      if (code === 'timeout') service.child.kill('SIGKILL');
      for (const p of chromiumPids) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          // gone, as it should be
        }
      }
      await site.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
