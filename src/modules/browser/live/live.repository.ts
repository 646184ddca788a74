import { and, eq, isNull } from 'drizzle-orm';
import type { Db, Tx } from '../../../db/client.ts';
import { browserLiveViews } from '../../../db/schema/index.ts';

export type LiveViewRow = typeof browserLiveViews.$inferSelect;
type Conn = Db | Tx;

/** The one writer of browser_live_views. */
export const liveViewsRepository = {
  async insert(db: Conn, values: typeof browserLiveViews.$inferInsert): Promise<LiveViewRow> {
    const [row] = await db.insert(browserLiveViews).values(values).returning();
    return row!;
  },

  async find(db: Conn, id: string): Promise<LiveViewRow | undefined> {
    const [row] = await db.select().from(browserLiveViews).where(eq(browserLiveViews.id, id)).limit(1);
    return row;
  },

  /** Revokes a view of `sessionId` (once: a revoked one stays as it was); undefined when it names none. */
  async revoke(db: Conn, sessionId: string, id: string, at: Date): Promise<LiveViewRow | undefined> {
    const where = and(eq(browserLiveViews.id, id), eq(browserLiveViews.sessionId, sessionId));
    const [revoked] = await db
      .update(browserLiveViews)
      .set({ revokedAt: at })
      .where(and(where, isNull(browserLiveViews.revokedAt)))
      .returning();
    if (revoked) return revoked;
    const [row] = await db.select().from(browserLiveViews).where(where).limit(1);
    return row;
  },
};
