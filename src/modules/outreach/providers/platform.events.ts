import { and, desc, eq } from 'drizzle-orm';
import type { Db, Tx } from '../../../db/client.ts';
import {
  outreachCampaigns,
  outreachConnections,
  outreachEnrollments,
  outreachMailboxes,
  outreachMessages,
} from '../../../db/schema/index.ts';
import type { AppDeps } from '../../../deps.ts';
import { sha256 } from '../../../shared/crypto.ts';
import { emitEvent } from '../../../shared/events.ts';
import { storedId } from '../../../shared/ids.ts';
import { normalizeEmail } from '../../../shared/mail/address.ts';
import { withoutNul } from '../../../shared/text.ts';
import { createEmailVerificationService } from '../../email-verification/index.ts';
import { moveLeadsForOutreach } from '../../leads/index.ts';
import { advanceEnrollmentPast, stopEnrollmentsById } from '../campaigns/enrollments.repository.ts';
import type { ConnectionRow } from '../connections/connections.repository.ts';
import { messagesRepository } from '../messages/messages.repository.ts';
import { replyStops } from '../sequencer/sequencer.decisions.ts';
import { unsubscribeAddress } from '../unsubscribe/unsubscribe.service.ts';
import type { PlatformWebhookEvent } from './platform.ts';
import { webhookTokenMatches } from './platforms.ts';

type Deps = Pick<AppDeps, 'db' | 'clock' | 'credits' | 'config' | 'sentMail'>;

const digestOf = (event: PlatformWebhookEvent) => event.eventId.slice(event.eventId.indexOf(':') + 1);

/** Stored text of a reply at most (as the IMAP reader keeps). */
const MAX_BODY = 100_000;

/**
 * Ids of platform mail in `outreach_messages.message_id` (a platform gives no RFC 5322 Message-ID): a sent mail is
 * `<the platform's id of the mail>@<provider>`, a reply `<its event digest>@<provider>` (Smartlead gives a reply the
 * id of the mail it answers). The platform's id of the mail itself is kept in `external_id`: a reply through the
 * platform names it.
 */
export const platformMessageId = (provider: string, id: string) => `${id}@${provider}`;

const clean = (text: string | null, max: number) => withoutNul(text ?? '').slice(0, max);
/** A delivery's time when it is a plausible one; else the time it arrived. */
function timeOf(value: string | null, now: Date): Date {
  const at = value ? Date.parse(value) : Number.NaN;
  return Number.isFinite(at) && Math.abs(at - now.getTime()) < 366 * 86_400_000 ? new Date(at) : now;
}

/**
 * What a platform's webhook event does (docs/outreach.md "Outreach", Platforms), in the transaction that stored it: a sent
 * mail is recorded and metered in credits (the lead becomes CONTACTED); an open is counted; a reply is stored in the
 * inbox, stops the lead's sequence, makes the lead REPLIED and emits `email.replied`; a bounce goes to the bounce
 * records as a hard bounce (INVALID, suppressed, sequences stopped); an unsubscribe suppresses the address.
 */
export function createPlatformEventService(deps: Deps) {
  const bounces = createEmailVerificationService(deps);

  async function context(tx: Db | Tx, connection: ConnectionRow, event: PlatformWebhookEvent) {
    const [campaign] = event.campaignExternalId
      ? await tx
          .select()
          .from(outreachCampaigns)
          .where(
            and(
              eq(outreachCampaigns.connectionId, connection.id),
              eq(outreachCampaigns.externalId, event.campaignExternalId),
            ),
          )
      : [];
    const email = event.leadEmail ? normalizeEmail(event.leadEmail) : undefined;
    const [enrollment] =
      campaign && email
        ? await tx
            .select()
            .from(outreachEnrollments)
            .where(and(eq(outreachEnrollments.campaignId, campaign.id), eq(outreachEnrollments.email, email)))
        : [];
    const account = event.accountEmail ? normalizeEmail(event.accountEmail) : undefined;
    const [mailbox] = account
      ? await tx
          .select()
          .from(outreachMailboxes)
          .where(and(eq(outreachMailboxes.connectionId, connection.id), eq(outreachMailboxes.email, account)))
      : [];
    return { campaign, email, enrollment, mailbox };
  }

  /**
   * A reply Quarry sent through the platform's API (POST /api/outreach/emails) is recorded, and charged, before the
   * platform is asked; its `sent` event then finds it: true when the mail is known already by the platform's id, or
   * when a reply still waiting for that id (PENDING, or UNCONFIRMED when its answer was lost or the process died)
   * from this account to this lead in this campaign takes it and becomes SENT, charged once.
   */
  async function claimReply(
    tx: Db | Tx,
    mail: { userId: string; messageId: string; externalId: string | null; mailboxId: string | null } & {
      email: string;
      at: Date;
      campaignId: string;
    },
  ): Promise<boolean> {
    const messages = messagesRepository(tx);
    if (await messages.byMessageId(mail.userId, mail.messageId)) return true;
    if (!mail.externalId) return false;
    return messages.claimWaitingReply(mail, {
      messageId: mail.messageId,
      externalId: mail.externalId,
      at: mail.at,
      now: deps.clock.now(),
    });
  }

  return {
    /**
     * The connection a webhook address names, when its token is this connection's (platforms sign nothing: the
     * address is the secret, docs/outreach.md "Outreach", Platforms); undefined otherwise, alike for an unknown connection.
     */
    async connectionFor(provider: string, connectionId: string, token: string): Promise<ConnectionRow | undefined> {
      const id = storedId(connectionId);
      if (!id || !webhookTokenMatches(deps, id, token)) return undefined;
      const [row] = await deps.db.select().from(outreachConnections).where(eq(outreachConnections.id, id));
      return row?.provider === provider ? row : undefined;
    },

    async apply(tx: Db | Tx, connection: ConnectionRow, event: PlatformWebhookEvent): Promise<void> {
      const { userId, provider } = connection;
      const { campaign, email, enrollment, mailbox } = await context(tx, connection, event);
      const now = deps.clock.now();
      const at = timeOf(event.occurredAt, now);
      // Mail of a campaign Quarry did not create (the workspace's others) is not Quarry's to record or charge.
      if (!campaign && (event.kind === 'sent' || event.kind === 'opened' || event.kind === 'replied')) return;
      // One thread per lead and campaign: what the platform itself threads.
      const threadId = platformMessageId(
        provider,
        `thread-${sha256(`${event.campaignExternalId}:${email}`).slice(0, 32)}`,
      );
      const leadId = enrollment?.leadId ?? null;
      const base = {
        userId,
        mailboxId: mailbox?.id ?? null,
        campaignId: campaign?.id ?? null,
        enrollmentId: enrollment?.id ?? null,
        leadId,
        step: event.step,
        messageId: platformMessageId(provider, event.emailExternalId ?? digestOf(event)),
        externalId: event.emailExternalId,
        threadId,
        subject: clean(event.subject, 998),
        bodyText: clean(event.bodyText, MAX_BODY),
        createdAt: now,
        updatedAt: now,
      };

      switch (event.kind) {
        case 'sent': {
          if (!email) return;
          // A reply sent through the API was recorded and charged before the platform took it: the event names it.
          if (await claimReply(tx, { ...base, email, at, campaignId: campaign!.id })) return;
          const sent = await messagesRepository(tx).insertIfNew({
            ...base,
            direction: 'outbound',
            status: 'SENT',
            fromEmail: mailbox?.email ?? normalizeEmail(event.accountEmail ?? '') ?? '',
            toEmail: email,
            sentAt: at,
          });
          if (!sent) return;
          if (enrollment && event.step !== null) await advanceEnrollmentPast(tx, enrollment.id, event.step, now);
          if (leadId) await moveLeadsForOutreach(tx, userId, [leadId], 'CONTACTED', now);
          // The platform already sent it: metered as far as the balance goes, never refused after the fact.
          await deps.credits.spend(tx, userId, 'emails_sent', 1, {
            partial: true,
            reason: `outreach mail (${provider})`,
          });
          return;
        }
        case 'opened': {
          if (!enrollment) return;
          const [mail] = await tx
            .select({ id: outreachMessages.id })
            .from(outreachMessages)
            .where(
              and(
                eq(outreachMessages.enrollmentId, enrollment.id),
                eq(outreachMessages.direction, 'outbound'),
                event.step !== null ? eq(outreachMessages.step, event.step) : undefined,
              ),
            )
            .orderBy(desc(outreachMessages.id))
            .limit(1);
          if (mail) await messagesRepository(tx).countOpen(mail.id, at);
          return;
        }
        case 'replied': {
          if (!email) return;
          const stored = await messagesRepository(tx).insertIfNew({
            ...base,
            messageId: platformMessageId(provider, digestOf(event)),
            direction: 'inbound',
            status: 'RECEIVED',
            kind: 'reply',
            fromEmail: email,
            toEmail: mailbox?.email ?? normalizeEmail(event.accountEmail ?? '') ?? '',
            receivedAt: at,
          });
          if (!stored) return;
          if (enrollment && replyStops('reply', campaign))
            await stopEnrollmentsById(tx, [enrollment.id], 'REPLIED', now);
          if (leadId) await moveLeadsForOutreach(tx, userId, [leadId], 'REPLIED', now);
          await emitEvent(tx, userId, 'email.replied', {
            email,
            leadId,
            campaignId: campaign?.id ?? null,
            messageId: stored.id,
            threadId: stored.threadId,
            subject: stored.subject,
            receivedAt: at.toISOString(),
          });
          return;
        }
        case 'bounced':
          if (email)
            await bounces.recordPlatformBounce(tx, userId, {
              email,
              provider,
              eventId: event.eventId,
              outreachCampaignId: campaign?.id ?? null,
              detail: event.bodyText,
            });
          return;
        case 'unsubscribed':
          if (email) await unsubscribeAddress(tx, userId, email, leadId, provider, now);
          return;
        default:
          return;
      }
    },
  };
}
