import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { freePort, type ServiceProcess, startService, waitHealthy } from './helpers/process.ts';

// API and workers as separate processes on one PostgreSQL database, as on separate machines.
const skip = process.env.TEST_DATABASE_URL
  ? false
  : 'scale-out needs PostgreSQL: run with TEST_DATABASE_URL=postgres://…';

describe('scale-out: API-only process + `npm run worker` process', { skip }, () => {
  let testDb: TestDatabase;
  let api: ServiceProcess;
  let worker: ServiceProcess | undefined;
  let port: number;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-scale-'));

  before(async () => {
    testDb = await createTestDatabase();
    await testDb.database.close();
    port = await freePort();
    api = startService({ DATABASE_URL: testDb.url!, PORT: String(port), RUN_WORKERS: 'false', DATA_DIR: dataDir });
    await waitHealthy(port, api);
  });
  after(async () => {
    api?.child.kill('SIGTERM');
    worker?.child.kill('SIGTERM');
    await Promise.all([api?.exited, worker?.exited]);
    await testDb?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('jobs queued by the API wait until a worker process runs them', async () => {
    const base = `http://127.0.0.1:${port}`;
    const signup = await fetch(`${base}/api/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        email: 'scale@example.com',
        password: 'long enough pw',
        termsAccepted: true,
        privacyAccepted: true,
      }),
    });
    const headers = {
      authorization: `Bearer ${((await signup.json()) as any).data.apiKey}`,
      'content-type': 'application/json',
    };
    const created = (await (
      await fetch(`${base}/api/users/export`, { method: 'POST', headers, body: JSON.stringify({ format: 'JSON' }) })
    ).json()) as any;
    const requestId = created.data.requestId;
    const status = async () => {
      const list = (await (await fetch(`${base}/api/users/export/status`, { headers })).json()) as any;
      return list.data.exports.find((e: { requestId: string }) => e.requestId === requestId).status as string;
    };
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal(await status(), 'PENDING', 'the API process runs no workers');

    worker = startService({ DATABASE_URL: testDb.url!, DATA_DIR: dataDir }, 'src/worker.ts');
    const deadline = Date.now() + 30_000;
    while ((await status()) !== 'COMPLETED') {
      if (Date.now() > deadline) throw new Error(`export not completed by the worker: ${worker.output()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const download = await fetch(`${base}/api/users/export/download?requestId=${requestId}`, { headers });
    assert.equal(download.status, 200);
    assert.ok(JSON.stringify(await download.json()).includes('scale@example.com'));
  });
});
