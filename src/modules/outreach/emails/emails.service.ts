import { randomUUID } from 'node:crypto';
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import { queryRows } from '../../../db/client.ts';
import { outreachMessages } from '../../../db/schema/index.ts';
import type { AppDeps } from '../../../deps.ts';
import { createSecretBox, secretKeyMaterial } from '../../../shared/crypto.ts';
import { AppError, validationError } from '../../../shared/errors.ts';
import { findOwned, isUuid, newId, storedId } from '../../../shared/ids.ts';
import { domainOf, normalizeEmail } from '../../../shared/mail/address.ts';
import { mailboxEndpoints, openSmtpTransport } from '../../../shared/mail/mailbox.ts';
import { decodeCursor, encodeCursor } from '../../../shared/pagination.ts';
import { leadsForOutreach } from '../../leads/index.ts';
import { suppressionOf } from '../../suppressions/index.ts';
import { outreachCampaignsRepository } from '../campaigns/outreach-campaigns.repository.ts';
import { type ConnectionRow, connectionsRepository, type MailboxRow } from '../connections/connections.repository.ts';
import { type MessageRow, messagesRepository } from '../messages/messages.repository.ts';
import { platformMessageId } from '../providers/platform.events.ts';
import { platformRefused } from '../providers/platform.ts';
import { accountRef, clientOf, isPlatform, type PlatformProvider, platformFailure } from '../providers/platforms.ts';
import { emptyOutcomes, refundMails, writeOutcomes } from '../sequencer/sequencer.outcomes.ts';
import { deliverMail, recordPaid } from '../sequencer/sequencer.steps.ts';
import type { EmailView, SendEmailInput } from './emails.schemas.ts';

type Deps = Pick<AppDeps, 'db' | 'clock' | 'config' | 'credits' | 'logger'>;

export function toEmailView(m: MessageRow): EmailView {
  return {
    id: m.id,
    direction: m.direction,
    status: m.status,
    unconfirmed: m.status === 'UNCONFIRMED',
    kind: m.kind,
    messageId: m.messageId,
    threadId: m.threadId,
    from: m.fromEmail,
    to: m.toEmail,
    subject: m.subject,
    text: m.bodyText,
    step: m.step === null ? null : m.step + 1,
    campaignId: m.campaignId,
    leadId: m.leadId,
    mailboxId: m.mailboxId,
    at: (m.sentAt ?? m.receivedAt ?? m.createdAt).toISOString(),
    openedAt: m.openedAt?.toISOString() ?? null,
  };
}

const mailServerRefused = (err: unknown) => {
  const reason = String((err as Error).message ?? err).slice(0, 500);
  return new AppError('CONNECTION_FAILED', `The mail server did not take the mail: ${reason}`, {
    details: [{ field: 'mailboxId', message: reason }],
  });
};

/** One-off mails and the inbox (docs/outreach.md "Outreach", Emails). */
export function createEmailService(deps: Deps) {
  const box = createSecretBox(secretKeyMaterial(deps.config));
  const connections = connectionsRepository(deps.db);
  const campaigns = outreachCampaignsRepository(deps.db);
  const messages = messagesRepository(deps.db);

  /**
   * A platform sends only within its own threads (docs/outreach.md "Outreach", Platforms): a mail there is a reply to a mail
   * the platform reported, through its API; recorded and metered before the platform is asked, as SMTP mail is.
   */
  async function replyThroughPlatform(
    userId: string,
    connection: ConnectionRow,
    mailbox: MailboxRow,
    mail: { parent: MessageRow | undefined; to: string; subject: string; body: string; leadId: string | undefined },
  ): Promise<EmailView> {
    const provider = connection.provider as PlatformProvider;
    const campaign = mail.parent?.campaignId ? await campaigns.find(userId, mail.parent.campaignId) : undefined;
    // A mail of this account, or (its account unknown here) of a campaign of this connection.
    const ours =
      mail.parent?.mailboxId === mailbox.id || (!mail.parent?.mailboxId && campaign?.connectionId === connection.id);
    const parentMail = ours ? mail.parent?.externalId : null;
    if (!mail.parent || !parentMail)
      throw validationError(
        'inReplyTo',
        `${provider} sends new mail through campaigns only: name a mail this account sent or received`,
      );
    // Recorded (PENDING) and paid in one transaction before the platform is asked: concurrent sends never spend
    // the same credits, and a process that dies after the platform took it leaves a charged record that the
    // platform's `sent` event claims instead of charging again (docs/outreach.md, Exactly once).
    const now = deps.clock.now();
    const { intent, charged } = await deps.db.transaction(async (tx) => {
      const row = await messagesRepository(tx).insertOneOff({
        userId,
        mailboxId: mailbox.id,
        campaignId: mail.parent!.campaignId,
        leadId: mail.leadId ?? mail.parent!.leadId,
        // The platform's id is known once it took the mail; until then one of ours.
        messageId: platformMessageId(provider, randomUUID()),
        inReplyTo: mail.parent!.messageId,
        threadId: mail.parent!.threadId,
        fromEmail: mailbox.email,
        toEmail: mail.to,
        subject: mail.subject,
        bodyText: mail.body,
        createdAt: now,
        updatedAt: now,
      });
      const { charged } = await deps.credits.spend(tx, userId, 'emails_sent', 1, {
        reason: `outreach mail (${provider})`,
      });
      return { intent: row, charged };
    });
    let externalId: string | null;
    try {
      ({ externalId } = await clientOf(deps, box, connection).replyToEmail({
        from: accountRef(mailbox),
        replyToExternalId: parentMail,
        campaignExternalId: campaign?.externalId ?? null,
        subject: mail.subject,
        bodyText: mail.body,
      }));
    } catch (err) {
      if (platformRefused(err))
        // Certainly not sent: no record, and the charge is given back.
        await deps.db.transaction(async (tx) => {
          await messagesRepository(tx).deleteMessages([intent.id]);
          if (charged > 0) await refundMails(deps.credits, tx, userId, 1, `${provider} refused it`);
        });
      // Its answer was lost: it may have gone out, so it stays charged, UNCONFIRMED (as an SMTP mail's).
      else
        await messages.confirmLost(
          [{ id: intent.id, error: String((err as Error).message ?? err).slice(0, 500) }],
          deps.clock.now(),
        );
      return platformFailure(err, provider, 'mailboxId');
    }
    const sent = await deps.db.transaction(async (tx) => {
      const repo = messagesRepository(tx);
      // Locked: the platform's `sent` event may be claiming it right now.
      const mine = await repo.lock(intent.id);
      // The platform's `sent` event claimed it first (it holds the platform's id now).
      if (mine?.status === 'SENT') return mine;
      const messageId = externalId ? platformMessageId(provider, externalId) : intent.messageId;
      const known = await repo.byMessageId(userId, messageId);
      if (known && known.id !== intent.id) {
        // The platform's `sent` event recorded (and charged) it first: ours goes, with its charge.
        await repo.deleteMessages([intent.id]);
        if (charged > 0) await refundMails(deps.credits, tx, userId, 1, `charged when ${provider} reported it`);
        return known;
      }
      await repo.setMessages([intent.id], {
        status: 'SENT',
        messageId,
        // Smartlead answers a reply with no id: the thread's mail id still names it for the next reply.
        externalId: externalId ?? parentMail,
        error: null,
        sentAt: now,
        updatedAt: deps.clock.now(),
      });
      return (await repo.lock(intent.id))!;
    });
    return toEmailView(sent);
  }

  return {
    /**
     * Sends one mail, or a reply in a thread, from one of the user's mailboxes: the address must not be suppressed,
     * the balance pays for it, and the mail is recorded before the SMTP transaction (as the sequencer does).
     */
    async send(userId: string, input: SendEmailInput): Promise<EmailView> {
      const mailbox = await findOwned(
        input.mailboxId,
        'Mailbox',
        (key) => connections.findMailbox(userId, key),
        'mailboxId',
      );
      let parent: MessageRow | undefined;
      if (input.inReplyTo) {
        const id = input.inReplyTo.trim().replace(/^<|>$/g, '');
        parent = await messages.byMessageId(userId, id);
        if (!parent) throw validationError('inReplyTo', 'no mail of yours has this Message-ID');
      }
      const lead = input.leadId
        ? (await leadsForOutreach(deps.db, userId, [storedId(input.leadId) ?? ''].filter(isUuid)))[0]
        : undefined;
      if (input.leadId && !lead)
        throw new AppError('NOT_FOUND', 'Lead not found', { details: [{ field: 'leadId', message: 'not found' }] });
      const rawTo =
        input.to ?? lead?.email ?? (parent ? (parent.direction === 'inbound' ? parent.fromEmail : parent.toEmail) : '');
      const to = normalizeEmail(rawTo ?? '');
      if (!to) throw validationError('to', 'not an email address');
      const entry = (await suppressionOf(deps.db, userId, [to])).get(to);
      if (entry) {
        // The request is valid; the recipient is not (422, naming the list entry that matched).
        const why = entry.reason ? `${entry.source}: ${entry.reason}` : entry.source;
        const message = `${to} is suppressed by the ${entry.type} entry ${entry.value} (${why})`;
        throw new AppError('SUPPRESSED', message, { details: [{ field: 'to', message }] });
      }
      await deps.credits.assert(deps.db, userId, 'emails_sent', 1);
      const thread = parent
        ? await deps.db
            .select()
            .from(outreachMessages)
            .where(and(eq(outreachMessages.userId, userId), eq(outreachMessages.threadId, parent.threadId)))
            .orderBy(asc(outreachMessages.id))
        : [];
      const subject = input.subject?.trim() || (parent ? `Re: ${parent.subject.replace(/^re:\s*/i, '')}` : '');
      if (!subject) throw validationError('subject', 'required for a new mail');
      const connection = (await connections.find(userId, mailbox.connectionId))!;
      if (isPlatform(connection.provider))
        return replyThroughPlatform(userId, connection, mailbox, {
          parent,
          to,
          subject,
          body: input.body,
          leadId: lead?.id,
        });
      // The connection first: a server that cannot be reached leaves nothing recorded.
      const { smtp } = mailboxEndpoints(box, mailbox);
      if (!smtp) throw validationError('mailboxId', 'this mailbox sends through its platform, not SMTP');
      let transport: Awaited<ReturnType<typeof openSmtpTransport>>;
      try {
        transport = await openSmtpTransport(deps, smtp);
      } catch (err) {
        if (err instanceof AppError) throw err;
        throw mailServerRefused(err);
      }
      const messageId = `${randomUUID()}@${domainOf(mailbox.email)}`;
      const now = deps.clock.now();
      const intent = {
        id: newId(),
        userId,
        mailboxId: mailbox.id,
        campaignId: parent?.campaignId ?? null,
        leadId: lead?.id ?? parent?.leadId ?? null,
        messageId,
        inReplyTo: parent?.messageId ?? null,
        references: thread.map((m) => m.messageId),
        threadId: parent?.threadId ?? messageId,
        fromEmail: mailbox.email,
        toEmail: to,
        subject,
        bodyText: input.body,
        createdAt: now,
        updatedAt: now,
      };
      // The sequencer's steps (docs/outreach.md "Exactly once"). Recorded and charged in one transaction before
      // the SMTP transaction: the balance row is locked, so concurrent sends (and the sequencer) never spend the same
      // credits; a 402 here records and sends nothing.
      try {
        await deps.db.transaction((tx) =>
          recordPaid(
            tx,
            deps.credits,
            [intent],
            async (repo) => new Set([(await repo.insertOneOff(intent)).id]),
            false,
          ),
        );
      } catch (err) {
        transport.close();
        throw err;
      }
      let delivery: Awaited<ReturnType<typeof deliverMail>>;
      try {
        delivery = await deliverMail(deps.config, transport, {
          ...intent,
          from: mailbox.email,
          fromName: mailbox.fromName,
          to,
          text: input.body,
          trackOpens: false,
        });
      } finally {
        transport.close();
      }
      const out = emptyOutcomes();
      if (delivery.kind === 'sent') out.sent.push({ id: intent.id, userId, leadId: intent.leadId, enrollmentId: null });
      // It may have gone out: UNCONFIRMED, and it stays charged (as the sequencer's).
      else if (delivery.kind === 'unknown') out.unconfirmed.push({ id: intent.id, error: delivery.error });
      // Certainly not sent: no record, and the charge is given back.
      else out.retried.push({ id: intent.id, userId });
      await writeOutcomes(deps, out, now, () => {}, 'the mail server refused it');
      if (delivery.kind !== 'sent') throw mailServerRefused(delivery.cause);
      return toEmailView((await messages.byId(intent.id))!);
    },

    /**
     * The inbox: threads with at least one reply or auto-reply, the most recently answered first, each with every
     * mail of the thread (ours and theirs) in order. Cursor: the thread's latest reply.
     */
    async inbox(
      userId: string,
      query: { limit: number; cursor?: string; leadId?: string; campaignId?: string; mailboxId?: string },
    ) {
      const filter = (value: string | undefined, column: string) => {
        if (value === undefined) return sql``;
        const key = storedId(value);
        // An id that is not a UUID names nothing: an empty inbox, not a cast error.
        return key ? sql` AND ${sql.raw(column)} = ${key}` : sql` AND false`;
      };
      const before = decodeCursor(query.cursor);
      const threads = await queryRows<{ thread_id: string; last: string }>(
        deps.db,
        sql`SELECT thread_id, max(id::text) AS last FROM outreach_messages
            WHERE user_id = ${userId} AND direction = 'inbound' AND kind IN ('reply', 'auto_reply')
            ${filter(query.leadId, 'lead_id')}${filter(query.campaignId, 'campaign_id')}${filter(query.mailboxId, 'mailbox_id')}
            GROUP BY thread_id
            ${before ? sql`HAVING max(id::text) < ${before}` : sql``}
            ORDER BY last DESC LIMIT ${query.limit + 1}`,
      );
      const page = threads.slice(0, query.limit);
      const messages = page.length
        ? await deps.db
            .select()
            .from(outreachMessages)
            .where(
              and(
                eq(outreachMessages.userId, userId),
                inArray(
                  outreachMessages.threadId,
                  page.map((t) => t.thread_id),
                ),
              ),
            )
            .orderBy(asc(outreachMessages.id))
        : [];
      return {
        threads: page.map((t) => {
          const mine = messages.filter((m) => m.threadId === t.thread_id);
          const first = mine[0]!;
          const last = mine.at(-1)!;
          return {
            threadId: t.thread_id,
            leadId: mine.find((m) => m.leadId)?.leadId ?? null,
            campaignId: mine.find((m) => m.campaignId)?.campaignId ?? null,
            mailboxId: first.mailboxId,
            subject: first.subject,
            lastMessageAt: (last.receivedAt ?? last.sentAt ?? last.createdAt).toISOString(),
            messages: mine.map(toEmailView),
          };
        }),
        nextCursor: threads.length > query.limit ? encodeCursor(page.at(-1)!.last) : null,
      };
    },
  };
}
