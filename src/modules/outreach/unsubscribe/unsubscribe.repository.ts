import type { Db, Tx } from '../../../db/client.ts';
import { outreachUnsubscribes } from '../../../db/schema/index.ts';
import type { MessageRow } from '../messages/messages.repository.ts';

/** The unsubscribes from outreach mail's links (docs/outreach.md "Outreach", Unsubscribe and opens). */
export function unsubscribesRepository(db: Db | Tx) {
  return {
    /** Records the unsubscribe of this mail; false when it was recorded before (a second click). */
    async recordOnce(message: MessageRow, now: Date): Promise<boolean> {
      const [recorded] = await db
        .insert(outreachUnsubscribes)
        .values({
          userId: message.userId,
          messageId: message.id,
          campaignId: message.campaignId,
          email: message.toEmail,
          createdAt: now,
        })
        .onConflictDoNothing()
        .returning({ id: outreachUnsubscribes.id });
      return !!recorded;
    },
  };
}
