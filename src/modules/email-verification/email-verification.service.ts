import { createHash } from 'node:crypto';
import type { Db, Tx } from '../../db/client.ts';
import type { BounceType } from '../../db/schema/index.ts';
import type { AppDeps } from '../../deps.ts';
import { notFound, validationError } from '../../shared/errors.ts';
import { emitEvent } from '../../shared/events.ts';
import { storedId } from '../../shared/ids.ts';
import { domainOf, normalizeDomain, normalizeEmail } from '../../shared/mail/address.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { ownedDealCampaignId } from '../deal-campaigns/index.ts';
import { markLeadsHardBounced } from '../leads/index.ts';
import { suppress } from '../suppressions/index.ts';
import { classifyBounce, statusOfReply } from './classify.ts';
import { parseDsn } from './dsn.ts';
import {
  type BounceFilters,
  type BounceInsert,
  type BounceRow,
  emailVerificationRepository,
} from './email-verification.repository.ts';
import type { JsonBounceBody, ListBouncesQuery } from './email-verification.schemas.ts';

const sha256 = (parts: Array<string | number | null | undefined>) =>
  createHash('sha256').update(JSON.stringify(parts)).digest('hex');

export const toBounceView = (r: BounceRow) => ({
  id: r.id,
  email: r.email,
  recipientDomain: r.recipientDomain,
  type: r.type,
  status: r.status,
  smtpCode: r.smtpCode,
  diagnostic: r.diagnostic,
  action: r.action,
  reportingMta: r.reportingMta,
  senderDomain: r.senderDomain,
  // The outreach campaign of the bounced mail, else the deal campaign a report named (as the rates count it).
  campaignId: r.outreachCampaignId ?? r.campaignId,
  format: r.format,
  createdAt: r.createdAt.toISOString(),
});

/** The domain a sender stands for: `a@b.example` → `b.example`, `b.example` → itself. */
const senderDomainOf = (sender: string | null | undefined): string | null => {
  if (!sender) return null;
  return normalizeDomain(sender.includes('@') ? domainOf(sender) : sender) ?? null;
};

/**
 * Which of `emails` hard-bounced for this user before (normalized addresses): for validation to answer
 * `hard_bounced` (docs/outreach.md, Email verification). One query for the batch.
 */
export async function hardBouncedOf(db: Db | Tx, userId: string, emails: readonly string[]): Promise<Set<string>> {
  const addresses = [...new Set(emails.map((e) => normalizeEmail(e)).filter((e): e is string => !!e))];
  return emailVerificationRepository(db).hardBounced(userId, addresses);
}

/**
 * How many hard and block bounces came back for mail sent from `senderDomain` since `since` (soft bounces are
 * transient and do not count): warmup computes a domain's bounce rate from it.
 */
export function bouncesFromSender(db: Db | Tx, userId: string, senderDomain: string, since: Date): Promise<number> {
  return emailVerificationRepository(db).countFromSender(userId, senderDomain, since);
}

type Pending = Omit<BounceInsert, 'userId' | 'createdAt'>;

/**
 * What email verification needs of the mail outreach sent, and of its sequences: bounce rates are bounces ÷ sends, and
 * a hard bounce stops the address's sequences. The outreach module implements it and `assembleDeps` passes it in
 * (`deps.sentMail`), so this module never imports outreach, which records its bounces here.
 */
export interface SentMail {
  /** The user's outreach campaign with this id, if any. */
  ownedCampaign(db: Db | Tx, userId: string, id: string): Promise<string | undefined>;
  sendsByRecipientDomain(
    db: Db | Tx,
    userId: string,
    domains: string[],
    window: SendWindow,
  ): Promise<Map<string, number>>;
  sendsByCampaign(db: Db | Tx, userId: string, campaignIds: string[], window: SendWindow): Promise<Map<string, number>>;
  /** Stops the active sequences of these addresses (BOUNCED) in the caller's transaction. */
  stopEnrollmentsOf(tx: Db | Tx, userId: string, emails: string[], status: 'BOUNCED', now: Date): Promise<unknown>;
}

declare module '../../deps.ts' {
  interface AppDeps {
    /** Outreach's sends and sequences as email verification sees them (bounce rates; a hard bounce stops sequences). */
    sentMail: SentMail;
  }
}
export interface SendWindow {
  from?: Date;
  to?: Date;
}

type Deps = Pick<AppDeps, 'db' | 'clock' | 'sentMail'>;

export function createEmailVerificationService(deps: Deps) {
  const repo = emailVerificationRepository(deps.db);
  const sentMail = (): SentMail => deps.sentMail;

  /** A campaign id from a client: an outreach campaign (what sends mail) or a deal campaign of the user. */
  async function ownedCampaign(
    userId: string,
    campaignId: string | undefined,
  ): Promise<{ campaignId: string | null; outreachCampaignId: string | null }> {
    if (campaignId === undefined) return { campaignId: null, outreachCampaignId: null };
    const key = storedId(campaignId);
    const outreach = key && (await sentMail().ownedCampaign(deps.db, userId, key));
    if (outreach) return { campaignId: null, outreachCampaignId: outreach };
    const deal = key && (await ownedDealCampaignId(deps.db, userId, key));
    if (!deal) throw notFound('Campaign', 'campaignId');
    return { campaignId: deal, outreachCampaignId: null };
  }

  /**
   * Stores the bounces not seen before, in the caller's transaction; for each new one: a hard bounce marks the
   * user's leads with that address INVALID and suppresses it (source hard_bounce); every one emits `email.bounced`.
   */
  async function store(tx: Db | Tx, userId: string, pending: Pending[], now: Date) {
    const fresh = await emailVerificationRepository(tx).insertNew(
      pending.map((p) => ({ ...p, userId, createdAt: now })),
    );
    const hard = [...new Set(fresh.filter((b) => b.type === 'hard').map((b) => b.email))];
    const marked = await markLeadsHardBounced(tx, userId, hard, now);
    // A hard-bounced address gets no more outreach mail (docs/outreach.md "Outreach": its sequences stop as BOUNCED).
    await sentMail().stopEnrollmentsOf(tx, userId, hard, 'BOUNCED', now);
    if (hard.length) {
      await suppress(
        tx,
        userId,
        hard.map((value) => ({ type: 'email', value, reason: 'hard bounce', source: 'hard_bounce' })),
        now,
      );
    }
    const leadOf = new Map(marked.map((m) => [m.email, m.id]));
    for (const b of fresh) {
      await emitEvent(tx, userId, 'email.bounced', {
        bounceId: b.id,
        email: b.email,
        leadId: leadOf.get(b.email) ?? null,
        bounceType: b.type,
        status: b.status,
        smtpCode: b.smtpCode,
        diagnostic: b.diagnostic,
        campaignId: b.campaignId,
        senderDomain: b.senderDomain,
      });
    }
    return fresh;
  }

  /** Stores the bounces not seen before (one transaction) and answers each, fresh or duplicate. */
  async function record(userId: string, pending: Pending[]) {
    const stored = await deps.db.transaction((tx) => store(tx, userId, pending, deps.clock.now()));
    const freshKeys = new Set(stored.map((b) => b.dedupeKey));
    const old = await repo.existingKeys(
      userId,
      pending.map((p) => p.dedupeKey).filter((k) => !freshKeys.has(k)),
    );
    const byKey = new Map([...stored, ...old].map((b) => [b.dedupeKey, b]));
    const bounces = pending.flatMap((p) => {
      const b = byKey.get(p.dedupeKey);
      return b ? [{ ...toBounceView(b), duplicate: !freshKeys.has(p.dedupeKey) }] : [];
    });
    return { received: pending.length, recorded: stored.length, duplicates: pending.length - stored.length, bounces };
  }

  const classified = (status: string, diagnostic: string | null, field: string): BounceType => {
    const type = classifyBounce(status, diagnostic);
    if (!type) throw validationError(field, `${status} is not a known RFC 3463 failure code`);
    return type;
  };

  return {
    /**
     * A bounce a connected outreach platform reported (docs/outreach.md "Outreach", Platforms), in the caller's transaction.
     * The platform gives no RFC 3463 code: a platform stops mailing an address that bounced, so it is recorded as
     * `5.1.0` (other address status: a hard bounce) with the platform named in the diagnostic.
     */
    async recordPlatformBounce(
      tx: Db | Tx,
      userId: string,
      input: {
        email: string;
        provider: string;
        eventId: string;
        outreachCampaignId: string | null;
        detail: string | null;
      },
    ) {
      const diagnostic = `bounce reported by ${input.provider}${input.detail ? `: ${input.detail.slice(0, 400)}` : ''}`;
      return store(
        tx,
        userId,
        [
          {
            email: input.email,
            recipientDomain: domainOf(input.email),
            type: 'hard',
            status: '5.1.0',
            smtpCode: null,
            diagnostic,
            action: 'failed',
            reportingMta: null,
            senderDomain: null,
            campaignId: null,
            outreachCampaignId: input.outreachCampaignId,
            format: 'platform',
            dedupeKey: sha256(['platform', input.provider, input.eventId, input.email]),
          },
        ],
        deps.clock.now(),
      );
    },

    /**
     * A raw DSN. Idempotency key per recipient: sha256 of (Original-Envelope-Id, else the returned message's
     * Message-ID, else the sha256 of the whole report; the recipient; its Status).
     */
    async ingestDsn(
      userId: string,
      raw: Buffer,
      contentType: string,
      campaignId?: string,
      outreach?: { messageId: string; campaignId: string | null },
    ) {
      const campaign = await ownedCampaign(userId, campaignId);
      const dsn = await parseDsn(raw, contentType);
      const id = dsn.originalEnvelopeId ?? dsn.originalMessageId ?? createHash('sha256').update(raw).digest('hex');
      const pending: Pending[] = dsn.recipients.map((r, i) => {
        const email = normalizeEmail(r.recipient);
        if (!email) throw validationError(`body.recipients.${i}.finalRecipient`, 'not an email address');
        return {
          email,
          recipientDomain: domainOf(email),
          type: classified(r.status, r.diagnostic, `body.recipients.${i}.status`),
          status: r.status,
          smtpCode: r.smtpCode,
          diagnostic: r.diagnostic,
          action: r.action || null,
          reportingMta: dsn.reportingMta,
          senderDomain: senderDomainOf(dsn.sender),
          campaignId: campaign.campaignId,
          outreachMessageId: outreach?.messageId ?? null,
          outreachCampaignId: outreach?.campaignId ?? campaign.outreachCampaignId,
          format: 'dsn' as const,
          dedupeKey: sha256(['dsn', id, email, r.status]),
        };
      });
      return record(userId, pending);
    },

    /**
     * A JSON report. Idempotency key: sha256 of (messageId, email, status, smtpCode, diagnostic, campaignId):
     * without a `messageId`, the same report of the same address counts once.
     */
    async ingestJson(userId: string, body: JsonBounceBody) {
      const email = normalizeEmail(body.email);
      if (!email) throw validationError('email', 'not an email address');
      const status = body.enhancedStatus?.trim() ?? statusOfReply(body.smtpCode!);
      const diagnostic = body.diagnostic?.trim() || null;
      const type = classified(status, diagnostic, body.enhancedStatus !== undefined ? 'enhancedStatus' : 'smtpCode');
      if (body.sender !== undefined && !senderDomainOf(body.sender)) {
        throw validationError('sender', 'not an address or a domain');
      }
      const campaign = await ownedCampaign(userId, body.campaignId);
      return record(userId, [
        {
          email,
          recipientDomain: domainOf(email),
          type,
          status,
          smtpCode: body.smtpCode ?? null,
          diagnostic,
          action: 'failed',
          reportingMta: null,
          senderDomain: senderDomainOf(body.sender),
          campaignId: campaign.campaignId,
          outreachCampaignId: campaign.outreachCampaignId,
          format: 'json',
          dedupeKey: sha256([
            'json',
            body.messageId ?? null,
            email,
            status,
            body.smtpCode,
            diagnostic,
            campaign.campaignId ?? campaign.outreachCampaignId,
          ]),
        },
      ]);
    },

    /**
     * Bounces newest first, and the breakdowns over every bounce matching the filters. Rates are bounces ÷ the
     * outreach mails sent in the same window (docs/outreach.md, Email verification): to the recipient domain, or in the
     * outreach campaign; null where nothing was sent (and for deal campaigns, which send nothing).
     */
    async list(userId: string, query: ListBouncesQuery) {
      const filters: BounceFilters = {
        type: query.type,
        from: query.from ? new Date(query.from) : undefined,
        to: query.to ? new Date(query.to) : undefined,
      };
      if (query.domain !== undefined) {
        const domain = normalizeDomain(query.domain);
        if (!domain) throw validationError('domain', 'not a domain');
        filters.domain = domain;
      }
      if (query.campaignId !== undefined) {
        const owned = await ownedCampaign(userId, query.campaignId);
        filters.campaignId = (owned.campaignId ?? owned.outreachCampaignId)!;
      }
      const [rows, byDomain, byCampaign, blocksBySender] = await Promise.all([
        repo.list(userId, filters, query.limit, decodeCursor(query.cursor)),
        repo.byDomain(userId, filters),
        repo.byCampaign(userId, filters),
        repo.blocksBySender(userId, filters),
      ]);
      const page = pageOf(rows, query.limit);
      const window = { from: filters.from, to: filters.to };
      const [domainSends, campaignSends] = await Promise.all([
        sentMail().sendsByRecipientDomain(
          deps.db,
          userId,
          byDomain.map((r) => r.domain),
          window,
        ),
        sentMail().sendsByCampaign(
          deps.db,
          userId,
          byCampaign.map((r) => r.campaignId!),
          window,
        ),
      ]);
      const withRate = (total: number, sends: number | undefined) =>
        sends ? { sends, rate: Math.min(1, total / sends) } : { sends: sends ?? null, rate: null };
      return {
        bounces: page.items.map(toBounceView),
        nextCursor: page.nextCursor,
        rates: {
          byDomain: byDomain.map((r) => ({ ...r, ...withRate(r.total, domainSends.get(r.domain)) })),
          byCampaign: byCampaign.map((r) => ({
            ...r,
            campaignId: r.campaignId!,
            ...withRate(r.total, campaignSends.get(r.campaignId!)),
          })),
          blocksBySender: blocksBySender.map((r) => ({ senderDomain: r.senderDomain!, blocks: r.blocks })),
        },
      };
    },
  };
}
