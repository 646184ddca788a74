/**
 * Parts of the cloud browser bench: the baseline Chromium (the pool's own binary and flags, DevTools on a pipe or on
 * its own loopback port), the service in-process on PGlite, a loopback fixture page, a one-command CDP client, and
 * process-group figures from /proc.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { loadConfig } from '../src/config.ts';
import { type BrowserSessions, browserSessionsOf } from '../src/modules/browser/index.ts';
import { BASE_FLAGS, launchChromium } from '../src/modules/browser/pool/chromium.ts';
import { type Runtime, startRuntime } from '../src/runtime.ts';
import { freePort } from '../test/helpers/process.ts';
import { BENCH_CREDITS, request } from './lib.ts';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const VIEWPORT = { width: 1280, height: 720 };

/** A page with a button that counts its clicks: what the action scripts drive. */
export async function startFixturePage(): Promise<{ url: string; close(): Promise<void> }> {
  const html =
    '<!doctype html><title>bench</title><button id="b" onclick="window.n=(window.n||0)+1">go</button>' +
    '<p>' +
    'lorem ipsum '.repeat(200) +
    '</p>';
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/page`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export interface BenchBrowserService {
  port: number;
  runtime: Runtime;
  sessions: BrowserSessions;
  dataDir: string;
  auth: Record<string, string>;
  call(method: string, url: string, body?: unknown): Promise<{ status: number; json: any; ms: number }>;
  stop(): Promise<void>;
}

/** The service with RUN_BROWSERS on embedded PGlite, HTTP on a free loopback port, one user signed up. */
export async function startBrowserService(env: Record<string, string> = {}): Promise<BenchBrowserService> {
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-bench-browser-'));
  const config = loadConfig({
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    ALLOW_PRIVATE_NETWORK: 'true',
    RUN_BROWSERS: 'true',
    CHROMIUM_PATH: CHROMIUM,
    BROWSER_MAX_SESSIONS: '20',
    BROWSER_MAX_SESSIONS_PER_USER: '20',
    BROWSER_MIN_FREE_MEMORY_MB: '0',
    ...BENCH_CREDITS,
    ...env,
  });
  const runtime = await startRuntime(config, { http: true, workers: false });
  const signup = await request(
    port,
    'POST',
    '/api/auth/signup',
    {},
    { email: 'bench-browser@example.com', password: 'bench password', termsAccepted: true, privacyAccepted: true },
  );
  const auth = { authorization: `Bearer ${JSON.parse(signup.body).data.apiKey}` };
  return {
    port,
    runtime,
    sessions: browserSessionsOf(runtime.deps),
    dataDir,
    auth,
    async call(method, url, body) {
      const res = await request(port, method, url, auth, body);
      return { status: res.status, json: res.body ? JSON.parse(res.body) : undefined, ms: res.ms };
    },
    async stop() {
      await runtime.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Opens `url` and answers once `Browser.getVersion` has come back over it. */
export function firstCommand(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    ws.once('open', () => ws.send(JSON.stringify({ id: 1, method: 'Browser.getVersion' })));
    ws.on('message', (data) => {
      const message = JSON.parse(String(data));
      if (message.id !== 1) return;
      if (message.error) reject(new Error(message.error.message));
      else resolve(ws);
    });
    ws.once('error', reject);
  });
}

/** Chromium as the pool launches it (same function: binary, flags, pipe) → first command answered on its pipe. */
export async function pipeLaunchToFirstCommand(): Promise<number> {
  const started = performance.now();
  const chromium = launchChromium({ chromiumPath: CHROMIUM, viewport: VIEWPORT });
  await new Promise<void>((resolve, reject) => {
    let buffered = '';
    chromium.output.on('data', (data: Buffer) => {
      buffered += data.toString('utf8');
      if (buffered.includes('"id":1,')) resolve();
    });
    void chromium.exited.then((reason) => reject(new Error(reason)));
    chromium.input.write(`${JSON.stringify({ id: 1, method: 'Browser.getVersion' })}\0`);
  });
  const ms = performance.now() - started;
  chromium.kill();
  await chromium.exited;
  return ms;
}

export interface PortChromium {
  wsUrl: string;
  pid: number;
  close(): Promise<void>;
}

/** The pool's flags with its own DevTools port on loopback instead of the pipe (the baseline of the scripts). */
export async function launchPortChromium(): Promise<PortChromium> {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-bench-baseline-'));
  const flags = BASE_FLAGS.map((f) => (f === '--remote-debugging-pipe' ? '--remote-debugging-port=0' : f));
  const args = [
    ...flags,
    '--remote-debugging-address=127.0.0.1',
    `--user-data-dir=${userDataDir}`,
    `--window-size=${VIEWPORT.width},${VIEWPORT.height}`,
    'about:blank',
  ];
  const child = spawn(CHROMIUM, args, { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const wsUrl = await new Promise<string>((resolve, reject) => {
    let err = '';
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString('utf8');
      const match = /DevTools listening on (ws:\/\/\S+)/.exec(err);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`chromium exited (${code}): ${err.slice(-500)}`)));
  });
  return {
    wsUrl,
    pid: child.pid!,
    async close() {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {}
      await exited;
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/** Pids of the processes in process group `pgid`. */
export function groupPids(pgid: number): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command (which may hold spaces): state ppid pgrp …
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state !== 'Z' && Number(pgrp) === pgid) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Resident and proportional set size of a process group, in kB (PSS shares pages among the group fairly). */
export function groupMemoryKb(pgid: number): { rss: number; pss: number } {
  let rss = 0;
  let pss = 0;
  for (const pid of groupPids(pgid)) {
    try {
      const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
      rss += Number(/^Rss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
      pss += Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
    } catch {
      // gone meanwhile
    }
  }
  return { rss, pss };
}
