/**
 * Nothing the service opens listens beyond loopback, and what listens on loopback asks for a credential
 * (docs/CONVENTIONS.md, Listeners): the guard proxy of DYNAMIC crawls (made per crawl, with its own
 * credentials) and, after a real DYNAMIC job in a real service process, every socket that process listens on.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
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
