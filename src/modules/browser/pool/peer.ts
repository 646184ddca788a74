/**
 * Which process is at the other end of a loopback TCP connection (Linux): the peer's socket is the row of
 * /proc/net/tcp{,6} whose local end is our remote end, and its inode appears as `socket:[inode]` among the
 * descriptors of the process holding it. The guard proxy of a session admits connections of its Chromium's
 * process group only, since Chromium cannot send proxy credentials given on its command line. The tables are read
 * without blocking and shared by the connections accepted before a read began; the group's members that opened
 * connections before are looked at first (a /proc scan only for a member not seen yet).
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

/** Rows of a /proc/net/tcp{,6} table: "local remote" endpoints → socket inode. */
async function socketTable(file: string): Promise<Map<string, string>> {
  const rows = new Map<string, string>();
  const text = await fs.promises.readFile(file, 'utf8').catch(() => '');
  for (const line of text.split('\n').slice(1)) {
    const cols = line.trim().split(/\s+/);
    if (cols.length > 9) rows.set(`${cols[1]} ${cols[2]}`, cols[9]!);
  }
  return rows;
}

/**
 * The IPv4 table, read as few times as the guard's connections allow. A read costs the same for one connection as
 * for many (several ms, growing with the host's sockets), and a page opens many at once. A read that began after
 * a connection was accepted holds that connection's row (its endpoints name it alone while it is open), so it
 * serves every connection accepted before it began; those accepted while it runs share the one read that follows
 * it. A read begun earlier is never used, so a row of a closed connection cannot stand for a new one.
 */
interface TableRead {
  startedAt: bigint;
  rows: Promise<Map<string, string>>;
  done: boolean;
}
let lastRead: TableRead | undefined;
let nextRead: Promise<Map<string, string>> | undefined;

function readIpv4Table(): TableRead {
  const read: TableRead = { startedAt: process.hrtime.bigint(), rows: socketTable('/proc/net/tcp'), done: false };
  void read.rows.finally(() => {
    read.done = true;
  });
  lastRead = read;
  return read;
}

function ipv4TableSince(acceptedAt: bigint): Promise<Map<string, string>> {
  if (lastRead && lastRead.startedAt >= acceptedAt) return lastRead.rows;
  if (!lastRead || lastRead.done) return readIpv4Table().rows;
  nextRead ??= lastRead.rows.then(() => {
    nextRead = undefined;
    return readIpv4Table().rows;
  });
  return nextRead;
}

/** The inode of the socket whose local end is `peer` and remote end `ours`, if any. */
async function peerInode(peer: string[], ours: string[], acceptedAt: bigint): Promise<string | undefined> {
  const [peer4, peer6] = peer;
  const [ours4, ours6] = ours;
  if (!peer4 || !ours4) return undefined;
  const inode = (await ipv4TableSince(acceptedAt)).get(`${peer4} ${ours4}`);
  // A dual-stack listener sees IPv4 peers as IPv4-mapped IPv6 rows.
  return inode ?? (await socketTable('/proc/net/tcp6')).get(`${peer6} ${ours6}`);
}

/** A process's group and start time (clock ticks since boot): a pid and its start time name one process for good. */
function statOf(pid: number): { pgrp: number; start: string } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at the 3rd: state, ppid, pgrp, … starttime (22nd).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pgrp: Number(fields[2]), start: fields[19]! };
  } catch {
    return undefined; // gone
  }
}

/** Pids whose process group is `pgid`, with their start times. */
function groupMembers(pgid: number): Map<number, string> {
  const members = new Map<number, string>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = statOf(Number(entry));
    if (stat?.pgrp === pgid) members.set(Number(entry), stat.start);
  }
  return members;
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

/**
 * Per process group, the members that held a connection before (pid → start time): Chromium opens its connections
 * from one or two processes (the network service), so a page that opens many is judged by looking at those first
 * instead of scanning every process of the host each time. An entry counts only while the same process (same pid
 * and start time) is still in the group, so a reused pid is never admitted on an old judgement. Bounded, and
 * dropped when the group's Chromium exits (`forgetGroup`).
 */
const known = new Map<number, Map<number, string>>();
const MAX_GROUPS = 256;
const MAX_MEMBERS = 8;

/** Forgets what was learnt of group `pgid` (its Chromium has exited). */
export function forgetGroup(pgid: number): void {
  known.delete(pgid);
}

function remember(pgid: number, pid: number, start: string): void {
  let members = known.get(pgid);
  if (!members) {
    if (known.size >= MAX_GROUPS) known.delete(known.keys().next().value!);
    known.set(pgid, (members = new Map()));
  }
  if (members.size >= MAX_MEMBERS) members.delete(members.keys().next().value!);
  members.set(pid, start);
}

/**
 * Whether the process at the other end of `socket` (a loopback connection we accepted) is in group `pgid`.
 * Call it when the connection is accepted: the socket tables it reads are those read since then.
 */
export async function peerInGroup(socket: net.Socket, pgid: number): Promise<boolean> {
  const acceptedAt = process.hrtime.bigint();
  const { remoteAddress, remotePort, localAddress, localPort } = socket;
  if (!remoteAddress || !remotePort || !localAddress || !localPort || pgid <= 0) return false;
  const inode = await peerInode(
    hexEndpoint(remoteAddress, remotePort),
    hexEndpoint(localAddress, localPort),
    acceptedAt,
  );
  if (!inode || inode === '0') return false;
  const link = `socket:[${inode}]`;
  const members = known.get(pgid);
  for (const [pid, start] of members ?? []) {
    const stat = statOf(pid);
    if (stat?.pgrp !== pgid || stat.start !== start) {
      members!.delete(pid); // gone, left the group, or its pid now names another process
      continue;
    }
    if (holds(pid, link)) return true;
  }
  for (const [pid, start] of groupMembers(pgid)) {
    if (members?.has(pid)) continue; // looked at above
    if (holds(pid, link)) {
      remember(pgid, pid, start);
      return true;
    }
  }
  return false;
}
