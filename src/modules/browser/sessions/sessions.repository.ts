import { and, count, desc, eq, gte, inArray, lt, ne, notExists, notInArray, sql } from 'drizzle-orm';
import type { Db, Tx } from '../../../db/client.ts';
import { browserHosts, browserSessions, browserSnapshots } from '../../../db/schema/index.ts';
import type { SessionStatus } from './sessions.schemas.ts';

export type SessionRow = typeof browserSessions.$inferSelect;
type NewSession = typeof browserSessions.$inferInsert;
type Conn = Db | Tx;

export const LIVE_STATUSES: SessionStatus[] = ['STARTING', 'LIVE'];
/** Sessions that have not ended: live ones and sleeping ones (no process; they count against no live limit). */
export const OPEN_STATUSES: SessionStatus[] = [...LIVE_STATUSES, 'SLEEPING'];

/** What a request may see: the user's sessions; with X-Client-Ref only those recorded with that ref. */
export interface SessionScope {
  userId: string;
  clientRef?: string;
}

const inScope = (scope: SessionScope) =>
  and(
    eq(browserSessions.userId, scope.userId),
    scope.clientRef === undefined ? undefined : eq(browserSessions.clientRef, scope.clientRef),
  );

export interface ListFilters {
  status?: SessionStatus;
  clientRef?: string;
  metadata?: [string, string];
  before?: string;
  limit: number;
}

const metadataPair = ([key, value]: [string, string]) => JSON.stringify({ [key]: value });

export const sessionsRepository = {
  /** Serializes admission per user: the live counts read next stay true until the transaction ends. */
  async lockUser(tx: Tx, userId: string): Promise<void> {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`browser:${userId}`}, 0))`);
  },

  async countLive(db: Conn, userId: string, clientRef?: string): Promise<number> {
    const [row] = await db
      .select({ n: count() })
      .from(browserSessions)
      .where(
        and(
          eq(browserSessions.userId, userId),
          inArray(browserSessions.status, LIVE_STATUSES),
          clientRef === undefined ? undefined : eq(browserSessions.clientRef, clientRef),
        ),
      );
    return row?.n ?? 0;
  },

  async insert(db: Conn, values: NewSession): Promise<SessionRow> {
    const [row] = await db.insert(browserSessions).values(values).returning();
    return row!;
  },

  async find(db: Conn, scope: SessionScope, id: string): Promise<SessionRow | undefined> {
    const [row] = await db
      .select()
      .from(browserSessions)
      .where(and(eq(browserSessions.id, id), inScope(scope)))
      .limit(1);
    return row;
  },

  async list(db: Conn, scope: SessionScope, filters: ListFilters): Promise<SessionRow[]> {
    return db
      .select()
      .from(browserSessions)
      .where(
        and(
          inScope(scope),
          filters.status ? eq(browserSessions.status, filters.status) : undefined,
          filters.clientRef !== undefined ? eq(browserSessions.clientRef, filters.clientRef) : undefined,
          filters.metadata ? sql`${browserSessions.metadata} @> ${metadataPair(filters.metadata)}::jsonb` : undefined,
          filters.before ? lt(browserSessions.id, filters.before) : undefined,
        ),
      )
      .orderBy(desc(browserSessions.id))
      .limit(filters.limit + 1);
  },

  /** The live sessions a scope sees, with the host holding each. */
  async listLive(db: Conn, scope: SessionScope): Promise<Array<{ id: string; hostId: string }>> {
    return db
      .select({ id: browserSessions.id, hostId: browserSessions.hostId })
      .from(browserSessions)
      .where(and(inScope(scope), inArray(browserSessions.status, LIVE_STATUSES)));
  },

  async update(
    db: Conn,
    id: string,
    values: Partial<Pick<NewSession, 'status' | 'expiresAt' | 'timeoutMs' | 'keepAlive' | 'autoSleepMs' | 'metadata'>>,
    now: Date,
  ): Promise<SessionRow | undefined> {
    // Only a session that has not ended changes: an end that won a race is never undone.
    const [row] = await db
      .update(browserSessions)
      .set({ ...values, updatedAt: now })
      .where(and(eq(browserSessions.id, id), inArray(browserSessions.status, OPEN_STATUSES)))
      .returning();
    return row;
  },

  /** STARTING → LIVE once its Chromium runs; undefined when the session ended meanwhile (it stays ended). */
  async markLive(db: Conn, id: string, now: Date): Promise<SessionRow | undefined> {
    const [row] = await db
      .update(browserSessions)
      .set({ status: 'LIVE', updatedAt: now })
      .where(and(eq(browserSessions.id, id), eq(browserSessions.status, 'STARTING')))
      .returning();
    return row;
  },

  /** Ends a live or sleeping session once (a snapshot goes with it): the row that ended, or undefined. */
  async end(tx: Tx, id: string, status: SessionStatus, reason: string, now: Date): Promise<SessionRow | undefined> {
    const [row] = await tx
      .update(browserSessions)
      .set({ status, endReason: reason, endedAt: now, updatedAt: now, snapshotId: null })
      .where(and(eq(browserSessions.id, id), inArray(browserSessions.status, OPEN_STATUSES)))
      .returning();
    if (row) await tx.delete(browserSnapshots).where(eq(browserSnapshots.sessionId, id));
    return row;
  },

  /** Which host holds a session, and whether it is live (any user's: the host it is forwarded to judges tenancy). */
  async holderOf(db: Conn, id: string): Promise<{ hostId: string; status: string } | undefined> {
    const [row] = await db
      .select({ hostId: browserSessions.hostId, status: browserSessions.status })
      .from(browserSessions)
      .where(eq(browserSessions.id, id))
      .limit(1);
    return row;
  },

  /** Live rows of other hosts whose registry heartbeat is older than `staleMs` (hosts that died). */
  async liveOnLostHosts(db: Conn, selfHostId: string, staleMs: number): Promise<SessionRow[]> {
    // A host is lost when no fresh heartbeat of it is recorded: silent for `staleMs`, or with no row at all (a host
    // of an older version, or one forgotten after a day of silence); every host records itself before its sessions.
    const heard = db
      .select({ one: sql`1` })
      .from(browserHosts)
      .where(
        and(
          eq(browserHosts.hostId, browserSessions.hostId),
          gte(browserHosts.heartbeatAt, sql`now() - ${`${staleMs} milliseconds`}::interval`),
        ),
      );
    return db
      .select()
      .from(browserSessions)
      .where(
        and(inArray(browserSessions.status, LIVE_STATUSES), ne(browserSessions.hostId, selfHostId), notExists(heard)),
      );
  },

  /** Every live row, whatever its host (the embedded database: one process, so after its restart none runs). */
  async liveAll(db: Conn): Promise<SessionRow[]> {
    return db.select().from(browserSessions).where(inArray(browserSessions.status, LIVE_STATUSES));
  },

  /** Which of `ids` have ended (by this host, or by another process's sweep while this host's heartbeat lagged). */
  async endedAmong(db: Conn, ids: string[]): Promise<string[]> {
    if (!ids.length) return [];
    const rows = await db
      .select({ id: browserSessions.id })
      .from(browserSessions)
      .where(and(inArray(browserSessions.id, ids), notInArray(browserSessions.status, LIVE_STATUSES)));
    return rows.map((r) => r.id);
  },

  /** Live rows a host holds (after a restart of that host: none of them runs any more). */
  async liveOnHost(db: Conn, hostId: string): Promise<SessionRow[]> {
    return db
      .select()
      .from(browserSessions)
      .where(and(eq(browserSessions.hostId, hostId), inArray(browserSessions.status, LIVE_STATUSES)));
  },
};
