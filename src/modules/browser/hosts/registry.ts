/**
 * The registry of browser hosts (PostgreSQL only): each RUN_BROWSERS process records its id, the internal URL of
 * its API listener and a heartbeat every few seconds, so other API processes can forward a session's requests to
 * it, and any process can tell a host that died (stale heartbeat) and fail its sessions.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StartupError } from '../../../config.ts';
import type { Db } from '../../../db/client.ts';
import { processAlive } from '../../../db/lock.ts';
import { readOrCreateFile } from '../../../shared/file-once.ts';
import { type HostRow, hostsRepository } from './hosts.repository.ts';

/** How often a host says it is alive. */
export const HEARTBEAT_MS = 5000;

/** A second live process claims a host id another one holds: the entry point prints its one line and exits. */
export class HostIdInUseError extends StartupError {}

/** The default host id: random, kept in DATA_DIR so that a restart is the same host (and reaps its Chromium). */
export function persistedHostId(dataDir: string): string {
  const hostname = os
    .hostname()
    .replace(/[^\w.-]/g, '_')
    .slice(0, 60);
  return readOrCreateFile(path.join(dataDir, 'browser-host-id'), () => `${hostname}-${crypto.randomUUID()}`);
}

/**
 * This process's host id: BROWSER_HOST_ID, else the random one kept in DATA_DIR. A process without browsers holds
 * no session, so it gets an id of its own that matches no host's.
 */
export const hostIdOf = (config: { RUN_BROWSERS: boolean; BROWSER_HOST_ID?: string; dataDir: string }): string =>
  config.RUN_BROWSERS
    ? (config.BROWSER_HOST_ID ?? persistedHostId(config.dataDir))
    : `no-browsers-${crypto.randomUUID()}`;

/** Tells this boot of this machine from another machine (or a reboot), where a pid means nothing. */
export function bootId(): string {
  try {
    return fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return `${os.hostname()}@${Math.round(Date.now() / 1000 - os.uptime())}`;
  }
}

/** Whether a URL names this machine's loopback (127.0.0.0/8, ::1, localhost). */
export function isLoopbackUrl(url: string): boolean {
  let hostname: string;
  try {
    hostname = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return false;
  }
  return (
    hostname === 'localhost' ||
    hostname.endsWith('.localhost') ||
    hostname === '::1' ||
    /^127\./.test(hostname) ||
    /^::ffff:127\./.test(hostname)
  );
}

/**
 * The URL a host's requests can be forwarded to from a process on the machine with boot id `thisBoot`: none when it
 * has not listened yet, or when it is on another machine and records a loopback URL (BROWSER_INTERNAL_URL's default
 * when HOST binds every address), which would reach this machine instead.
 */
export function forwardableUrl(row: Pick<HostRow, 'internalUrl' | 'bootId'>, thisBoot: string): string | undefined {
  if (!row.internalUrl) return undefined;
  if (row.bootId !== thisBoot && isLoopbackUrl(row.internalUrl)) return undefined;
  return row.internalUrl;
}

/** BROWSER_INTERNAL_URL's default: the API listener on loopback when it binds every address, else HOST itself. */
export function defaultInternalUrl(host: string, port: number): string {
  if (host === '0.0.0.0' || host === '::' || host === '[::]') return `http://127.0.0.1:${port}`;
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
}

export interface RegistryOptions {
  db: Db;
  hostId: string;
  internalUrl: string;
  maxSessions: number;
  liveSessions: () => number;
  onError: (err: unknown) => void;
}

/** This process's row in the registry: claimed at start, kept fresh, retired at a clean stop. */
export class HostRegistry {
  #options: RegistryOptions;
  #timer: NodeJS.Timeout | undefined;
  #boot = bootId();
  /** This process object's token in its row: tells it from another process with the same boot id and pid. */
  #instance = crypto.randomUUID();
  internalUrl: string;

  constructor(options: RegistryOptions) {
    this.#options = options;
    this.internalUrl = options.internalUrl;
  }

  #row() {
    const { hostId, maxSessions, liveSessions } = this.#options;
    return {
      hostId,
      internalUrl: this.internalUrl,
      pid: process.pid,
      bootId: this.#boot,
      instance: this.#instance,
      maxSessions,
      liveSessions: liveSessions(),
      freeMemoryMb: Math.round(os.freemem() / 2 ** 20),
    };
  }

  /**
   * Claims the host id: refused while another live process holds it (a fresh heartbeat from another machine, or
   * from a running process of this one). A holder that died (kill -9, then a restart) is taken over.
   */
  async claim(): Promise<void> {
    const { db, hostId } = this.#options;
    await hostsRepository.claim(db, this.#row(), (held) => {
      // This very process object claiming again. Same machine and pid alone do not say it: containers share a
      // boot id and may each be pid 1.
      if (held.instance === this.#instance) return;
      const sameMachine = held.bootId === this.#boot;
      const sameProcess = sameMachine && held.pid === process.pid;
      // A dead holder of this machine (kill -9, then a restart) is taken over.
      if (sameMachine && !sameProcess && !processAlive(held.pid)) return;
      throw new HostIdInUseError(
        `Browser host id ${hostId} is in use by another running process (pid ${held.pid}${sameMachine ? '' : ' on another machine'}): give each process its own DATA_DIR or BROWSER_HOST_ID`,
      );
    });
    clearInterval(this.#timer);
    this.#timer = setInterval(() => void this.beat(), HEARTBEAT_MS);
    this.#timer.unref();
  }

  async beat(): Promise<void> {
    await hostsRepository.beat(this.#options.db, this.#row()).catch(this.#options.onError);
  }

  async release(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await hostsRepository.retire(this.#options.db, this.#options.hostId, this.#instance).catch(this.#options.onError);
  }
}
