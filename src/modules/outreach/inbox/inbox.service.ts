import { and, eq, inArray } from 'drizzle-orm';
import PostalMime from 'postal-mime';
import { outreachCampaigns, outreachMessages } from '../../../db/schema/index.ts';
import type { AppDeps } from '../../../deps.ts';
import { emitEvent } from '../../../shared/events.ts';
import { normalizeEmail } from '../../../shared/mail/address.ts';
import { withoutNul } from '../../../shared/text.ts';
import { createEmailVerificationService, parseDsn } from '../../email-verification/index.ts';
import { moveLeadsForOutreach } from '../../leads/index.ts';
import { stopEnrollmentsById } from '../campaigns/enrollments.repository.ts';
import type { MailboxRow } from '../connections/connections.repository.ts';
import { messagesRepository } from '../messages/messages.repository.ts';
import { replyStops } from '../sequencer/sequencer.decisions.ts';
import { classifyInbound, type InboundHeaders, messageIdsOf } from './inbox.classify.ts';

type Deps = Pick<AppDeps, 'db' | 'clock' | 'sentMail'>;

/** Stored text of an inbound mail at most (the inbox shows replies, not archives). */
const MAX_BODY = 100_000;

export type InboundOutcome = 'reply' | 'auto_reply' | 'bounce' | 'duplicate' | 'unmatched' | 'unreadable';

/**
 * What a mail read from an outreach mailbox does (docs/outreach.md "Outreach", Replies and bounces): a DSN goes to the bounce
 * classifier (a hard bounce marks the lead INVALID, suppresses the address and stops its sequences); a reply to one
 * of our mails is stored in its thread, stops the lead's sequence (campaigns with stop-on-reply), makes the lead
 * REPLIED and emits `email.replied`; an automatic reply is stored and stops nothing. Anything else is left alone.
 */
export function createInboxService(deps: Deps) {
  const bounces = createEmailVerificationService(deps);

  /** Our outbound mails among these Message-IDs. */
  function ourMails(userId: string, ids: string[]) {
    if (!ids.length) return Promise.resolve([]);
    return deps.db
      .select()
      .from(outreachMessages)
      .where(
        and(
          eq(outreachMessages.userId, userId),
          eq(outreachMessages.direction, 'outbound'),
          inArray(outreachMessages.messageId, ids),
        ),
      );
  }

  return {
    async process(mailbox: MailboxRow, raw: Buffer, fallbackId: string): Promise<InboundOutcome> {
      let email: Awaited<ReturnType<typeof PostalMime.parse>>;
      try {
        email = await PostalMime.parse(raw);
      } catch {
        return 'unreadable';
      }
      const headerMap = new Map<string, string>();
      for (const h of email.headers)
        if (!headerMap.has(h.key.toLowerCase())) headerMap.set(h.key.toLowerCase(), h.value);
      const headers: InboundHeaders = {
        contentType: headerMap.get('content-type') ?? 'text/plain',
        subject: withoutNul(email.subject ?? ''),
        from: withoutNul(email.from?.address ?? ''),
        get: (name) => headerMap.get(name.toLowerCase()),
      };
      const kind = classifyInbound(headers);
      const userId = mailbox.userId;
      const messageId = messageIdsOf(email.messageId)[0] ?? fallbackId;

      if (kind === 'bounce') {
        let original: Awaited<ReturnType<typeof ourMails>>[number] | undefined;
        try {
          // The returned headers name the mail that bounced; without them the bounce still counts, unlinked.
          const dsn = await parseDsn(raw, 'message/rfc822');
          [original] = await ourMails(userId, messageIdsOf(dsn.originalMessageId ?? undefined));
          const result = await bounces.ingestDsn(
            userId,
            raw,
            'message/rfc822',
            undefined,
            original ? { messageId: original.id, campaignId: original.campaignId } : undefined,
          );
          return result.recorded ? 'bounce' : 'duplicate';
        } catch {
          return 'unreadable';
        }
      }

      const refs = [...messageIdsOf(email.inReplyTo), ...messageIdsOf(email.references).reverse()];
      const matches = await ourMails(userId, refs);
      const matched = refs.map((id) => matches.find((m) => m.messageId === id)).find(Boolean);
      if (!matched) return 'unmatched';
      const now = deps.clock.now();
      const receivedAt = email.date && !Number.isNaN(Date.parse(email.date)) ? new Date(email.date) : now;
      return deps.db.transaction(async (tx) => {
        const stored = await messagesRepository(tx).insertIfNew({
          userId,
          mailboxId: mailbox.id,
          campaignId: matched.campaignId,
          enrollmentId: matched.enrollmentId,
          leadId: matched.leadId,
          step: matched.step,
          direction: 'inbound',
          status: 'RECEIVED',
          kind,
          messageId,
          inReplyTo: messageIdsOf(email.inReplyTo)[0] ?? null,
          references: messageIdsOf(email.references),
          threadId: matched.threadId,
          fromEmail: normalizeEmail(headers.from) ?? headers.from.slice(0, 320),
          toEmail: mailbox.email,
          subject: headers.subject.slice(0, 998),
          bodyText: withoutNul(email.text ?? '').slice(0, MAX_BODY),
          receivedAt,
          createdAt: now,
          updatedAt: now,
        });
        if (!stored) return 'duplicate';
        if (kind === 'auto_reply') return 'auto_reply';
        const [campaign] = matched.campaignId
          ? await tx.select().from(outreachCampaigns).where(eq(outreachCampaigns.id, matched.campaignId))
          : [];
        if (matched.enrollmentId && replyStops('reply', campaign))
          await stopEnrollmentsById(tx, [matched.enrollmentId], 'REPLIED', now);
        if (matched.leadId) await moveLeadsForOutreach(tx, userId, [matched.leadId], 'REPLIED', now);
        await emitEvent(tx, userId, 'email.replied', {
          email: stored.fromEmail,
          leadId: matched.leadId,
          campaignId: matched.campaignId,
          messageId: stored.id,
          threadId: stored.threadId,
          subject: stored.subject,
          receivedAt: receivedAt.toISOString(),
        });
        return 'reply';
      });
    },
  };
}
