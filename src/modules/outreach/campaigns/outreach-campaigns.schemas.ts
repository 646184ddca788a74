import { z } from 'zod';
import { enrollmentStatuses, outreachCampaignStatuses } from '../../../db/schema/index.ts';
import { paginationQuery } from '../../../shared/pagination.ts';
import { templateErrors } from './templates.ts';

export const MAX_STEPS = 10;
export const MAX_SUBJECT = 998;
export const MAX_BODY = 50_000;
export const MAX_ENROLL = 1000;

const validTimeZone = (tz: string) => {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
};

const step = z.object({
  subject: z
    .string()
    .max(MAX_SUBJECT)
    .describe('Template; empty on a follow-up: "Re: <the first subject>" in the same thread'),
  body: z.string().min(1).max(MAX_BODY).describe('Plain-text template'),
  delayDays: z.number().int().min(0).max(365).default(0).describe('Days after the previous step (first step: 0)'),
});

export const sendingWindow = z
  .object({
    timezone: z.string().max(64).refine(validTimeZone, 'must be an IANA time zone such as Europe/Berlin'),
    days: z
      .array(z.number().int().min(1).max(7))
      .min(1)
      .max(7)
      .transform((d) => [...new Set(d)].sort())
      .describe('1 = Monday … 7 = Sunday'),
    startHour: z.number().int().min(0).max(23),
    endHour: z.number().int().min(1).max(24),
  })
  .refine((w) => w.endHour > w.startHour, { path: ['endHour'], message: 'must be after startHour' })
  .describe('Mail goes out on these local days between startHour and endHour');

export const createOutreachCampaignBody = z
  .object({
    connectionId: z.string(),
    name: z.string().trim().min(1).max(200),
    steps: z.array(step).min(1).max(MAX_STEPS),
    window: sendingWindow.default({ timezone: 'UTC', days: [1, 2, 3, 4, 5], startHour: 9, endHour: 17 }),
    dailyLimit: z.number().int().min(1).max(2000).default(30).describe('Mails per mailbox per day from this campaign'),
    mailboxIds: z.array(z.string()).min(1).max(50).optional().describe('Default: every mailbox of the connection'),
    stopOnReply: z.boolean().default(true),
    minGapSeconds: z.number().int().min(0).max(86_400).default(60),
    maxGapSeconds: z.number().int().min(0).max(86_400).default(300),
    trackOpens: z.boolean().default(false).describe('A 1×1 image in an HTML part counts opens'),
  })
  .superRefine((body, ctx) => {
    if (body.maxGapSeconds < body.minGapSeconds)
      ctx.addIssue({ code: 'custom', path: ['maxGapSeconds'], message: 'must be at least minGapSeconds' });
    body.steps.forEach((s, i) => {
      if (i === 0 && s.delayDays !== 0)
        ctx.addIssue({ code: 'custom', path: ['steps', 0, 'delayDays'], message: 'the first step goes out at once' });
      if (i === 0 && !s.subject.trim())
        ctx.addIssue({ code: 'custom', path: ['steps', 0, 'subject'], message: 'the first step needs a subject' });
      for (const field of ['subject', 'body'] as const) {
        for (const e of templateErrors(s[field])) {
          ctx.addIssue({ code: 'custom', path: ['steps', i, field], message: `${e.message} (position ${e.position})` });
        }
      }
    });
  });
export type CreateOutreachCampaignInput = z.infer<typeof createOutreachCampaignBody>;

export const campaignStatusBody = z.object({ status: z.enum(['active', 'paused']) });

export const enrollBody = z.object({
  leadIds: z.array(z.string().max(100)).min(1).max(MAX_ENROLL),
});

export const skipReasons = [
  'not_found',
  'duplicate',
  'suppressed',
  'invalid_email',
  'unvalidated',
  'unsubscribed',
  'missing_variable',
] as const;
export type SkipReason = (typeof skipReasons)[number];

export const enrollResult = z.object({
  uploaded: z.number().int(),
  skipped: z.partialRecord(z.enum(skipReasons), z.number().int()).describe('Leads left out, counted by reason'),
  skippedIds: z.array(z.object({ id: z.string(), reason: z.enum(skipReasons), detail: z.string().optional() })),
});

export const outreachCampaignView = z
  .object({
    id: z.string(),
    connectionId: z.string(),
    name: z.string(),
    status: z.enum(outreachCampaignStatuses),
    steps: z.array(z.object({ subject: z.string(), body: z.string(), delayDays: z.number().int() })),
    window: z.object({
      timezone: z.string(),
      days: z.array(z.number().int()),
      startHour: z.number().int(),
      endHour: z.number().int(),
    }),
    dailyLimit: z.number().int(),
    mailboxIds: z.array(z.string()),
    stopOnReply: z.boolean(),
    minGapSeconds: z.number().int(),
    maxGapSeconds: z.number().int(),
    trackOpens: z.boolean(),
    externalId: z.string().nullable().describe('The platform’s campaign id (`instantly`, `smartlead`)'),
    leads: z.partialRecord(z.enum(enrollmentStatuses), z.number().int()).describe('Enrolled leads by state'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'OutreachCampaign' });
export type OutreachCampaignView = z.infer<typeof outreachCampaignView>;

export const listOutreachCampaignsQuery = paginationQuery.extend({ connectionId: z.string().optional() });

const figures = {
  sent: z.number().int().describe('Mails the mail server accepted'),
  unconfirmed: z
    .number()
    .int()
    .describe('Mails whose answer was lost (the connection broke once the data went out): they may not have arrived'),
  opened: z.number().int(),
  replied: z.number().int(),
  bounced: z.number().int(),
  unsubscribed: z.number().int(),
};
export const analyticsView = z.object({
  campaignId: z.string(),
  enrolled: z.number().int(),
  totals: z.object({
    ...figures,
    openRate: z.number().nullable(),
    replyRate: z.number().nullable(),
    bounceRate: z.number().nullable(),
  }),
  perStep: z.array(
    z.object({
      step: z.number().int().describe('1-based'),
      ...figures,
      bounced: z.number().int().nullable().describe('null when a platform does not count it per step'),
      unsubscribed: z.number().int().nullable().describe('null when a platform does not count it per step'),
    }),
  ),
  perMailbox: z
    .array(z.object({ mailboxId: z.string(), email: z.string(), ...figures }))
    .describe('Empty for a platform campaign'),
  source: z
    .enum(['quarry', 'instantly', 'smartlead'])
    .describe('Who counted: Quarry (built-in sender, in SQL over its own records) or the platform that sends'),
});
