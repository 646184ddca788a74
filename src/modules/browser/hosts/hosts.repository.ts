/** The browser_hosts table: the only writer of the registry of browser hosts (see registry.ts). */
import { and, desc, eq, gt, lt, ne, sql } from 'drizzle-orm';
import type { Db } from '../../../db/client.ts';
import { browserHosts } from '../../../db/schema/index.ts';

/** A host silent for this long is gone: its sessions are failed (a heartbeat period plus a sweep stay under 30 s). */
export const HOST_STALE_MS = 20_000;
/** Rows of hosts silent for this long are deleted (their sessions ended long ago). */
const FORGET_AFTER = '1 day';

export type HostRow = typeof browserHosts.$inferSelect;

const fresh = () => gt(browserHosts.heartbeatAt, sql`now() - ${`${HOST_STALE_MS} milliseconds`}::interval`);
/** A host that has not listened yet (its URL is known once it does, unless BROWSER_INTERNAL_URL says it) is no target. */
const reachable = () => ne(browserHosts.internalUrl, '');

export const hostsRepository = {
  find: async (db: Db, hostId: string): Promise<HostRow | undefined> =>
    (await db.select().from(browserHosts).where(eq(browserHosts.hostId, hostId)).limit(1))[0],

  /** The host when its heartbeat is fresh. */
  findLive: async (db: Db, hostId: string): Promise<HostRow | undefined> =>
    (
      await db
        .select()
        .from(browserHosts)
        .where(and(eq(browserHosts.hostId, hostId), fresh()))
        .limit(1)
    )[0],

  /** A live host other than `besides` with room for another session, the roomier the likelier. */
  withRoom: async (db: Db, besides: string): Promise<HostRow | undefined> =>
    (
      await db
        .select()
        .from(browserHosts)
        .where(
          and(
            fresh(),
            reachable(),
            ne(browserHosts.hostId, besides),
            gt(browserHosts.maxSessions, browserHosts.liveSessions),
          ),
        )
        // Drawn with odds by room, not simply the emptiest: the counts are up to a heartbeat old, and a burst of
        // creates would all go to one host until its next heartbeat.
        .orderBy(desc(sql`(${browserHosts.maxSessions} - ${browserHosts.liveSessions}) * random()`))
        .limit(1)
    )[0],

  /**
   * Claims the host id in one transaction under a lock on the id, so two processes starting at once cannot both
   * see it free: `refuse` is asked about the live holder (if any) and throws to keep it.
   */
  async claim(db: Db, row: Omit<HostRow, 'startedAt' | 'heartbeatAt'>, refuse: (held: HostRow) => void): Promise<void> {
    await db.transaction(async (tx) => {
      await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`quarry-browser-host:${row.hostId}`}, 0))`);
      const [held] = await tx
        .select()
        .from(browserHosts)
        .where(and(eq(browserHosts.hostId, row.hostId), fresh()))
        .limit(1);
      if (held) refuse(held);
      const values = { ...row, startedAt: sql`now()`, heartbeatAt: sql`now()` };
      await tx.insert(browserHosts).values(values).onConflictDoUpdate({ target: browserHosts.hostId, set: values });
    });
  },

  /** Upserted, so a host whose row was forgotten (a long database outage) comes back. */
  async beat(db: Db, row: Omit<HostRow, 'startedAt' | 'heartbeatAt'>): Promise<void> {
    await db
      .insert(browserHosts)
      .values({ ...row, startedAt: sql`now()`, heartbeatAt: sql`now()` })
      .onConflictDoUpdate({
        target: browserHosts.hostId,
        set: {
          internalUrl: row.internalUrl,
          liveSessions: row.liveSessions,
          freeMemoryMb: row.freeMemoryMb,
          heartbeatAt: sql`now()`,
        },
      });
  },

  /**
   * Leaves the registry at a clean stop: the row stays, stale at once, so no request is forwarded to it any more and
   * a session whose release failed is still failed by the sweep (the row goes with forgetOld).
   */
  async retire(db: Db, hostId: string, instance: string): Promise<void> {
    await db
      .update(browserHosts)
      .set({ heartbeatAt: sql`now() - ${`${HOST_STALE_MS + 1000} milliseconds`}::interval` })
      .where(and(eq(browserHosts.hostId, hostId), eq(browserHosts.instance, instance)));
  },

  /** Every host with a fresh heartbeat (GET /api/browser/usage). */
  live: (db: Db): Promise<HostRow[]> => db.select().from(browserHosts).where(fresh()).orderBy(browserHosts.hostId),

  async forgetOld(db: Db): Promise<void> {
    await db.delete(browserHosts).where(lt(browserHosts.heartbeatAt, sql`now() - ${FORGET_AFTER}::interval`));
  },
};
