import { and, eq } from 'drizzle-orm';
import type { Db, Tx } from '../../../db/client.ts';
import { outreachMessages } from '../../../db/schema/index.ts';
import type { AppDeps } from '../../../deps.ts';
import { moveLeadsForOutreach } from '../../leads/index.ts';
import { suppress } from '../../suppressions/index.ts';
import { stopEnrollmentsOf } from '../campaigns/enrollments.repository.ts';
import { messagesRepository } from '../messages/messages.repository.ts';
import { tokenMessageId } from '../sequencer/sequencer.mail.ts';
import { unsubscribesRepository } from './unsubscribe.repository.ts';

type Deps = Pick<AppDeps, 'db' | 'clock' | 'config'>;

/**
 * What an unsubscribe does, wherever it came from (a mail's link, a platform's event), in the caller's transaction:
 * the address is suppressed (source `unsubscribe`), its active enrollments stop (UNSUBSCRIBED), and its leads become
 * UNSUBSCRIBED.
 */
export async function unsubscribeAddress(
  tx: Db | Tx,
  userId: string,
  email: string,
  leadId: string | null,
  through: string,
  now: Date,
): Promise<void> {
  await suppress(
    tx,
    userId,
    [{ type: 'email', value: email, reason: `unsubscribed through ${through}`, source: 'unsubscribe' }],
    now,
  );
  const stopped = await stopEnrollmentsOf(tx, userId, [email], 'UNSUBSCRIBED', now);
  await moveLeadsForOutreach(tx, userId, [...new Set([...stopped, ...(leadId ? [leadId] : [])])], 'UNSUBSCRIBED', now);
}

/**
 * The public links of outreach mail (docs/outreach.md "Outreach", Unsubscribe and opens). A token names the sent mail and is
 * signed, so it cannot be guessed; a token that is not ours is a 404 like any unknown page.
 */
export function createUnsubscribeService(deps: Deps) {
  async function messageOf(purpose: 'unsubscribe' | 'open', token: string) {
    const id = tokenMessageId(deps.config, purpose, token);
    if (!id) return undefined;
    const [row] = await deps.db
      .select()
      .from(outreachMessages)
      .where(and(eq(outreachMessages.id, id), eq(outreachMessages.direction, 'outbound')));
    return row;
  }

  return {
    /** The address a valid unsubscribe token stands for (the confirmation page), or undefined. */
    async addressOf(token: string): Promise<string | undefined> {
      return (await messageOf('unsubscribe', token))?.toEmail;
    },

    /**
     * Unsubscribes the recipient of the mail: the address is suppressed (source `unsubscribe`), every active
     * enrollment of it stops (UNSUBSCRIBED) and its leads become UNSUBSCRIBED. Once per mail; a second click
     * changes nothing. Answers the address, or undefined for a token that is not ours.
     */
    async unsubscribe(token: string): Promise<string | undefined> {
      const message = await messageOf('unsubscribe', token);
      if (!message) return undefined;
      const now = deps.clock.now();
      await deps.db.transaction(async (tx) => {
        if (!(await unsubscribesRepository(tx).recordOnce(message, now))) return;
        await unsubscribeAddress(tx, message.userId, message.toEmail, message.leadId, 'an outreach mail', now);
      });
      return message.toEmail;
    },

    /** Counts an open of the mail (the first one sets `openedAt`); false for a token that is not ours. */
    async opened(token: string): Promise<boolean> {
      const id = tokenMessageId(deps.config, 'open', token);
      if (!id) return false;
      return messagesRepository(deps.db).countOpen(id, deps.clock.now());
    },
  };
}
