/**
 * The only writer of `browser_profiles`. The one-writer rule lives here: the lease is taken by one conditional UPDATE
 * (free or expired → this session, token + 1), renewed and freed only by its token, and a save switches the profile
 * to its new state file only while its token still holds the lease.
 */
import { and, desc, eq, isNull, lt, lte, or, sql } from 'drizzle-orm';
import type { Db, Tx } from '../../../db/client.ts';
import { browserProfiles } from '../../../db/schema/index.ts';
import type { SessionScope } from '../sessions/sessions.repository.ts';

export type ProfileRow = typeof browserProfiles.$inferSelect;
type Conn = Db | Tx;

const inScope = (scope: SessionScope) =>
  and(
    eq(browserProfiles.userId, scope.userId),
    scope.clientRef === undefined ? undefined : eq(browserProfiles.clientRef, scope.clientRef),
  );

/** The lease is free: never taken, freed, or expired (its holder stopped renewing it). */
const leaseFree = (now: Date) => or(isNull(browserProfiles.leaseSessionId), lte(browserProfiles.leaseExpiresAt, now));

export const profilesRepository = {
  async insert(
    db: Conn,
    values: { userId: string; clientRef: string | null; name: string; metadata: Record<string, string> },
  ): Promise<ProfileRow> {
    const [row] = await db.insert(browserProfiles).values(values).returning();
    return row!;
  },

  async find(db: Conn, scope: SessionScope, id: string): Promise<ProfileRow | undefined> {
    const [row] = await db
      .select()
      .from(browserProfiles)
      .where(and(eq(browserProfiles.id, id), inScope(scope)))
      .limit(1);
    return row;
  },

  async list(db: Conn, scope: SessionScope, filters: { before?: string; limit: number }): Promise<ProfileRow[]> {
    return db
      .select()
      .from(browserProfiles)
      .where(and(inScope(scope), filters.before ? lt(browserProfiles.id, filters.before) : undefined))
      .orderBy(desc(browserProfiles.id))
      .limit(filters.limit + 1);
  },

  /** Deletes a profile no writer holds; undefined when it is missing or held. */
  async removeUnheld(db: Conn, scope: SessionScope, id: string, now: Date): Promise<ProfileRow | undefined> {
    const [row] = await db
      .delete(browserProfiles)
      .where(and(eq(browserProfiles.id, id), inScope(scope), leaseFree(now)))
      .returning();
    return row;
  },

  /** Deletes a profile whatever its lease (one created for a save that failed). */
  async removeById(db: Conn, id: string): Promise<void> {
    await db.delete(browserProfiles).where(eq(browserProfiles.id, id));
  },

  /** Takes the writer lease for `sessionId` when it is free or expired: the new fencing token, or undefined (held). */
  async acquire(db: Conn, id: string, sessionId: string, now: Date, ttlMs: number): Promise<number | undefined> {
    const [row] = await db
      .update(browserProfiles)
      .set({
        leaseSessionId: sessionId,
        leaseToken: sql`${browserProfiles.leaseToken} + 1`,
        leaseExpiresAt: new Date(now.getTime() + ttlMs),
      })
      .where(and(eq(browserProfiles.id, id), leaseFree(now)))
      .returning({ token: browserProfiles.leaseToken });
    return row?.token;
  },

  /** Extends a lease its token still holds; false when it was taken over (or freed). */
  async renew(db: Conn, id: string, token: number, now: Date, ttlMs: number): Promise<boolean> {
    const rows = await db
      .update(browserProfiles)
      .set({ leaseExpiresAt: new Date(now.getTime() + ttlMs) })
      .where(and(eq(browserProfiles.id, id), eq(browserProfiles.leaseToken, token), sql`lease_session_id IS NOT NULL`))
      .returning({ id: browserProfiles.id });
    return rows.length > 0;
  },

  /** Frees whatever lease a session holds (its end); a lease taken over since is another session's and stays. */
  async freeOf(db: Conn, sessionId: string): Promise<void> {
    await db
      .update(browserProfiles)
      .set({ leaseSessionId: null, leaseExpiresAt: null })
      .where(eq(browserProfiles.leaseSessionId, sessionId));
  },

  /** Frees the lease of one acquisition (a one-shot save's). */
  async free(db: Conn, id: string, token: number): Promise<void> {
    await db
      .update(browserProfiles)
      .set({ leaseSessionId: null, leaseExpiresAt: null })
      .where(and(eq(browserProfiles.id, id), eq(browserProfiles.leaseToken, token)));
  },

  /**
   * Points the profile at a newly written state file, only while `token` holds the lease: the row before the switch
   * (for its old file), or undefined when the token is stale (the new file is then nobody's).
   */
  async recordSave(
    db: Db,
    id: string,
    token: number,
    save: { stateFile: string; sizeBytes: number; sessionId: string; now: Date },
  ): Promise<{ previous: string | null; row: ProfileRow } | undefined> {
    return db.transaction(async (tx) => {
      const [before] = await tx
        .select({ stateFile: browserProfiles.stateFile })
        .from(browserProfiles)
        .where(and(eq(browserProfiles.id, id), eq(browserProfiles.leaseToken, token)))
        .for('update');
      if (!before) return undefined;
      const [row] = await tx
        .update(browserProfiles)
        .set({
          stateFile: save.stateFile,
          sizeBytes: save.sizeBytes,
          savedAt: save.now,
          savedBySession: save.sessionId,
          version: sql`${browserProfiles.version} + 1`,
          updatedAt: save.now,
        })
        .where(
          and(eq(browserProfiles.id, id), eq(browserProfiles.leaseToken, token), sql`lease_session_id IS NOT NULL`),
        )
        .returning();
      return row ? { previous: before.stateFile, row } : undefined;
    });
  },
};
