import { eq } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { newestFirstPage } from '../../db/keyset.ts';
import { consentEvents, users } from '../../db/schema/index.ts';

export type ConsentEventRow = typeof consentEvents.$inferSelect;

const consentColumns = {
  termsAcceptedAt: users.termsAcceptedAt,
  privacyAcceptedAt: users.privacyAcceptedAt,
  marketingConsent: users.marketingConsent,
  consentUpdatedAt: users.consentUpdatedAt,
};

export function consentRepository(db: Db) {
  return {
    async current(userId: string) {
      const [row] = await db.select(consentColumns).from(users).where(eq(users.id, userId)).limit(1);
      return row;
    },
    /** Sets marketing consent and appends the audit event, in one transaction. */
    async setMarketing(userId: string, granted: boolean, ipAddress: string | null, at: Date) {
      return db.transaction(async (tx) => {
        const [row] = await tx
          .update(users)
          .set({ marketingConsent: granted, consentUpdatedAt: at, updatedAt: at })
          .where(eq(users.id, userId))
          .returning(consentColumns);
        if (!row) return undefined;
        await tx.insert(consentEvents).values({ userId, consentType: 'marketing', granted, ipAddress, changedAt: at });
        return row;
      });
    },
    /** Newest first (ids are UUIDv7: insertion order), `limit + 1` rows from after `cursor`. */
    history(userId: string, limit: number, cursor?: string): Promise<ConsentEventRow[]> {
      return newestFirstPage(db, consentEvents, userId, [], limit, cursor);
    },
  };
}
