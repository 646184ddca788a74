/**
 * The TCP sockets a process is listening on, read from /proc (Linux): its socket inodes from /proc/<pid>/fd,
 * matched against /proc/net/tcp and tcp6 rows in state LISTEN. Used to prove that nothing the service opens
 * (proxies, browsers) listens beyond loopback.
 */
import fs from 'node:fs';

export interface Listener {
  address: string;
  port: number;
}

const LISTEN = '0A';

function ipv4(hex: string): string {
  // /proc/net/tcp stores the address as a little-endian 32-bit word.
  const n = Number.parseInt(hex, 16);
  return [n & 255, (n >>> 8) & 255, (n >>> 16) & 255, (n >>> 24) & 255].join('.');
}

function ipv6(hex: string): string {
  // Four little-endian 32-bit words.
  const groups: string[] = [];
  for (let w = 0; w < 4; w++) {
    const word = hex.slice(w * 8, w * 8 + 8);
    const bytes = word.match(/../g)!.reverse().join('');
    groups.push(bytes.slice(0, 4), bytes.slice(4, 8));
  }
  return groups
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')
    .toLowerCase();
}

function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}

/** Every listening TCP socket of `pid` (default: this process). */
export function listenersOf(pid = process.pid): Listener[] {
  const inodes = socketInodes(pid);
  const out: Listener[] = [];
  for (const [file, parse] of [
    ['tcp', ipv4],
    ['tcp6', ipv6],
  ] as const) {
    const rows = fs.readFileSync(`/proc/${pid}/net/${file}`, 'utf8').split('\n').slice(1);
    for (const row of rows) {
      const cols = row.trim().split(/\s+/);
      if (cols.length < 10 || cols[3] !== LISTEN || !inodes.has(cols[9]!)) continue;
      const [addr, port] = cols[1]!.split(':') as [string, string];
      out.push({ address: parse(addr), port: Number.parseInt(port, 16) });
    }
  }
  return out;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|0:0:0:0:0:0:0:1|0:0:0:0:0:ffff:7f\w*:\w+)$/;

/** Listeners of `pid` on anything but a loopback address (0.0.0.0 and :: are every interface). */
export const nonLoopbackListeners = (pid = process.pid): Listener[] =>
  listenersOf(pid).filter((l) => !LOOPBACK.test(l.address));
