/**
 * The sessions this process holds: for each, its Chromium, the CDP multiplexer over its pipe, the clients
 * connected and the last activity (what the reaper judges), and the service's own Playwright connection.
 * The database row says what a session is; this says what runs.
 */
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { startGuardProxy } from '../../../shared/guard-proxy.ts';
import { InternalCdpServer } from '../cdp/internal.ts';
import { CdpMux } from '../cdp/mux.ts';
import { type ChromiumProcess, launchChromium } from '../pool/chromium.ts';
import { ProcessRecord } from '../pool/hygiene.ts';
import { peerInGroup } from '../pool/peer.ts';

export interface Viewport {
  width: number;
  height: number;
}

export interface LiveSession {
  id: string;
  userId: string;
  clientRef: string | null;
  chromium: ChromiumProcess;
  mux: CdpMux;
  /** The SSRF guard every connection of this Chromium goes through (none with ALLOW_PRIVATE_NETWORK). */
  guardUrl?: string;
  /** Users' CDP clients connected now. */
  clients: number;
  lastActivity: number;
  expiresAt: number;
  idleTimeoutMs: number;
  keepAlive: boolean;
  /** Sleeps after this long with no client and no action (the reaper); null or absent: never. */
  autoSleepMs?: number | null;
  /** Set once the service ends it: its Chromium's exit is then no failure. */
  ending: boolean;
  playwright?: Promise<Browser>;
}

export interface HostOptions {
  chromiumPath: string;
  dataDir: string;
  hostId: string;
  warmPool: number;
  defaultViewport: Viewport;
  allowPrivateNetwork: boolean;
  now: () => number;
  /** A session's Chromium died by itself (crash, kill -9). */
  onDied: (session: LiveSession, reason: string) => void;
}

interface Launched {
  chromium: ChromiumProcess;
  mux: CdpMux;
  guardUrl?: string;
}

const READY_TIMEOUT_MS = 30_000;
/** How long after a session takes a warm Chromium its replacement is launched. */
const REPLENISH_DELAY_MS = 250;

export class BrowserHost {
  readonly hostId: string;
  #options: HostOptions;
  #sessions = new Map<string, LiveSession>();
  #warm: Launched[] = [];
  #warming = 0;
  /** Launches of the warm pool under way: stop() waits for them (and their Chromium's end). */
  #launching = new Set<Promise<unknown>>();
  #record: ProcessRecord;
  #internal = new InternalCdpServer((id) => this.#sessions.get(id)?.mux);
  #stopped = false;

  constructor(options: HostOptions) {
    this.#options = options;
    this.hostId = options.hostId;
    this.#record = new ProcessRecord(options.dataDir, options.hostId);
  }

  /** Reaps what a previous run of this host left, then fills the warm pool; answers how many groups were killed. */
  start(): number {
    const killed = this.#record.reapPrevious();
    this.#replenish();
    return killed;
  }

  get liveCount(): number {
    return this.#sessions.size;
  }

  get warmCount(): number {
    return this.#warm.length;
  }

  /** Warm-pool launches under way. */
  get warmingCount(): number {
    return this.#warming;
  }

  sessions(): LiveSession[] {
    return [...this.#sessions.values()];
  }

  get(id: string): LiveSession | undefined {
    return this.#sessions.get(id);
  }

  /**
   * Spawns a Chromium with its multiplexer. `ready` waits until it answers on its pipe; without it the launch
   * answers once the process exists (commands written meanwhile wait in the pipe) and a Chromium that never
   * answers is killed in the background, its session ending FAILED with the reason.
   */
  async #launch(
    viewport: Viewport,
    extensionDirs: string[] = [],
    ready = true,
    upstreamProxyUrls: string[] = [],
  ): Promise<Launched> {
    // The guard admits connections of this Chromium's process group only: it cannot send proxy credentials.
    // A session's proxy profile is chained behind the guard, which adds the profile's credentials (Chromium
    // could not send them either); so the guard runs for it even with ALLOW_PRIVATE_NETWORK.
    let group = -1;
    const stopGuard = new AbortController();
    const { allowPrivateNetwork } = this.#options;
    const guard =
      allowPrivateNetwork && !upstreamProxyUrls.length
        ? undefined
        : await startGuardProxy({
            allowPrivateNetwork,
            upstreamProxyUrls,
            signal: stopGuard.signal,
            admitPeer: async (socket) => peerInGroup(socket, group),
          });
    const chromium = launchChromium({
      chromiumPath: this.#options.chromiumPath,
      viewport,
      proxyServer: guard?.url,
      extensionDirs,
    });
    group = chromium.pid;
    void chromium.exited.then(() => {
      stopGuard.abort();
      void guard?.close();
    });
    if (!chromium.alive) throw new Error(await chromium.exited);
    this.#record.add(chromium.pid, chromium.userDataDir);
    void chromium.exited.then(() => this.#record.remove(chromium.pid));
    // Downloads stay inside the profile directory, removed with it.
    const mux = new CdpMux(chromium.input, chromium.output, {
      downloadDir: path.join(chromium.userDataDir, 'Downloads'),
      guarded: guard !== undefined,
    });
    mux.prepareAttach();
    const answered = this.#answered(chromium, mux);
    if (ready) await answered;
    else answered.catch(() => {});
    return { chromium, mux, guardUrl: guard?.url };
  }

  /** Settles once Chromium answers on its pipe; one that exits first, or answers too late, is killed and rejects. */
  async #answered(chromium: ChromiumProcess, mux: CdpMux): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = 'chromium did not start in time';
    try {
      const ready = await Promise.race([
        mux.call('Browser.getVersion'),
        chromium.exited.then((reason) => ({ error: { code: 0, message: reason } })),
        new Promise<{ error: { code: number; message: string } }>((resolve) => {
          timer = setTimeout(() => resolve({ error: { code: 0, message: late } }), READY_TIMEOUT_MS);
        }),
      ]);
      if ('error' in ready && ready.error) throw new Error(ready.error.message);
    } catch (error) {
      // Only a Chromium that is too late is ended for a reason of ours; one whose pipe closed (killed, crashed) is
      // ending anyway, and its exit says why.
      chromium.kill((error as Error).message === late ? late : undefined);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  #replenish(): void {
    const { warmPool, defaultViewport } = this.#options;
    while (!this.#stopped && this.#warm.length + this.#warming < warmPool) {
      this.#warming++;
      const launching = this.#launch(defaultViewport).then(
        (launched) => {
          this.#warming--;
          if (this.#stopped) {
            launched.chromium.kill();
            return launched.chromium.exited;
          }
          this.#warm.push(launched);
          // A warm Chromium that dies waits no more.
          void launched.chromium.exited.then(() => {
            const at = this.#warm.indexOf(launched);
            if (at >= 0) this.#warm.splice(at, 1);
          });
        },
        () => {
          this.#warming--;
        },
      );
      this.#launching.add(launching);
      void launching.finally(() => this.#launching.delete(launching));
    }
  }

  /**
   * Starts a session's Chromium (a warm one when the viewport is the default and it loads no extensions: the warm
   * ones load none) and registers it.
   */
  async open(
    session: Omit<LiveSession, 'chromium' | 'mux' | 'clients' | 'lastActivity' | 'ending' | 'playwright'>,
    viewport: Viewport,
    extensionDirs: string[] = [],
    /** The session's proxy profile (its endpoints): a new Chromium behind a guard chained to it. */
    upstreamProxyUrls: string[] = [],
  ): Promise<LiveSession> {
    const { defaultViewport } = this.#options;
    const asWarm =
      extensionDirs.length === 0 &&
      upstreamProxyUrls.length === 0 &&
      viewport.width === defaultViewport.width &&
      viewport.height === defaultViewport.height;
    const launched =
      (asWarm && this.#warm.shift()) || (await this.#launch(viewport, extensionDirs, false, upstreamProxyUrls));
    // Spawning Chromium blocks the event loop for as long as fork() copies this process's page tables (30–90 ms
    // at 800 MB RSS): refill the pool after this session has been answered and its first client served.
    setTimeout(() => this.#replenish(), REPLENISH_DELAY_MS).unref();
    const live: LiveSession = {
      ...session,
      ...launched,
      clients: 0,
      lastActivity: this.#options.now(),
      ending: false,
    };
    launched.mux.onActivity = () => {
      live.lastActivity = this.#options.now();
    };
    this.#sessions.set(live.id, live);
    void launched.chromium.exited.then((reason) => {
      launched.mux.close(reason);
      if (this.#sessions.get(live.id) !== live) return;
      this.#sessions.delete(live.id);
      if (!live.ending) this.#options.onDied(live, reason);
    });
    if (this.#stopped) await this.close(live.id);
    return live;
  }

  /** Marks activity (a REST action, a client connecting or leaving). */
  touch(id: string): void {
    const live = this.#sessions.get(id);
    if (live) live.lastActivity = this.#options.now();
  }

  /** The service's Playwright on a session: connected once, reused by every REST operation. */
  playwright(id: string): Promise<Browser> {
    const live = this.#sessions.get(id);
    if (!live) return Promise.reject(new Error(`session ${id} is not held by this host`));
    live.playwright ??= (async () => {
      const url = await this.#internal.urlOf(id);
      const { chromium } = await import('playwright-core');
      return chromium.connectOverCDP(url);
    })();
    live.playwright.catch(() => {
      live.playwright = undefined;
    });
    return live.playwright;
  }

  /** Closes a session's Chromium and waits for it to be gone (profile directory removed). */
  async close(id: string): Promise<void> {
    const live = this.#sessions.get(id);
    if (!live) return;
    live.ending = true;
    this.#sessions.delete(id);
    const playwright = live.playwright;
    live.playwright = undefined;
    await playwright?.then((browser) => browser.close()).catch(() => {});
    live.mux.close('the session ended');
    live.chromium.kill();
    await live.chromium.exited;
  }

  /** Every session and warm process closed. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const warm = this.#warm.splice(0);
    for (const { chromium } of warm) chromium.kill();
    await Promise.all([
      ...warm.map((w) => w.chromium.exited),
      ...[...this.#sessions.keys()].map((id) => this.close(id)),
      ...this.#launching,
    ]);
    await this.#internal.close();
  }
}
