/**
 * A Chromium reached the way browser sessions reach theirs: started by hand with a DevTools port on loopback, then
 * `chromium.connectOverCDP`, so the code under test runs on a connected Browser (its default context, pages other
 * clients open arriving through `context.on('page')`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export interface CdpChromium {
  browser: Browser;
  wsEndpoint: string;
  userDataDir: string;
  process: ChildProcess;
  close(): Promise<void>;
}

/** Processes whose command line names `marker` (a user-data-dir unique to one launch). */
export function processesNaming(marker: string): number {
  let count = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker)) count++;
    } catch {}
  }
  return count;
}

export async function launchCdpChromium(): Promise<CdpChromium> {
  const userDataDir = await mkdtemp(path.join(os.tmpdir(), 'quarry-cdp-test-'));
  const child = spawn(
    CHROMIUM,
    [
      '--headless=new',
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
      '--no-first-run',
      '--disable-back-forward-cache',
      '--remote-debugging-address=127.0.0.1',
      '--remote-debugging-port=0',
      `--user-data-dir=${userDataDir}`,
      'about:blank',
    ],
    { detached: true, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const wsEndpoint = await new Promise<string>((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`Chromium did not start: ${text}`)), 20_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = /DevTools listening on (ws:\/\/\S+)/.exec(text);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`Chromium exited (${code}): ${text}`)));
  });
  child.stderr?.resume();
  const browser = await chromium.connectOverCDP(wsEndpoint);
  return {
    browser,
    wsEndpoint,
    userDataDir,
    process: child,
    async close() {
      await browser.close().catch(() => {});
      const exited = new Promise((resolve) => child.once('exit', resolve));
      try {
        process.kill(-(child.pid as number), 'SIGKILL');
      } catch {}
      if (child.exitCode === null && child.signalCode === null) await exited;
      // The group's other processes die a moment after the main one.
      for (let i = 0; i < 100 && processesNaming(userDataDir) > 0; i++) await new Promise((r) => setTimeout(r, 50));
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}
