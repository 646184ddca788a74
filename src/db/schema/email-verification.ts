import { index, integer, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { campaigns } from './campaigns.ts';
import { createdAt, idColumn } from './columns.ts';
import { outreachCampaigns, outreachMessages } from './outreach.ts';
import { users } from './users.ts';

export const bounceTypes = ['hard', 'soft', 'block'] as const;
export type BounceType = (typeof bounceTypes)[number];

/** One bounced recipient, from a DSN or a JSON report (docs/outreach.md, Email verification). */
export const emailBounces = pgTable(
  'email_bounces',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** The recipient, lower-cased, its domain in punycode. */
    email: text('email').notNull(),
    recipientDomain: text('recipient_domain').notNull(),
    type: text('type', { enum: bounceTypes }).notNull(),
    /** RFC 3463 enhanced status (`5.1.1`), and the SMTP reply code when known. */
    status: text('status').notNull(),
    smtpCode: integer('smtp_code'),
    diagnostic: text('diagnostic'),
    action: text('action'),
    reportingMta: text('reporting_mta'),
    /** The original sender's domain: what a block counts against. */
    senderDomain: text('sender_domain'),
    campaignId: uuid('campaign_id').references(() => campaigns.id, { onDelete: 'set null' }),
    /** The outreach mail that bounced, when the DSN names one we sent (docs/outreach.md "Outreach"). */
    outreachMessageId: uuid('outreach_message_id').references(() => outreachMessages.id, { onDelete: 'set null' }),
    outreachCampaignId: uuid('outreach_campaign_id').references(() => outreachCampaigns.id, { onDelete: 'set null' }),
    /** `dsn` or `json`. */
    format: text('format', { enum: ['dsn', 'json', 'platform'] }).notNull(),
    /** sha256 of what identifies one bounce: the same report sent twice counts once. */
    dedupeKey: text('dedupe_key').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('email_bounces_user_key').on(t.userId, t.dedupeKey),
    index('email_bounces_user_idx').on(t.userId, t.id),
    index('email_bounces_user_email_idx').on(t.userId, t.email),
    index('email_bounces_user_domain_idx').on(t.userId, t.recipientDomain, t.id),
    index('email_bounces_user_campaign_idx').on(t.userId, t.campaignId, t.id),
    index('email_bounces_user_outreach_campaign_idx').on(t.userId, t.outreachCampaignId, t.id),
  ],
);
