import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { DIRECTORY_SELECTORS, startFixtureSite } from './fixtures/sites.ts';
import { activeSourceVia, signedUpClient } from './helpers/http-client.ts';
import { freePort, pollUntil, startService, waitHealthy } from './helpers/process.ts';

// The real entry point, as `npm start` runs it, on the embedded database.
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-proc-'));
after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

describe('the service process', () => {
  test('a bad setting stops it with one clear line', async () => {
    for (const [env, name] of [
      [{ PORT: 'eighty' }, 'PORT'],
      [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
      [{ ALLOW_PRIVATE_NETWORK: 'maybe' }, 'ALLOW_PRIVATE_NETWORK'],
      [{ PGLITE_WORKER: 'sometimes' }, 'PGLITE_WORKER'],
      [{ ADMIN_EMAILS: 'root@example.com,not-an-email' }, 'ADMIN_EMAILS'],
      [{ SECRET_KEY: 'short' }, 'SECRET_KEY'],
    ] as const) {
      const svc = startService({ DATA_DIR: dataDir, ...env });
      assert.equal(await svc.exited, 1);
      const lines = svc.output().trim().split('\n');
      assert.equal(lines.length, 1, svc.output());
      assert.match(lines[0]!, new RegExp(`^Invalid configuration: ${name}=`));
    }
  });

  test('a busy port stops it with one line naming the port, before the database is opened', async () => {
    const net = await import('node:net');
    const port = await freePort();
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
    try {
      const freshDir = path.join(dataDir, 'never-created');
      const svc = startService({ DATA_DIR: freshDir, PORT: String(port) });
      assert.equal(await svc.exited, 1);
      const lines = svc.output().trim().split('\n');
      assert.equal(lines.length, 1, svc.output());
      assert.match(lines[0]!, new RegExp(`^Port ${port} on 127\\.0\\.0\\.1 is already in use`));
      assert.ok(!fs.existsSync(freshDir), 'no database opened, no migration run');
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });

  test('starts, refuses a second process on the same DATA_DIR, and shuts down gracefully on SIGTERM', async () => {
    const port = await freePort();
    const first = startService({ DATA_DIR: dataDir, PORT: String(port) });
    await waitHealthy(port, first);
    assert.ok(fs.existsSync(path.join(dataDir, 'quarry.lock')));
    // No payment provider and CREDITS_ENABLED unset: the start-up log says metering is off, and why.
    assert.match(first.output(), /"credits":"off".*credits: off, no payment provider configured/);

    const second = startService({ DATA_DIR: dataDir, PORT: String(await freePort()) });
    assert.equal(await second.exited, 1);
    assert.match(second.output(), /DATA_DIR .* is in use by another Quarry process \(pid \d+\)/);

    // A request in flight when SIGTERM arrives still gets its answer.
    const body = JSON.stringify({
      email: 'inflight@example.com',
      password: 'long enough pw',
      termsAccepted: true,
      privacyAccepted: true,
    });
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/api/auth/signup',
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          let data = '';
          res.on('data', (d) => (data += d));
          res.on('end', () => resolve({ status: res.statusCode!, body: data }));
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, 10));
      setTimeout(() => {
        first.child.kill('SIGTERM');
        setTimeout(() => req.end(body.slice(10)), 300);
      }, 200);
    });
    const result = await answer;
    assert.equal(result.status, 201, result.body);
    assert.equal(await first.exited, 0);
    assert.ok(!fs.existsSync(path.join(dataDir, 'quarry.lock')), 'lock released');
    assert.ok(!first.output().includes('long enough pw'), 'no secrets in logs');

    // Restart on the same data: the user is still there.
    const port2 = await freePort();
    const again = startService({ DATA_DIR: dataDir, PORT: String(port2) });
    await waitHealthy(port2, again);
    const login = await fetch(`http://127.0.0.1:${port2}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'inflight@example.com', password: 'long enough pw' }),
    });
    assert.equal(login.status, 200);
    again.child.kill('SIGTERM');
    assert.equal(await again.exited, 0);
  });

  const afterCrawl = 'after a crawl has run, SIGTERM and SIGINT still stop it gracefully: exit 0, lock removed';
  test(afterCrawl, { timeout: 400_000 }, async () => {
    // Crawlee's storage loads signal-exit on the first crawl; its signal listener used to kill the
    // process (143 / 130) before the shutdown had closed the database and removed the lock.
    const site = await startFixtureSite();
    try {
      for (const signal of ['SIGTERM', 'SIGINT'] as const) {
        const port = await freePort();
        const svc = startService({ DATA_DIR: dataDir, PORT: String(port), ALLOW_PRIVATE_NETWORK: 'true' });
        await waitHealthy(port, svc);
        const client = await signedUpClient(`http://127.0.0.1:${port}`, `crawler-${signal.toLowerCase()}@example.com`);
        const sourceId = await activeSourceVia(client, { url: `${site.url}directory`, selectors: DIRECTORY_SELECTORS });
        const created = await client.call('POST', '/api/jobs', { name: 'before signal', sourceId });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        const job = await pollUntil(
          async () => (await client.call('GET', `/api/jobs/${created.body.data.job.id}`)).body.data.job,
          (j) => ['COMPLETED', 'FAILED'].includes(j.status),
        );
        assert.equal(job.status, 'COMPLETED', JSON.stringify(job));
        assert.equal(job.leadsFound, 15);

        svc.child.kill(signal);
        assert.equal(await svc.exited, 0, `${signal}: ${svc.output().split('\n').slice(-5).join('\n')}`);
        assert.equal(svc.child.signalCode, null, `${signal}: not killed by the signal`);
        assert.ok(!fs.existsSync(path.join(dataDir, 'quarry.lock')), `${signal}: lock removed`);
        assert.match(svc.output(), /"msg":"stopped"/);
      }
    } finally {
      await site.close();
    }
  });

  test('a lock left by a dead process is taken over', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-stale-'));
    try {
      fs.writeFileSync(path.join(dir, 'quarry.lock'), '999999');
      const port = await freePort();
      const svc = startService({ DATA_DIR: dir, PORT: String(port) });
      await waitHealthy(port, svc);
      svc.child.kill('SIGTERM');
      assert.equal(await svc.exited, 0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
