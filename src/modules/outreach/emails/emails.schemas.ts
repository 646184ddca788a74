import { z } from 'zod';
import { inboundKinds, messageStatuses } from '../../../db/schema/index.ts';
import { paginationQuery } from '../../../shared/pagination.ts';
import { MAX_BODY, MAX_SUBJECT } from '../campaigns/outreach-campaigns.schemas.ts';

export const sendEmailBody = z
  .object({
    mailboxId: z.string().describe('The sending mailbox (GET /api/outreach/accounts)'),
    to: z
      .string()
      .max(320)
      .optional()
      .describe('The recipient; default: the lead’s address or, for a reply, who wrote'),
    leadId: z.string().optional(),
    inReplyTo: z
      .string()
      .max(998)
      .optional()
      .describe(
        'The Message-ID (with or without <>) of a mail of yours or a reply in your inbox: answered in its thread',
      ),
    subject: z.string().max(MAX_SUBJECT).optional().describe('Default for a reply: "Re: <its subject>"'),
    body: z.string().min(1).max(MAX_BODY).describe('Plain text'),
  })
  .refine((b) => b.to || b.leadId || b.inReplyTo, { path: ['to'], message: 'give to, leadId or inReplyTo' });
export type SendEmailInput = z.infer<typeof sendEmailBody>;

export const emailView = z
  .object({
    id: z.string(),
    direction: z.enum(['outbound', 'inbound']),
    status: z
      .enum(messageStatuses)
      .describe('Outbound: SENT (the server accepted it), UNCONFIRMED (the answer was lost: it may not have arrived)'),
    unconfirmed: z.boolean().describe('An outbound mail whose answer was lost (status UNCONFIRMED)'),
    kind: z.enum(inboundKinds).nullable().describe('Inbound: reply, auto_reply or bounce'),
    messageId: z.string().describe('The RFC 5322 Message-ID, without <>'),
    threadId: z.string(),
    from: z.string(),
    to: z.string(),
    subject: z.string(),
    text: z.string(),
    step: z.number().int().nullable().describe('The campaign step (1-based) of a sequence mail'),
    campaignId: z.string().nullable(),
    leadId: z.string().nullable(),
    mailboxId: z.string().nullable(),
    at: z.string().describe('Sent or received at'),
    openedAt: z.string().nullable(),
  })
  .meta({ id: 'OutreachEmail' });
export type EmailView = z.infer<typeof emailView>;

export const threadView = z
  .object({
    threadId: z.string(),
    leadId: z.string().nullable(),
    campaignId: z.string().nullable(),
    mailboxId: z.string().nullable(),
    subject: z.string(),
    lastMessageAt: z.string(),
    messages: z.array(emailView).describe('Every mail of the thread, oldest first'),
  })
  .meta({ id: 'OutreachThread' });

export const listEmailsQuery = paginationQuery.extend({
  leadId: z.string().optional(),
  campaignId: z.string().optional(),
  mailboxId: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});
