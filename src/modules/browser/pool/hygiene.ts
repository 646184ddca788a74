/**
 * No Chromium outlives its host: each host records the process groups it started in a file under DATA_DIR
 * (per host id), and at start kills what a previous run of the same host left (a kill -9 of the service leaves
 * its Chromium running otherwise), after checking the pid is still one of our Chromium processes (pids are reused).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { killGroup, USER_DATA_PREFIX } from './chromium.ts';
import { forgetGroup } from './peer.ts';

interface Entry {
  pid: number;
  userDataDir: string;
}

/** The flag a Chromium of ours carries; anything else under a recorded pid is not ours to kill. */
const userDataFlag = (dir: string) => `--user-data-dir=${dir}`;

function commandLine(pid: number): string[] {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

/** Whether `pid` runs with exactly this profile directory, and the directory is one of ours. */
export function isOurChromium(pid: number, userDataDir: string): boolean {
  if (!path.basename(userDataDir).startsWith(USER_DATA_PREFIX)) return false;
  return commandLine(pid).includes(userDataFlag(userDataDir));
}

export class ProcessRecord {
  #file: string;
  #entries = new Map<number, Entry>();

  constructor(dataDir: string, hostId: string) {
    const dir = path.join(dataDir, 'browser-hosts');
    fs.mkdirSync(dir, { recursive: true });
    this.#file = path.join(dir, `${hostId.replace(/[^\w.-]/g, '_')}.json`);
  }

  /** Kills and removes what the previous run of this host left; answers how many groups were killed. */
  reapPrevious(): number {
    let previous: Entry[] = [];
    try {
      previous = JSON.parse(fs.readFileSync(this.#file, 'utf8')) as Entry[];
    } catch {
      // no record: a first start, or a clean stop
    }
    let killed = 0;
    for (const entry of previous) {
      if (isOurChromium(entry.pid, entry.userDataDir)) {
        killGroup(entry.pid);
        killed++;
      }
      if (path.basename(entry.userDataDir).startsWith(USER_DATA_PREFIX) && entry.userDataDir.startsWith(os.tmpdir())) {
        fs.rmSync(entry.userDataDir, { recursive: true, force: true });
      }
    }
    this.#write();
    return killed;
  }

  add(pid: number, userDataDir: string): void {
    this.#entries.set(pid, { pid, userDataDir });
    this.#write();
  }

  /** The group of `pid` is gone: no record of it, and nothing learnt of its members admits anyone any more. */
  remove(pid: number): void {
    forgetGroup(pid);
    if (this.#entries.delete(pid)) this.#write();
  }

  #write(): void {
    // Written aside and renamed: a kill during the write leaves the previous complete record.
    const draft = `${this.#file}.${process.pid}.tmp`;
    fs.writeFileSync(draft, JSON.stringify([...this.#entries.values()]));
    fs.renameSync(draft, this.#file);
  }
}
