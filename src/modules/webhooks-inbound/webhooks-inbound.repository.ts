import type { Db, Tx } from '../../db/client.ts';
import { inboundWebhookEvents } from '../../db/schema/index.ts';

export function inboundWebhookRepository(db: Db | Tx) {
  return {
    /**
     * Stores a verified event; false when its id was stored before (a re-delivery). A concurrent
     * delivery of the same id waits here until the first one's transaction ends.
     */
    async record(values: typeof inboundWebhookEvents.$inferInsert): Promise<boolean> {
      const rows = await db
        .insert(inboundWebhookEvents)
        .values(values)
        .onConflictDoNothing()
        .returning({ id: inboundWebhookEvents.id });
      return rows.length > 0;
    },
  };
}
