/**
 * The reaper: ends sessions of this host at their deadline, when idle, or when their Chromium died, puts those with
 * autoSleepMs to sleep when idle that long, and now and then
 * sweeps the rows and browsers of this host that disagree.
 */
import type { Db } from '../../../db/client.ts';
import type { BrowserHost } from './host.ts';
import { dueEnding, dueSleep } from './lifecycle.ts';
import { sessionsRepository as repo, type SessionRow } from './sessions.repository.ts';
import type { SessionStatus } from './sessions.schemas.ts';

/** Reaper rounds between looks for rows of this host that say LIVE without a browser here. */
const LOST_SWEEP_EVERY = 30;

export interface ReaperOptions {
  db: Db;
  hostId: string;
  host: BrowserHost;
  now: () => number;
  end: (id: string, status: SessionStatus, reason: string, charge?: boolean) => Promise<SessionRow | undefined>;
  /** A row this host recorded as running whose browser it no longer holds. */
  lostHere: (row: SessionRow) => boolean;
  /** Sessions being ended now (their browsers are closed by their end). */
  ending: ReadonlyMap<string, unknown>;
  /** Puts a session to sleep in the background (autoSleepMs); a second call while it falls asleep does nothing. */
  sleep: (id: string) => void;
}

/** One reaper round per call. */
export function createReaper({
  db,
  hostId,
  host,
  now,
  end,
  lostHere,
  ending,
  sleep,
}: ReaperOptions): () => Promise<void> {
  let sweeps = 0;
  return async function reap(): Promise<void> {
    const at = now();
    for (const live of host.sessions()) {
      const due = dueEnding(live, at);
      if (due) await end(live.id, due.status, due.reason).catch(() => {});
      else if (dueSleep(live, at)) sleep(live.id);
    }
    // Now and then, rows of this host that say LIVE without a browser here (an end whose write failed) end too.
    if (++sweeps % LOST_SWEEP_EVERY === 0) {
      const rows = await repo.liveOnHost(db, hostId).catch(() => []);
      for (const row of rows.filter(lostHere))
        await end(row.id, 'FAILED', 'its browser is gone from this host', false).catch(() => {});
      // And browsers here whose rows another process ended (its sweep took this host for lost while its heartbeat
      // lagged, a database outage say): they stop, instead of running unmetered until their deadline.
      const ids = host.sessions().map((s) => s.id);
      for (const id of await repo.endedAmong(db, ids).catch(() => [])) if (!ending.has(id)) await host.close(id);
    }
  };
}
