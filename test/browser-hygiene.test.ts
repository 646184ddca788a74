/**
 * No Chromium outlives the service: after a kill -9 of the service, the next start of the same host kills what
 * is left of its Chromium processes and removes their profiles; SIGTERM releases every session before exiting.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { eventually } from './helpers/app.ts';
import { recordedChromium, running } from './helpers/browser.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { type ApiClient, apiClient, signedUpClient } from './helpers/http-client.ts';
import { freePort, type ServiceProcess, startService, waitHealthy } from './helpers/process.ts';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-hygiene-'));
let db: TestDatabase | undefined;
let service: ServiceProcess | undefined;
let port: number;
/** The service's Chromium processes, as its host records them. */
const ours = () => recordedChromium(dataDir).filter((e) => running(e.pid));
const alive = running;
let seen: number[] = [];

before(async () => {
  if (process.env.TEST_DATABASE_URL) db = await createTestDatabase();
  port = await freePort();
});
after(async () => {
  service?.child.kill('SIGKILL');
  await service?.exited;
  await db?.database.close();
  await db?.drop();
  const left = seen.filter(alive);
  fs.rmSync(dataDir, { recursive: true, force: true });
  assert.deepEqual(left, [], 'no Chromium of ours left');
});

async function start(): Promise<ServiceProcess> {
  service = startService({
    DATA_DIR: dataDir,
    PORT: String(port),
    LOG_LEVEL: 'warn',
    RUN_WORKERS: 'false',
    ...(db?.url ? { DATABASE_URL: db.url } : {}),
  });
  await waitHealthy(port, service);
  return service;
}

it('a kill -9 of the service leaves Chromium behind; the next start reaps it; SIGTERM closes all', async () => {
  await start();
  const base = `http://127.0.0.1:${port}`;
  const client: ApiClient = await signedUpClient(base, `hygiene-${process.pid}@example.com`);
  const created = await Promise.all(
    [1, 2].map(async () => (await client.call('POST', '/api/browser/sessions', {})).body.data.session),
  );
  assert.deepEqual(
    created.map((s) => s.status),
    ['LIVE', 'LIVE'],
  );
  const pids = ours().map((e) => e.pid);
  seen = [...pids];
  assert.equal(pids.length, 2, 'one Chromium per session');
  const dirs = ours().map((e) => e.userDataDir);

  // Chromium may notice its closed DevTools pipe and exit by itself, or hang: stopped, it stands for a hung one.
  for (const pid of pids) process.kill(-pid, 'SIGSTOP');
  service!.child.kill('SIGKILL');
  await service!.exited;
  await new Promise((r) => setTimeout(r, 300));
  assert.ok(pids.every(alive), 'a hung Chromium outlives its killed parent');
  for (const dir of dirs) assert.ok(fs.existsSync(dir), `${dir} left by the killed service`);

  await start();
  await eventually(async () => !pids.some(alive), 10_000);
  for (const dir of dirs) assert.equal(fs.existsSync(dir), false, `${dir} removed`);
  const again = apiClient(base, client.headers.authorization!.slice('Bearer '.length));
  for (const s of created) {
    const view = (await again.call('GET', `/api/browser/sessions/${s.id}`)).body.data.session;
    assert.equal(view.status, 'FAILED');
    assert.equal(view.endReason, 'the host restarted');
  }

  const last = (await again.call('POST', '/api/browser/sessions', {})).body.data.session;
  assert.equal(last.status, 'LIVE');
  const lastPids = ours().map((e) => e.pid);
  seen.push(...lastPids);
  assert.equal(lastPids.length, 1);
  service!.child.kill('SIGTERM');
  assert.equal(await service!.exited, 0);
  assert.ok(!lastPids.some(alive), 'SIGTERM closed every Chromium');
  await start();
  const view = (await again.call('GET', `/api/browser/sessions/${last.id}`)).body.data.session;
  assert.equal(view.status, 'RELEASED');
  assert.equal(view.endReason, 'the service stopped');
});
