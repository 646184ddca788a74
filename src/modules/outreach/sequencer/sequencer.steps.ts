import { randomUUID } from 'node:crypto';
import type { Transporter } from 'nodemailer';
import type { Config } from '../../../config.ts';
import type { Tx } from '../../../db/client.ts';
import type { AppDeps } from '../../../deps.ts';
import type { Credits } from '../../../shared/credits.ts';
import type { SecretBox } from '../../../shared/crypto.ts';
import { newId } from '../../../shared/ids.ts';
import { domainOf } from '../../../shared/mail/address.ts';
import { openMailboxSmtp, type SmtpTransportOptions } from '../../../shared/mail/mailbox.ts';
import type { LeadToSend } from '../../leads/index.ts';
import { leadTemplateVars, renderTemplate } from '../campaigns/templates.ts';
import type { MailboxRow } from '../connections/connections.repository.ts';
import { type IntentInsert, type MessageRow, messagesRepository } from '../messages/messages.repository.ts';
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
 * one-off mails (POST /api/outreach/emails): compose (`composeIntent`), open the mailbox's transport
 * (`mailboxTransport`), record and charge (`recordPaid`), hand to SMTP (`deliverMail`), then write the outcome
 * (`writeOutcomes`, sequencer.outcomes.ts). The steps that carry the mail live here, so its path stays in this room
 * but for one call into shared/mail for the transport (docs/architecture-mail-path.md).
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

/**
 * A campaign mail's intent for this enrollment's step: the templates rendered for the lead and the mailbox, and
 * threaded after the mails of its earlier steps (In-Reply-To, References, the first mail's subject and thread).
 */
export function composeIntent(
  e: { id: string; nextStep: number },
  step: { subject: string; body: string },
  lead: LeadToSend,
  mailbox: { id: string; email: string; fromName: string | null },
  thread: MessageRow[],
  now: Date,
): IntentInsert {
  const first = thread[0];
  const vars = { ...leadTemplateVars(lead), senderName: mailbox.fromName, senderEmail: mailbox.email };
  const rendered = renderTemplate(step.subject, vars).trim();
  const subject = rendered || (first ? `Re: ${first.subject.replace(/^re:\s*/i, '')}` : '(no subject)');
  const messageId = `${randomUUID()}@${domainOf(mailbox.email)}`;
  return {
    id: newId(),
    enrollmentId: e.id,
    mailboxId: mailbox.id,
    step: e.nextStep,
    messageId,
    inReplyTo: thread.at(-1)?.messageId ?? null,
    references: thread.map((m) => m.messageId),
    threadId: first?.threadId ?? messageId,
    fromEmail: mailbox.email,
    subject,
    bodyText: renderTemplate(step.body, vars),
    createdAt: now,
  };
}

/**
 * The mailbox's pooled transport, opened once per run and checked once (a connection and AUTH, nodemailer
 * `verify`) before anything is recorded for the mailbox: a wrong password or a server that is down records and
 * charges nothing, and rests the mailbox for the run (a failed opening or check).
 */
export function mailboxTransport(
  deps: Pick<AppDeps, 'config'>,
  box: SecretBox,
  mailbox: { row: MailboxRow; transport?: Promise<Transporter> },
  options: SmtpTransportOptions,
): Promise<Transporter> {
  if (!mailbox.transport) {
    mailbox.transport = openMailboxSmtp(deps, box, mailbox.row, { ...options, verify: true });
    mailbox.transport.catch(() => {});
  }
  return mailbox.transport;
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
