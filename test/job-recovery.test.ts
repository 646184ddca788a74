import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DIRECTORY_SELECTORS, type FixtureSite, startFixtureSite } from './fixtures/sites.ts';
import { activeSourceVia, signedUpClient } from './helpers/http-client.ts';
import { freePort, type ServiceProcess, startService, waitHealthy } from './helpers/process.ts';

// The embedded service killed with -9 mid-crawl and started again on the same DATA_DIR. (On
// PostgreSQL, where another worker takes the job over, see scale-out-jobs.test.ts.)
const skip = process.env.TEST_DATABASE_URL
  ? 'embedded-database case; PostgreSQL recovery is in scale-out-jobs.test.ts'
  : false;

describe('crash recovery, embedded database', { skip }, () => {
  let site: FixtureSite;
  let service: ServiceProcess | undefined;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-crash-'));

  before(async () => {
    site = await startFixtureSite();
  });
  after(async () => {
    service?.child.kill('SIGKILL');
    await service?.exited;
    await site?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const start = async (port: number) => {
    service = startService({
      DATA_DIR: dataDir,
      PORT: String(port),
      ALLOW_PRIVATE_NETWORK: 'true',
      LOG_LEVEL: 'warn',
      SCRAPER_DOMAIN_CONCURRENCY: '4',
    });
    await waitHealthy(port, service);
  };

  test('a job whose process was killed -9 is picked up again on restart, with no duplicate leads', async () => {
    const port = await freePort();
    await start(port);
    const base = `http://127.0.0.1:${port}`;
    const client = await signedUpClient(base, 'crash@example.com');
    const sourceId = await activeSourceVia(client, {
      url: `${site.url}slow?ms=600&n=1`,
      selectors: DIRECTORY_SELECTORS,
      maxPages: 40,
    });
    const job = (await client.call('POST', '/api/jobs', { name: 'Crash me', sourceId })).body.data.job;
    const view = async () => (await client.call('GET', `/api/jobs/${job.id}`)).body.data.job;
    for (let v = await view(); !(v.status === 'RUNNING' && v.leadsFound >= 4); v = await view())
      await new Promise((r) => setTimeout(r, 100));

    service!.child.kill('SIGKILL');
    await service!.exited;
    const killedAt = Date.now();
    await start(port);
    let v = await view();
    while (v.attempts < 2 && Date.now() - killedAt < 60_000) {
      await new Promise((r) => setTimeout(r, 200));
      v = await view();
    }
    assert.equal(v.attempts, 2, `picked up again within 60 s (status ${v.status})`);
    while (v.status === 'RUNNING' || v.status === 'PENDING') {
      await new Promise((r) => setTimeout(r, 200));
      v = await view();
    }
    assert.equal(v.status, 'COMPLETED', v.error);
    assert.equal(v.leadsFound, 40, 'every page once: leads of the first attempt count, none twice');
    const listed = (await client.call('GET', `/api/leads?jobId=${job.id}&limit=1000`)).body.data.leads;
    assert.equal(listed.length, 40);
    assert.equal(new Set(listed.map((l: { email: string }) => l.email)).size, 40);
  });
});
