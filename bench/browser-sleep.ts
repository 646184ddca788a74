/**
 * Sleeping sessions (issue 22, "Benchmark"), on the service of bench/browser.ts: a session with the fixture state
 * (a login cookie, localStorage, 3 tabs, one scrolled) put to sleep and woken SAMPLES times:
 *   - POST /sessions/{id}/sleep p50 (capture, Chromium stopped, snapshot stored);
 *   - POST /snapshots/{id}/wake → first CDP command answered over the cdpUrl, p50 (a new Chromium, the state back,
 *     the tabs loaded and scrolled), beside Chromium's own launch → first command measured in the same rounds;
 *   - the snapshot's size; then 100 sessions of that state asleep: Chromium processes left, and the disk they take
 *     (the snapshots' bytes, and what DATA_DIR grew by: the embedded database's files).
 */
import fs from 'node:fs';
import path from 'node:path';
import { recordedChromium } from '../test/helpers/browser.ts';
import { type BenchBrowserService, firstCommand, pipeLaunchToFirstCommand } from './browser-parts.ts';
import { percentile, type Row } from './lib.ts';

const SAMPLES = Number(process.env.BENCH_BROWSER_SAMPLES ?? 10);
const SLEEPING = Number(process.env.BENCH_BROWSER_SLEEPING ?? 100);
const SLEEP_TARGET_MS = 1000;
const WAKE_TARGET_MS = 1000;
const DISK_TARGET_MB = 50;
const S = '/api/browser/sessions';

const p50 = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
const spread = (values: number[]) => `${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)}`;

async function ok(service: BenchBrowserService, method: string, url: string, body?: unknown) {
  const res = await service.call(method, url, body);
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json.data;
}

/** A session with the fixture state: logged in (cookie + localStorage), 3 tabs, the second scrolled and active. */
async function sessionWithState(service: BenchBrowserService, url: string): Promise<string> {
  const { session } = await ok(service, 'POST', S, { keepAlive: true });
  const id = session.id as string;
  const origin = new URL(url).origin;
  await ok(service, 'POST', `${S}/${id}/actions/navigate`, { url: `${url}?tab=1` });
  await ok(service, 'POST', `${S}/${id}/cookies`, {
    cookies: [{ name: 'sid', value: 'a'.repeat(40), url: origin, httpOnly: true }],
  });
  await ok(service, 'POST', `${S}/${id}/actions/evaluate`, {
    expression: "(localStorage.setItem('token', 'b'.repeat(200)), sessionStorage.setItem('draft', 'words'), 1)",
  });
  const second = await ok(service, 'POST', `${S}/${id}/tabs`, { url: `${url}?tab=2` });
  await ok(service, 'POST', `${S}/${id}/actions/scroll`, { y: 300 });
  await ok(service, 'POST', `${S}/${id}/tabs`, { url: `${url}?tab=3` });
  await ok(service, 'POST', `${S}/${id}/tabs/${second.id}/activate`);
  return id;
}

/** Bytes under `dir` (files only). */
function du(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) total += du(file);
    else if (entry.isFile()) total += fs.statSync(file).size;
  }
  return total;
}

export async function benchSleep(service: BenchBrowserService, url: string): Promise<Row[]> {
  const id = await sessionWithState(service, url);
  const sleeps: number[] = [];
  const wakes: number[] = [];
  const own: number[] = [];
  let size = 0;
  // A first cycle unmeasured (it compiles the paths).
  for (let i = -1; i < SAMPLES; i++) {
    const started = performance.now();
    const { snapshot } = await ok(service, 'POST', `${S}/${id}/sleep`);
    const slept = performance.now() - started;
    size = snapshot.sizeBytes;
    const waking = performance.now();
    const { session } = await ok(service, 'POST', `/api/browser/snapshots/${snapshot.id}/wake`);
    const ws = await firstCommand(session.cdpUrl);
    const woke = performance.now() - waking;
    ws.close();
    if (i < 0) continue;
    sleeps.push(slept);
    wakes.push(woke);
    // Chromium's own launch → first command in the same round: what any wake pays before restoring anything.
    own.push(await pipeLaunchToFirstCommand());
  }
  const tabs = (await ok(service, 'GET', `${S}/${id}/tabs`)).tabs.length;
  if (tabs !== 3) throw new Error(`the woken session has ${tabs} tabs`);
  await ok(service, 'DELETE', `${S}/${id}`);
  console.log(`sleep: ${sleeps.map((v) => v.toFixed(0)).join(' ')}; wake: ${wakes.map((v) => v.toFixed(0)).join(' ')}`);

  // SLEEPING sessions of that state, two set up at a time.
  const before = du(service.dataDir);
  const ids: string[] = [];
  let bytes = 0;
  for (let i = 0; i < SLEEPING; i += 2) {
    const batch = await Promise.all(
      [0, 1].slice(0, SLEEPING - i).map(async () => {
        const sessionId = await sessionWithState(service, url);
        const { snapshot } = await ok(service, 'POST', `${S}/${sessionId}/sleep`);
        bytes += snapshot.sizeBytes;
        return sessionId;
      }),
    );
    ids.push(...batch);
  }
  const grown = du(service.dataDir) - before;
  const processes = recordedChromium(service.dataDir).length + (service.sessions.host?.liveCount ?? 0);
  const usage = await ok(service, 'GET', '/api/browser/usage');
  for (const sessionId of ids) await ok(service, 'DELETE', `${S}/${sessionId}`);
  const mb = (n: number) => n / 2 ** 20;
  return [
    {
      name: `POST /sessions/{id}/sleep, 3 tabs, p50 of ${SAMPLES} (range ${spread(sleeps)})`,
      value: `${p50(sleeps).toFixed(0)} ms`,
      target: `< ${SLEEP_TARGET_MS} ms`,
      pass: p50(sleeps) < SLEEP_TARGET_MS,
    },
    {
      name: `POST /snapshots/{id}/wake → first CDP command over cdpUrl, 3 tabs, p50 (range ${spread(wakes)})`,
      value: `${p50(wakes).toFixed(0)} ms`,
      target: `< ${WAKE_TARGET_MS} ms`,
      pass: p50(wakes) < WAKE_TARGET_MS,
    },
    {
      name: `  Chromium's own launch → first command, same rounds, p50 (range ${spread(own)}); wake ÷ launch`,
      value: `${p50(own).toFixed(0)} ms; ${(p50(wakes) / p50(own)).toFixed(2)}`,
      target: '',
      pass: null,
    },
    { name: 'snapshot of the fixture state (gzipped JSON)', value: `${size} B`, target: '', pass: null },
    {
      name: `${SLEEPING} sleeping sessions: Chromium processes (${usage.sleeping} sleeping per GET /usage)`,
      value: String(processes),
      target: '0',
      pass: processes === 0 && usage.sleeping === SLEEPING,
    },
    {
      name: `${SLEEPING} sleeping sessions: disk, DATA_DIR growth (snapshots' own bytes ${mb(bytes).toFixed(2)} MB)`,
      value: `${mb(grown).toFixed(1)} MB`,
      target: `< ${DISK_TARGET_MB} MB`,
      pass: mb(grown) < DISK_TARGET_MB,
    },
  ];
}
