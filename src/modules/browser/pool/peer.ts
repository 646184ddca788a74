/**
 * Which process is at the other end of a loopback TCP connection (Linux): the peer's socket is the row of
 * /proc/net/tcp{,6} whose local end is our remote end, and its inode appears as `socket:[inode]` among the
 * descriptors of the process holding it. The guard proxy of a session admits connections of its Chromium's
 * process group only, since Chromium cannot send proxy credentials given on its command line.
 */
import fs from 'node:fs';
import type net from 'node:net';

/** `127.0.0.1`, port → the hex form /proc/net/tcp uses (little-endian address, big-endian port). */
function hexEndpoint(address: string, port: number): string[] {
  const v4 = /^(?:::ffff:)?(\d+)\.(\d+)\.(\d+)\.(\d+)$/i.exec(address);
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  if (!v4) return [];
  const [a, b, c, d] = v4.slice(1).map((n) => Number(n).toString(16).toUpperCase().padStart(2, '0'));
  const le = `${d}${c}${b}${a}`;
  // The same address as an IPv4-mapped IPv6 row of /proc/net/tcp6.
  return [`${le}:${hexPort}`, `0000000000000000FFFF0000${le}:${hexPort}`];
}

/** The inode of the socket whose local end is `peer` and remote end `ours`, if any. */
function peerInode(peer: string[], ours: string[]): string | undefined {
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && peer.includes(cols[1]!) && ours.includes(cols[2]!)) return cols[9];
    }
  }
  return undefined;
}

/** Pids whose process group is `pgid`. */
function groupMembers(pgid: number): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name (which may hold spaces): state, ppid, pgrp, …
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

function holds(pid: number, link: string): boolean {
  try {
    for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
      try {
        if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === link) return true;
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    // gone meanwhile
  }
  return false;
}

/** Whether the process at the other end of `socket` (a loopback connection we accepted) is in group `pgid`. */
export function peerInGroup(socket: net.Socket, pgid: number): boolean {
  const { remoteAddress, remotePort, localAddress, localPort } = socket;
  if (!remoteAddress || !remotePort || !localAddress || !localPort || pgid <= 0) return false;
  const inode = peerInode(hexEndpoint(remoteAddress, remotePort), hexEndpoint(localAddress, localPort));
  if (!inode || inode === '0') return false;
  const link = `socket:[${inode}]`;
  return groupMembers(pgid).some((pid) => holds(pid, link));
}
