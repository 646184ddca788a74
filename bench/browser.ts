/**
 * Cloud browser figures (issue 21, "Benchmark"), the service in-process on PGlite with RUN_BROWSERS, against
 * baselines measured in the same run on the same Chromium binary with the pool's own flags:
 *   - POST /sessions → first CDP command answered over cdpUrl, p50, cold ÷ the pool's own launch → first command on
 *     its pipe; and with BROWSER_WARM_POOL=2 (the pool refilled between samples);
 *   - 200 Playwright actions (navigate, click, evaluate) through cdpUrl ÷ the same on Chromium's own DevTools port
 *     (rounds interleaved, median ratio of rates); the same 200 as REST actions, actions/s;
 *   - 10 idle sessions: memory per session (RSS and PSS of each session's process group);
 *   - 30 create/release cycles: Chromium processes and profile directories left behind;
 *   - sleeping sessions (bench/browser-sleep.ts): sleep and wake → first command p50, 100 asleep on disk.
 *   - the live viewer (bench/browser-live.ts): frames per second and latency with 1 and 5 viewers, one screencast.
 * BENCH_BROWSER_SAMPLES (default 10) and BENCH_BROWSER_ROUNDS (default 3) shorten or lengthen it.
 */
import fs from 'node:fs';
import os from 'node:os';
import { type Browser, chromium, type Page } from 'playwright-core';
import { recordedChromium } from '../test/helpers/browser.ts';
import { liveViewer } from './browser-live.ts';
import {
  type BenchBrowserService,
  firstCommand,
  groupMemoryKb,
  groupPids,
  launchPortChromium,
  pipeLaunchToFirstCommand,
  startBrowserService,
  startFixturePage,
} from './browser-parts.ts';
import { benchSleep } from './browser-sleep.ts';
import { median, percentile, type Row } from './lib.ts';

const SAMPLES = Number(process.env.BENCH_BROWSER_SAMPLES ?? 10);
const ROUNDS = Number(process.env.BENCH_BROWSER_ROUNDS ?? 3);
const ACTIONS = 200;
const IDLE_SESSIONS = 10;
const CYCLES = 30;
const COLD_RATIO_TARGET = 1.2;
const WARM_TARGET_MS = 100;
const SCRIPT_RATIO_TARGET = 0.9;
const S = '/api/browser/sessions';

const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const ms = (v: number) => `${v.toFixed(0)} ms`;
const p50 = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
const spread = (values: number[]) => `${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)}`;

export async function benchBrowser(): Promise<Row[]> {
  const rows: Row[] = [{ name: 'load average at start (1, 5, 15 min)', value: load(), target: '', pass: null }];
  const fixture = await startFixturePage();
  try {
    const service = await startBrowserService();
    try {
      rows.push(...(await coldStart(service)));
      rows.push(...(await scripts(service, fixture.url)));
      rows.push(await idleMemory(service));
      rows.push(...(await cycles(service)));
      rows.push(...(await benchSleep(service, fixture.url)));
      rows.push(...(await liveViewer(service)));
    } finally {
      await service.stop();
    }
    const warm = await startBrowserService({ BROWSER_WARM_POOL: '2' });
    try {
      rows.push(await warmStart(warm));
    } finally {
      await warm.stop();
    }
  } finally {
    await fixture.close();
  }
  rows.push({ name: 'load average at end (1, 5, 15 min)', value: load(), target: '', pass: null });
  return rows;
}

async function createSession(service: BenchBrowserService, body: object = {}) {
  const res = await service.call('POST', S, body);
  if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json.data.session as { id: string; cdpUrl: string };
}

async function release(service: BenchBrowserService, id: string): Promise<void> {
  const res = await service.call('DELETE', `${S}/${id}`);
  if (res.status !== 200) throw new Error(`release: ${res.status} ${JSON.stringify(res.json)}`);
}

/** POST /sessions → first command over cdpUrl: the service's total, and the part spent before the answer. */
async function createToFirstCommand(service: BenchBrowserService): Promise<{ total: number; create: number }> {
  const started = performance.now();
  const session = await createSession(service);
  const create = performance.now() - started;
  const ws = await firstCommand(session.cdpUrl);
  const total = performance.now() - started;
  ws.close();
  await release(service, session.id);
  return { total, create };
}

async function coldStart(service: BenchBrowserService): Promise<Row[]> {
  const viaService: number[] = [];
  const createOnly: number[] = [];
  const own: number[] = [];
  // One of each, alternating, so load from elsewhere on the machine weighs on both alike; a first one of each
  // unmeasured (the service's first session pays for compiling its code paths).
  await pipeLaunchToFirstCommand();
  await createToFirstCommand(service);
  for (let i = 0; i < SAMPLES; i++) {
    const { total, create } = await createToFirstCommand(service);
    viaService.push(total);
    createOnly.push(create);
    own.push(await pipeLaunchToFirstCommand());
  }
  const ratio = p50(viaService) / p50(own);
  console.log(
    `cold: service ${viaService.map((v) => v.toFixed(0)).join(' ')}; own ${own.map((v) => v.toFixed(0)).join(' ')}`,
  );
  return [
    {
      name: `POST /sessions → first CDP command over cdpUrl, cold, p50 of ${SAMPLES} (range ${spread(viaService)})`,
      value: ms(p50(viaService)),
      target: '',
      pass: null,
    },
    { name: '  of which POST /sessions answered, p50', value: ms(p50(createOnly)), target: '', pass: null },
    {
      name: `Chromium's own launch (pool flags, pipe) → first command, p50 (range ${spread(own)})`,
      value: ms(p50(own)),
      target: '',
      pass: null,
    },
    {
      name: 'cold create → first command ÷ own launch → first command',
      value: ratio.toFixed(2),
      target: `<= ${COLD_RATIO_TARGET}`,
      pass: ratio <= COLD_RATIO_TARGET,
    },
  ];
}

async function warmStart(service: BenchBrowserService): Promise<Row> {
  const host = service.sessions.host!;
  const samples: number[] = [];
  const waitFull = async () => {
    for (let i = 0; i < 600 && host.warmCount < 2; i++) await new Promise((r) => setTimeout(r, 50));
    if (host.warmCount < 2) throw new Error('the warm pool did not refill');
  };
  await waitFull();
  await createToFirstCommand(service);
  for (let i = 0; i < SAMPLES; i++) {
    await waitFull();
    samples.push((await createToFirstCommand(service)).total);
  }
  // Stopping while a replacement is still launching leaves its exit to write the record of a removed DATA_DIR.
  await waitFull();
  console.log(`warm: ${samples.map((v) => v.toFixed(0)).join(' ')}`);
  const value = p50(samples);
  return {
    name: `POST /sessions → first CDP command, BROWSER_WARM_POOL=2, p50 of ${SAMPLES} (range ${spread(samples)})`,
    value: ms(value),
    target: `< ${WARM_TARGET_MS} ms`,
    pass: value < WARM_TARGET_MS,
  };
}

/** ACTIONS actions in a loop: navigate to the fixture, click its button, read the count. */
async function playwrightScript(page: Page, url: string, actions = ACTIONS): Promise<number> {
  const started = performance.now();
  let done = 0;
  while (done < actions) {
    await page.goto(url);
    if (++done === actions) break;
    await page.click('#b');
    if (++done === actions) break;
    const clicks = await page.evaluate('window.n');
    if (clicks !== 1) throw new Error(`the click did not land: ${clicks}`);
    done++;
  }
  return actions / ((performance.now() - started) / 1000);
}

async function restScript(service: BenchBrowserService, id: string, url: string, actions = ACTIONS) {
  const act = async (action: string, body: object) => {
    const res = await service.call('POST', `${S}/${id}/actions/${action}`, body);
    if (res.status !== 200) throw new Error(`${action}: ${res.status} ${JSON.stringify(res.json)}`);
    return res.json.data.result;
  };
  const started = performance.now();
  let done = 0;
  while (done < actions) {
    await act('navigate', { url });
    if (++done === actions) break;
    await act('click', { selector: '#b' });
    if (++done === actions) break;
    const clicks = await act('evaluate', { expression: 'window.n' });
    if (clicks !== 1) throw new Error(`the click did not land: ${clicks}`);
    done++;
  }
  return actions / ((performance.now() - started) / 1000);
}

const pageOf = async (browser: Browser) => {
  const context = browser.contexts()[0] ?? (await browser.newContext());
  return context.pages()[0] ?? (await context.newPage());
};

async function scripts(service: BenchBrowserService, url: string): Promise<Row[]> {
  const session = await createSession(service, { keepAlive: true });
  const own = await launchPortChromium();
  const rates = { service: [] as number[], own: [] as number[], ratio: [] as number[] };
  let rest: number[] = [];
  try {
    const viaService = await chromium.connectOverCDP(session.cdpUrl);
    const direct = await chromium.connectOverCDP(own.wsUrl);
    const [servicePage, ownPage] = [await pageOf(viaService), await pageOf(direct)];
    // A short warm-up on each: the first navigations pay for process start-up of the renderer.
    await playwrightScript(servicePage, url, 30);
    await playwrightScript(ownPage, url, 30);
    for (let round = 0; round < ROUNDS; round++) {
      const first = round % 2 === 0;
      const a = first ? await playwrightScript(servicePage, url) : 0;
      const b = await playwrightScript(ownPage, url);
      const s = first ? a : await playwrightScript(servicePage, url);
      rates.service.push(s);
      rates.own.push(b);
      rates.ratio.push(s / b);
      console.log(`script round ${round + 1}: cdpUrl ${s.toFixed(1)}, own port ${b.toFixed(1)} actions/s`);
    }
    await viaService.close();
    await direct.close();
    await restScript(service, session.id, url, 30);
    rest = [];
    for (let round = 0; round < ROUNDS; round++) rest.push(await restScript(service, session.id, url));
    console.log(`REST: ${rest.map((v) => v.toFixed(1)).join(' ')} actions/s`);
  } finally {
    await own.close();
    await release(service, session.id);
  }
  const ratio = median(rates.ratio);
  return [
    {
      name: `${ACTIONS} Playwright actions through cdpUrl, median of ${ROUNDS}: actions/s`,
      value: median(rates.service).toFixed(1),
      target: '',
      pass: null,
    },
    {
      name: `the same on Chromium's own DevTools port: actions/s`,
      value: median(rates.own).toFixed(1),
      target: '',
      pass: null,
    },
    {
      name: `cdpUrl ÷ own port, median of ${ROUNDS} interleaved rounds (${rates.ratio.map((r) => r.toFixed(2)).join(', ')})`,
      value: ratio.toFixed(2),
      target: `>= ${SCRIPT_RATIO_TARGET}`,
      pass: ratio >= SCRIPT_RATIO_TARGET,
    },
    {
      name: `the same ${ACTIONS} as REST actions, median of ${ROUNDS}: actions/s`,
      value: median(rest).toFixed(1),
      target: 'reported',
      pass: null,
    },
  ];
}

async function idleMemory(service: BenchBrowserService): Promise<Row> {
  const ids: string[] = [];
  try {
    for (let i = 0; i < IDLE_SESSIONS; i++) ids.push((await createSession(service, { keepAlive: true })).id);
    // Let start-up settle (first paint of about:blank, lazy helpers).
    await new Promise((r) => setTimeout(r, 3000));
    let rss = 0;
    let pss = 0;
    let processes = 0;
    for (const id of ids) {
      const pgid = service.sessions.host!.get(id)!.chromium.pid;
      const memory = groupMemoryKb(pgid);
      rss += memory.rss;
      pss += memory.pss;
      processes += groupPids(pgid).length;
    }
    const mb = (kb: number) => kb / 1024 / IDLE_SESSIONS;
    // RSS counts the pages a group's processes share (the binary, fonts) once per process; PSS splits them.
    return {
      name: `${IDLE_SESSIONS} idle sessions: summed RSS of each group ÷ ${IDLE_SESSIONS} (${processes / IDLE_SESSIONS} processes each)`,
      value: `${mb(rss).toFixed(0)} MB (PSS ${mb(pss).toFixed(0)} MB)`,
      target: 'reported',
      pass: null,
    };
  } finally {
    for (const id of ids) await release(service, id);
  }
}

async function cycles(service: BenchBrowserService): Promise<Row[]> {
  const started: { pid: number; userDataDir: string }[] = [];
  for (let i = 0; i < CYCLES; i++) {
    const session = await createSession(service);
    const live = service.sessions.host!.get(session.id)!;
    started.push({ pid: live.chromium.pid, userDataDir: live.chromium.userDataDir });
    await release(service, session.id);
  }
  const left = started.reduce((n, { pid }) => n + groupPids(pid).length, 0);
  const dirs = started.filter(({ userDataDir }) => fs.existsSync(userDataDir)).length;
  const recorded = recordedChromium(service.dataDir).length;
  return [
    {
      name: `${CYCLES} create/release cycles: Chromium processes left (their groups; ${recorded} still recorded)`,
      value: String(left),
      target: '0',
      pass: left === 0 && recorded === 0,
    },
    {
      name: `${CYCLES} create/release cycles: temporary user-data-dirs left`,
      value: String(dirs),
      target: '0',
      pass: dirs === 0,
    },
  ];
}
