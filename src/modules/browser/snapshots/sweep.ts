/**
 * The daily sweep of snapshots past BROWSER_SNAPSHOT_RETENTION_DAYS (the maintenance job, any process): each goes
 * with its sleeping session, which ends EXPIRED and tells the webhooks. A session waking meanwhile is left alone
 * (it is no longer sleeping); its snapshot goes when it is awake.
 */
import { and, eq } from 'drizzle-orm';
import { browserSessions, browserSnapshots } from '../../../db/schema/index.ts';
import type { AppDeps } from '../../../deps.ts';
import { emitEvent } from '../../../shared/events.ts';
import { snapshotsRepository as repo } from './snapshots.repository.ts';

export const SNAPSHOT_EXPIRED = 'its snapshot expired (BROWSER_SNAPSHOT_RETENTION_DAYS)';

/** Ends the sleeping sessions whose snapshot expired; answers how many. */
export async function sweepSnapshots(deps: Pick<AppDeps, 'db' | 'clock'>): Promise<number> {
  const { db, clock } = deps;
  let swept = 0;
  for (;;) {
    const ids = await repo.expired(db, clock.now());
    for (const id of ids) {
      await db.transaction(async (tx) => {
        const at = clock.now();
        const [row] = await tx
          .update(browserSessions)
          .set({ status: 'EXPIRED', endReason: SNAPSHOT_EXPIRED, endedAt: at, updatedAt: at, snapshotId: null })
          .where(and(eq(browserSessions.id, id), eq(browserSessions.status, 'SLEEPING')))
          .returning();
        await tx.delete(browserSnapshots).where(eq(browserSnapshots.sessionId, id));
        if (!row) return;
        swept++;
        await emitEvent(tx, row.userId, 'browser.session.ended', {
          sessionId: id,
          status: 'EXPIRED',
          endReason: SNAPSHOT_EXPIRED,
          clientRef: row.clientRef,
          metadata: row.metadata,
          minutes: row.billedMinutes,
          createdAt: row.createdAt.toISOString(),
          endedAt: at.toISOString(),
        });
      });
    }
    if (ids.length < 100) return swept;
  }
}
