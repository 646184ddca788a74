import { and, desc, eq, getTableColumns, lt, lte, sql } from 'drizzle-orm';
import type { Db, Tx } from '../../../db/client.ts';
import { browserSessions, browserSnapshots } from '../../../db/schema/index.ts';
import type { SessionRow, SessionScope } from '../sessions/sessions.repository.ts';

export type SnapshotRow = typeof browserSnapshots.$inferSelect;
type NewSnapshot = typeof browserSnapshots.$inferInsert;
type Conn = Db | Tx;

/** A snapshot without its state (lists and views). */
export type SnapshotInfo = Omit<SnapshotRow, 'state'>;

const { state: _state, ...infoColumns } = getTableColumns(browserSnapshots);

const inScope = (scope: SessionScope) =>
  and(
    eq(browserSnapshots.userId, scope.userId),
    scope.clientRef === undefined ? undefined : eq(browserSnapshots.clientRef, scope.clientRef),
  );

export const snapshotsRepository = {
  async insert(db: Conn, values: NewSnapshot): Promise<SnapshotInfo> {
    const [row] = await db.insert(browserSnapshots).values(values).returning(infoColumns);
    return row!;
  },

  async find(db: Conn, scope: SessionScope, id: string): Promise<SnapshotInfo | undefined> {
    const [row] = await db
      .select(infoColumns)
      .from(browserSnapshots)
      .where(and(eq(browserSnapshots.id, id), inScope(scope)))
      .limit(1);
    return row;
  },

  async list(db: Conn, scope: SessionScope, before: string | undefined, limit: number): Promise<SnapshotInfo[]> {
    return db
      .select(infoColumns)
      .from(browserSnapshots)
      .where(and(inScope(scope), before ? lt(browserSnapshots.id, before) : undefined))
      .orderBy(desc(browserSnapshots.id))
      .limit(limit + 1);
  },

  /** The state of a session's snapshot (any user's: the caller has checked the session). */
  async stateOf(
    db: Conn,
    sessionId: string,
  ): Promise<{ id: string; state: Uint8Array; remainingMs: number } | undefined> {
    const [row] = await db
      .select({ id: browserSnapshots.id, state: browserSnapshots.state, remainingMs: browserSnapshots.remainingMs })
      .from(browserSnapshots)
      .where(eq(browserSnapshots.sessionId, sessionId))
      .limit(1);
    return row;
  },

  async remove(db: Conn, sessionId: string): Promise<void> {
    await db.delete(browserSnapshots).where(eq(browserSnapshots.sessionId, sessionId));
  },

  /** Sessions whose snapshot is past its retention. */
  async expired(db: Conn, now: Date, limit = 100): Promise<string[]> {
    const rows = await db
      .select({ sessionId: browserSnapshots.sessionId })
      .from(browserSnapshots)
      .where(lte(browserSnapshots.expiresAt, now))
      .limit(limit);
    return rows.map((r) => r.sessionId);
  },

  /** LIVE → SLEEPING, charging `minutes` to its billed ones; undefined when it is no longer live. */
  async fallAsleep(
    tx: Tx,
    id: string,
    values: { snapshotId: string; minutes: number; expiresAt: Date },
    now: Date,
  ): Promise<SessionRow | undefined> {
    const [row] = await tx
      .update(browserSessions)
      .set({
        status: 'SLEEPING',
        snapshotId: values.snapshotId,
        liveSince: null,
        billedMinutes: sql`${browserSessions.billedMinutes} + ${values.minutes}`,
        expiresAt: values.expiresAt,
        updatedAt: now,
      })
      .where(and(eq(browserSessions.id, id), eq(browserSessions.status, 'LIVE')))
      .returning();
    return row;
  },

  /** SLEEPING → STARTING on this host (a wake); undefined when another caller woke or ended it first. */
  async beginWake(
    tx: Tx,
    id: string,
    values: { hostId: string; hostAddress: string | null; expiresAt: Date },
    now: Date,
  ): Promise<SessionRow | undefined> {
    const [row] = await tx
      .update(browserSessions)
      .set({ status: 'STARTING', ...values, liveSince: now, updatedAt: now })
      .where(and(eq(browserSessions.id, id), eq(browserSessions.status, 'SLEEPING')))
      .returning();
    return row;
  },

  /** STARTING → LIVE once its state is back; its snapshot goes in the same transaction. */
  async finishWake(tx: Tx, id: string, now: Date): Promise<SessionRow | undefined> {
    const [row] = await tx
      .update(browserSessions)
      .set({ status: 'LIVE', snapshotId: null, updatedAt: now })
      .where(and(eq(browserSessions.id, id), eq(browserSessions.status, 'STARTING')))
      .returning();
    if (row) await tx.delete(browserSnapshots).where(eq(browserSnapshots.sessionId, id));
    return row;
  },

  /** A wake that failed: STARTING → SLEEPING again, its snapshot untouched. */
  async abortWake(db: Conn, id: string, expiresAt: Date, now: Date): Promise<void> {
    await db
      .update(browserSessions)
      .set({ status: 'SLEEPING', liveSince: null, expiresAt, updatedAt: now })
      .where(and(eq(browserSessions.id, id), eq(browserSessions.status, 'STARTING')));
  },
};
