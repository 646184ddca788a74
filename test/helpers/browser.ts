/** Helpers of the cloud browser tests: a listening test service, sessions, and our Chromium processes counted. */
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { createTestContext, type TestContext, type TestContextOptions, type TestUser } from './app.ts';

const PREFIX = `--user-data-dir=${path.join(os.tmpdir(), 'quarry-browser-')}`;

/** Pids of live Chromium processes of ours (any host), by their profile directory. */
export function ourChromiumPids(): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const status = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (/\) Z /.test(status)) continue;
      if (args.some((a) => a.startsWith(PREFIX))) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** The Chromium processes a host of `dataDir` records as started and not yet gone (pool/hygiene.ts). */
export function recordedChromium(dataDir: string): { pid: number; userDataDir: string }[] {
  const dir = path.join(dataDir, 'browser-hosts');
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .flatMap((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')));
}

/** Whether `pid` runs (a zombie does not count). */
export function running(pid: number): boolean {
  try {
    return !/\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

export interface BrowserTestContext extends TestContext {
  /** host:port the service listens on (cdpUrls are built from it). */
  hostPort: string;
  api(
    user: TestUser,
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    url: string,
    payload?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ statusCode: number; headers: Record<string, unknown>; json(): any }>;
}

/** The service listening on loopback, so Playwright and Puppeteer can reach the cdpUrls it answers. */
export async function createBrowserContext(options: TestContextOptions = {}): Promise<BrowserTestContext> {
  const ctx = await createTestContext({ workers: false, ...options });
  await ctx.app.listen({ host: '127.0.0.1', port: 0 });
  const hostPort = `127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  const close = ctx.close;
  return Object.assign(ctx, {
    hostPort,
    /** Closes the service, then checks every Chromium it started is gone with its profile directory. */
    async close() {
      const started = recordedChromium(ctx.dataDir);
      await close();
      for (const { pid, userDataDir } of started) {
        if (running(pid)) throw new Error(`Chromium ${pid} outlived the service`);
        if (fs.existsSync(userDataDir)) throw new Error(`${userDataDir} outlived the service`);
      }
    },
    api: (user: TestUser, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers = {}) =>
      ctx.app.inject({
        method,
        url,
        headers: { ...user.headers, host: hostPort, ...headers },
        ...(payload !== undefined ? { payload: payload as object } : {}),
      }) as never,
  });
}

/** The HTTP status a WebSocket upgrade to `url` is answered with (101 when it opens). */
export function upgradeStatus(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => {
      ws.close();
      resolve(101);
    });
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
      ws.terminate();
    });
    ws.once('error', (err) => {
      if (!ws.readyState || ws.readyState === WebSocket.CLOSED) reject(err);
    });
  });
}
