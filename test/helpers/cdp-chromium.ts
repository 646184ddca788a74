/**
 * A Chromium reached the way browser sessions reach theirs, with the service's own parts: launched over a pipe (no
 * DevTools port: nothing to reach without the credential), multiplexed, and connected with `chromium.connectOverCDP`
 * through the loopback endpoint whose path carries a secret, so the code under test runs on a connected Browser
 * (its default context, pages other clients open arriving through `context.on('page')`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { InternalCdpServer } from '../../src/modules/browser/cdp/internal.ts';
import { CdpMux } from '../../src/modules/browser/cdp/mux.ts';
import { launchChromium } from '../../src/modules/browser/pool/chromium.ts';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export interface CdpChromium {
  browser: Browser;
  /** Another client may connect here too (a secret-carrying loopback URL). */
  wsEndpoint: string;
  userDataDir: string;
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
  const launched = launchChromium({ chromiumPath: CHROMIUM, viewport: { width: 1280, height: 720 } });
  const policy = { downloadDir: path.join(launched.userDataDir, 'Downloads'), guarded: false };
  const mux = new CdpMux(launched.input, launched.output, policy);
  const endpoint = new InternalCdpServer((id) => (id === 'test' ? mux : undefined));
  const wsEndpoint = await endpoint.urlOf('test');
  const browser = await chromium.connectOverCDP(wsEndpoint);
  return {
    browser,
    wsEndpoint,
    userDataDir: launched.userDataDir,
    async close() {
      await browser.close().catch(() => {});
      await endpoint.close();
      mux.close('the test ended');
      launched.kill();
      await launched.exited;
      // The group's other processes die a moment after the main one.
      for (let i = 0; i < 100 && processesNaming(launched.userDataDir) > 0; i++)
        await new Promise((r) => setTimeout(r, 50));
    },
  };
}
