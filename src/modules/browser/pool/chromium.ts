/**
 * One Chromium process per session: Debian's Chromium in a process group of its own, DevTools over a pipe only
 * (`--remote-debugging-pipe`, fd 3 we write, fd 4 it writes, NUL-terminated JSON): no DevTools port exists, so
 * neither a page nor another local user can reach it. A fresh temporary profile directory is removed when it ends.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';

/** Every profile directory starts with this, so hygiene can tell our Chromium from anyone else's. */
export const USER_DATA_PREFIX = 'quarry-browser-';

/** Flags of the scraping guide: no background traffic, no QUIC (the guard proxy speaks TCP), no bfcache surprises. */
export const BASE_FLAGS = [
  '--headless=new',
  '--no-sandbox',
  '--remote-debugging-pipe',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
  '--disable-back-forward-cache',
  '--disable-dev-shm-usage',
  // WebRTC's UDP does not go through --proxy-server: without this a page could reach private addresses (STUN/TURN)
  // around the SSRF guard and learn the host's own addresses.
  '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
];

export interface LaunchOptions {
  chromiumPath: string;
  viewport: { width: number; height: number };
  /** http://127.0.0.1:port of the guard proxy; loopback goes through it too (`<-loopback>`). */
  proxyServer?: string;
  /** Unpacked extensions to load (and no other); headless=new runs them in the default browser context. */
  extensionDirs?: string[];
}

export interface ChromiumProcess {
  pid: number;
  userDataDir: string;
  /** CDP in (we write) and out (Chromium writes). */
  input: Writable;
  output: Readable;
  /** Settles once the process has exited and its profile directory is gone; the reason is for `endReason`. */
  exited: Promise<string>;
  readonly alive: boolean;
  /** SIGKILL to the whole group (renderers included); `reason`, when given, is what `exited` says. */
  kill(reason?: string): void;
}

/** Kills a process group, ignoring one that is already gone. */
export function killGroup(pgid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

/**
 * The profile's own preferences, written before Chromium starts: downloads go to `<profile>/Downloads` from the
 * first moment (Chromium's default is the service user's ~/Downloads until a CDP client says otherwise), without
 * asking. The session host pins the same directory for every download behaviour a client sets.
 */
function writePreferences(userDataDir: string): void {
  const downloads = path.join(userDataDir, 'Downloads');
  const preferences = {
    download: { default_directory: downloads, prompt_for_download: false, directory_upgrade: true },
    savefile: { default_directory: downloads },
  };
  fs.mkdirSync(path.join(userDataDir, 'Default'), { recursive: true });
  fs.writeFileSync(path.join(userDataDir, 'Default', 'Preferences'), JSON.stringify(preferences));
}

export function launchChromium(options: LaunchOptions): ChromiumProcess {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), USER_DATA_PREFIX));
  writePreferences(userDataDir);
  const args = [
    ...BASE_FLAGS,
    `--user-data-dir=${userDataDir}`,
    // New headless draws the browser's own toolbar inside --window-size (a 720 px window showed 577 px of page): a
    // kiosk window fills a screen of exactly the viewport's size, so pages get the whole viewport.
    '--kiosk',
    `--screen-info={${options.viewport.width}x${options.viewport.height}}`,
    `--window-size=${options.viewport.width},${options.viewport.height}`,
  ];
  if (options.extensionDirs?.length) {
    const dirs = options.extensionDirs.join(',');
    args.push(`--load-extension=${dirs}`, `--disable-extensions-except=${dirs}`);
  }
  if (options.proxyServer) args.push(`--proxy-server=${options.proxyServer}`, '--proxy-bypass-list=<-loopback>');
  args.push('about:blank');
  const child: ChildProcess = spawn(options.chromiumPath, args, {
    detached: true,
    stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'],
  });
  let alive = child.pid !== undefined;
  let killedFor: string | undefined;
  const exited = new Promise<string>((resolve) => {
    const finish = (exit: string) => {
      const reason = killedFor ?? exit;
      alive = false;
      // Renderers and helpers of the group may outlive the browser process.
      if (child.pid) killGroup(child.pid);
      fs.rmSync(userDataDir, { recursive: true, force: true });
      resolve(reason);
    };
    child.once('error', (err) => finish(`chromium failed to start: ${err.message}`));
    child.once('exit', (code, signal) => finish(signal ? `chromium killed by ${signal}` : `chromium exited (${code})`));
  });
  const input = child.stdio[3] as Writable;
  const output = child.stdio[4] as Readable;
  // A pipe error means the process is going: `exited` tells why.
  input.on('error', () => {});
  output.on('error', () => {});
  return {
    pid: child.pid ?? -1,
    userDataDir,
    input,
    output,
    exited,
    get alive() {
      return alive;
    },
    kill(reason?: string) {
      killedFor ??= reason;
      if (child.pid) killGroup(child.pid);
    },
  };
}
