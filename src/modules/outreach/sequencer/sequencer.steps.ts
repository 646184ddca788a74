import type { Transporter } from 'nodemailer';
import type { Config } from '../../../config.ts';
import type { Tx } from '../../../db/client.ts';
import type { Credits } from '../../../shared/credits.ts';
import { messagesRepository } from '../messages/messages.repository.ts';
import {
  classifySendError,
  linkToken,
  mailOptions,
  type OutgoingMail,
  publicUrlOf,
  type SendFailure,
} from './sequencer.mail.ts';

/**
 * The cycle every outreach mail goes through (docs/outreach.md "Exactly once"), shared by the sequencer and
 * one-off mails (POST /api/outreach/emails): record and charge (`recordPaid`), hand to SMTP (`deliverMail`), then
 * write the outcome (`writeOutcomes`, sequencer.outcomes.ts).
 */

type MessagesRepository = ReturnType<typeof messagesRepository>;

/**
 * Records the mails and charges them in one transaction, before anything is sent (docs/webhooks-and-credits.md
 * "Credits"): each user's balance row is locked, so one-off mails and the sequencer never spend the same credits.
 * `partial`: what the balance no longer pays for is not recorded (`unpaid`); otherwise a 402 records nothing.
 */
export async function recordPaid(
  tx: Tx,
  credits: Credits,
  mails: Array<{ id: string; userId: string }>,
  insert: (repo: MessagesRepository) => Promise<Set<string>>,
  partial: boolean,
) {
  const repo = messagesRepository(tx);
  const recorded = await insert(repo);
  const unpaid = new Set<string>();
  const paid = new Map<string, number>();
  const mine = mails.filter((m) => recorded.has(m.id));
  // Users in one order in every transaction (two writers never wait on each other's balance rows in a cycle).
  for (const userId of [...new Set(mine.map((m) => m.userId))].sort()) {
    const theirs = mine.filter((m) => m.userId === userId);
    const { paidUnits } = await credits.spend(tx, userId, 'emails_sent', theirs.length, {
      partial,
      reason: 'outreach mail',
    });
    paid.set(userId, paidUnits);
    for (const m of theirs.slice(paidUnits)) unpaid.add(m.id);
  }
  await repo.deleteMessages([...unpaid]);
  return { recorded, unpaid, paid };
}

/** A recorded mail: its record's id (the links' tokens name it) and whether its campaign tracks opens. */
export type RecordedMail = Omit<OutgoingMail, 'unsubscribeUrl' | 'openPixelUrl'> & { id: string; trackOpens: boolean };

export type Delivery = { kind: 'sent' } | { kind: SendFailure; error: string; cause: unknown };

/** Hands a recorded mail to SMTP, with its unsubscribe link (and open pixel): sent, or how it failed. */
export async function deliverMail(
  config: Config,
  transport: Transporter,
  mail: RecordedMail,
  baseUrl = publicUrlOf(config),
): Promise<Delivery> {
  try {
    await transport.sendMail(
      mailOptions({
        ...mail,
        unsubscribeUrl: `${baseUrl}/api/outreach/unsubscribe/${linkToken(config, 'unsubscribe', mail.id)}`,
        openPixelUrl: mail.trackOpens ? `${baseUrl}/api/outreach/o/${linkToken(config, 'open', mail.id)}.gif` : null,
      }),
    );
    return { kind: 'sent' };
  } catch (err) {
    return { kind: classifySendError(err), error: String((err as Error).message ?? err).slice(0, 500), cause: err };
  }
}
