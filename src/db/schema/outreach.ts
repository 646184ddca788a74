import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn, updatedAt } from './columns.ts';
import { leads } from './leads.ts';
import { users } from './users.ts';
import { warmupDomains } from './warmup.ts';

/**
 * Outreach (docs/outreach.md "Outreach"): connections to a sending provider, their mailboxes, campaigns with sequences, the
 * leads enrolled in them and every message sent or received. `smtp` is the built-in provider (the service schedules,
 * sends over SMTP and reads replies over IMAP); `instantly` and `smartlead` are platforms reached over their APIs.
 */
export const outreachProviders = ['smtp', 'instantly', 'smartlead'] as const;
export type OutreachProvider = (typeof outreachProviders)[number];

export const outreachConnections = pgTable(
  'outreach_connections',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    provider: text('provider', { enum: outreachProviders }).notNull(),
    name: text('name').notNull(),
    /** A platform's API key, sealed (src/shared/crypto.ts); null for `smtp` (its mailboxes hold the credentials). */
    apiKeyEncrypted: text('api_key_encrypted'),
    /** What GET shows of the key: its last four characters. */
    apiKeyHint: text('api_key_hint'),
    /** The platform's workspace or account name as its auth check answered it. */
    accountLabel: text('account_label'),
    verifiedAt: tsColumn('verified_at').notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('outreach_connections_user_idx').on(t.userId, t.id)],
);

/** A sending mailbox ("account" in the API): an SMTP+IMAP mailbox of `smtp`, or a platform's sending account. */
export const outreachMailboxes = pgTable(
  'outreach_mailboxes',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    connectionId: uuid('connection_id')
      .notNull()
      .references(() => outreachConnections.id, { onDelete: 'cascade' }),
    /** The sending address, lower-cased, its domain in punycode. */
    email: text('email').notNull(),
    fromName: text('from_name'),
    /** Mails this mailbox sends per day at most, over every campaign. */
    dailyLimit: integer('daily_limit').notNull(),
    /** `smtp(s)://user:pass@host:port` and `imap(s)://user:pass@host:port`, sealed; never returned. */
    smtpUrlEncrypted: text('smtp_url_encrypted'),
    imapUrlEncrypted: text('imap_url_encrypted'),
    /** What GET shows of the mailbox (no password). */
    smtpHost: text('smtp_host'),
    smtpPort: integer('smtp_port'),
    imapHost: text('imap_host'),
    imapPort: integer('imap_port'),
    username: text('username'),
    /** The platform's id of the account (`instantly`, `smartlead`). */
    externalId: text('external_id'),
    /** The warmup domain warming this mailbox (`smtp`: POST /api/outreach/accounts/{id}/warmup). */
    warmupDomainId: uuid('warmup_domain_id').references(() => warmupDomains.id, { onDelete: 'set null' }),
    /** IMAP position: the folder's UIDVALIDITY and the highest UID processed. */
    imapUidValidity: text('imap_uid_validity'),
    imapLastUid: bigint('imap_last_uid', { mode: 'number' }).notNull().default(0),
    imapCheckedAt: tsColumn('imap_checked_at'),
    imapError: text('imap_error'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('outreach_mailboxes_connection_email_idx').on(t.connectionId, t.email),
    index('outreach_mailboxes_user_idx').on(t.userId, t.id),
  ],
);

export const outreachCampaignStatuses = ['DRAFT', 'ACTIVE', 'PAUSED', 'COMPLETED'] as const;
export type OutreachCampaignStatus = (typeof outreachCampaignStatuses)[number];

/** One step of a sequence: templates (docs/outreach.md "Outreach", Templates) and the days to wait after the previous step. */
export interface OutreachStep {
  subject: string;
  body: string;
  delayDays: number;
}

/** When mail may go out: local days (1 = Monday … 7 = Sunday) and hours [startHour, endHour) in `timezone`. */
export interface SendingWindow {
  timezone: string;
  days: number[];
  startHour: number;
  endHour: number;
}

export const outreachCampaigns = pgTable(
  'outreach_campaigns',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    connectionId: uuid('connection_id')
      .notNull()
      .references(() => outreachConnections.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    status: text('status', { enum: outreachCampaignStatuses }).notNull().default('DRAFT'),
    steps: jsonb('steps').$type<OutreachStep[]>().notNull(),
    window: jsonb('window').$type<SendingWindow>().notNull(),
    /** Mails per mailbox per day from this campaign. */
    dailyLimit: integer('daily_limit').notNull(),
    /** Mailboxes rotated through (each lead keeps the mailbox of its first mail, so a thread has one sender). */
    mailboxIds: uuid('mailbox_ids').array().notNull(),
    stopOnReply: boolean('stop_on_reply').notNull().default(true),
    /** Random gap between two sends of one mailbox, seconds; the minimum may be 0. */
    minGapSeconds: integer('min_gap_seconds').notNull(),
    maxGapSeconds: integer('max_gap_seconds').notNull(),
    trackOpens: boolean('track_opens').notNull().default(false),
    /** The platform's campaign id (`instantly`, `smartlead`). */
    externalId: text('external_id'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('outreach_campaigns_user_idx').on(t.userId, t.id)],
);

export const enrollmentStatuses = ['ACTIVE', 'COMPLETED', 'REPLIED', 'BOUNCED', 'UNSUBSCRIBED', 'STOPPED'] as const;
export type EnrollmentStatus = (typeof enrollmentStatuses)[number];

/** A lead in a campaign: the next step to send and when. */
export const outreachEnrollments = pgTable(
  'outreach_enrollments',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    campaignId: uuid('campaign_id')
      .notNull()
      .references(() => outreachCampaigns.id, { onDelete: 'cascade' }),
    leadId: uuid('lead_id')
      .notNull()
      .references(() => leads.id, { onDelete: 'cascade' }),
    /** The address at enrollment, normalized. */
    email: text('email').notNull(),
    status: text('status', { enum: enrollmentStatuses }).notNull().default('ACTIVE'),
    /** Index into the campaign's steps of the next mail; equal to their count when all were sent. */
    nextStep: integer('next_step').notNull().default(0),
    /** When the next step is due (null when nothing is left to send). */
    nextSendAt: tsColumn('next_send_at'),
    /** The mailbox of the lead's first mail; later steps go from it, in the same thread. */
    mailboxId: uuid('mailbox_id').references(() => outreachMailboxes.id, { onDelete: 'set null' }),
    /** The platform's lead id. */
    externalId: text('external_id'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('outreach_enrollments_campaign_lead_idx').on(t.campaignId, t.leadId),
    index('outreach_enrollments_campaign_idx').on(t.campaignId, t.id),
    index('outreach_enrollments_lead_idx').on(t.userId, t.leadId),
    // The sequencer's scan: only due, active enrollments, oldest first (its cost follows due sends, not size).
    index('outreach_enrollments_due_idx')
      .on(t.nextSendAt)
      .where(sql`${t.status} = 'ACTIVE' AND ${t.nextSendAt} IS NOT NULL`),
  ],
);

export const messageDirections = ['outbound', 'inbound'] as const;
/**
 * Outbound: PENDING (the intent, stored before the SMTP transaction), SENT, FAILED (refused; not sent),
 * UNCONFIRMED (a worker died between intent and answer: never sent again, docs/outreach.md "Outreach", Exactly once).
 * Inbound: RECEIVED.
 */
export const messageStatuses = ['PENDING', 'SENT', 'FAILED', 'UNCONFIRMED', 'RECEIVED'] as const;
export type MessageStatus = (typeof messageStatuses)[number];
/** What an inbound message is: a reply, an automatic reply (RFC 3834), a delivery status notification. */
export const inboundKinds = ['reply', 'auto_reply', 'bounce'] as const;

export const outreachMessages = pgTable(
  'outreach_messages',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    mailboxId: uuid('mailbox_id').references(() => outreachMailboxes.id, { onDelete: 'set null' }),
    campaignId: uuid('campaign_id').references(() => outreachCampaigns.id, { onDelete: 'set null' }),
    enrollmentId: uuid('enrollment_id').references(() => outreachEnrollments.id, { onDelete: 'set null' }),
    leadId: uuid('lead_id').references(() => leads.id, { onDelete: 'set null' }),
    /** The sequence step (0-based) of a campaign mail. */
    step: integer('step'),
    direction: text('direction', { enum: messageDirections }).notNull(),
    status: text('status', { enum: messageStatuses }).notNull(),
    kind: text('kind', { enum: inboundKinds }),
    /** The RFC 5322 Message-ID, without angle brackets. */
    messageId: text('message_id').notNull(),
    inReplyTo: text('in_reply_to'),
    references: text('references').array().notNull().default(sql`'{}'::text[]`),
    /** The Message-ID of the thread's first mail. */
    threadId: text('thread_id').notNull(),
    fromEmail: text('from_email').notNull(),
    toEmail: text('to_email').notNull(),
    subject: text('subject').notNull(),
    bodyText: text('body_text').notNull(),
    sentAt: tsColumn('sent_at'),
    receivedAt: tsColumn('received_at'),
    openedAt: tsColumn('opened_at'),
    openCount: integer('open_count').notNull().default(0),
    /** A platform's id of the mail (Instantly's email id, Smartlead's stats id): what a reply through it names. */
    externalId: text('external_id'),
    error: text('error'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('outreach_messages_message_id_idx').on(t.userId, t.messageId),
    // Exactly once: one outbound mail per enrollment and step.
    uniqueIndex('outreach_messages_step_idx')
      .on(t.enrollmentId, t.step)
      .where(sql`${t.direction} = 'outbound' AND ${t.enrollmentId} IS NOT NULL`),
    index('outreach_messages_user_idx').on(t.userId, t.id),
    index('outreach_messages_campaign_idx').on(t.campaignId, t.step),
    index('outreach_messages_thread_idx').on(t.userId, t.threadId),
    index('outreach_messages_lead_idx').on(t.userId, t.leadId, t.id),
    // A mailbox's sends of one day (daily limits) and stale intents (reconciliation).
    index('outreach_messages_mailbox_sent_idx').on(t.mailboxId, t.createdAt).where(sql`${t.direction} = 'outbound'`),
    index('outreach_messages_pending_idx').on(t.createdAt).where(sql`${t.status} = 'PENDING'`),
  ],
);

/** Unsubscribes through a mail's link (RFC 8058 one-click or the page): what analytics count. */
export const outreachUnsubscribes = pgTable(
  'outreach_unsubscribes',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    messageId: uuid('message_id')
      .notNull()
      .references(() => outreachMessages.id, { onDelete: 'cascade' }),
    campaignId: uuid('campaign_id').references(() => outreachCampaigns.id, { onDelete: 'set null' }),
    email: text('email').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('outreach_unsubscribes_message_idx').on(t.messageId),
    index('outreach_unsubscribes_campaign_idx').on(t.campaignId),
  ],
);

/**
 * Who runs the built-in sequencer now (docs/outreach.md "Outreach", Sequencer): one process at a time over the whole
 * deployment, so each mailbox's daily limit, its gaps and each user's credit allowance, counted in that process,
 * hold however many workers there are. A lease, renewed while the run lasts: a process that dies loses it after
 * OUTREACH_SEND_LEASE_SECONDS.
 */
export const outreachSequencerLease = pgTable('outreach_sequencer_lease', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  leaseUntil: tsColumn('lease_until').notNull(),
});
