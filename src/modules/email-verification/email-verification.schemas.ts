import { z } from 'zod';
import { bounceTypes } from '../../db/schema/index.ts';
import { isoDate } from '../../shared/http.ts';
import { nextCursor, paginationQuery } from '../../shared/pagination.ts';

export const MAX_TRAP_CHECKS = 1000;

export const jsonBounceBody = z
  .object({
    email: z.string().min(1).max(320).describe('The recipient that bounced'),
    smtpCode: z.number().int().min(400).max(599).optional().describe('The SMTP reply code (550)'),
    enhancedStatus: z
      .string()
      .max(16)
      .optional()
      .describe('RFC 3463 code (`5.1.1`); from `smtpCode` as `X.0.0` when absent. Unknown codes are a 400'),
    diagnostic: z.string().max(2000).nullable().optional().describe('The server text, as in Diagnostic-Code'),
    campaignId: z.string().optional().describe('A campaign of yours; 404 naming `campaignId` otherwise'),
    sender: z.string().max(320).optional().describe('The sending address or domain a block counts against'),
    messageId: z
      .string()
      .max(998)
      .optional()
      .describe('The bounced message; part of the idempotency key, so two bounces of one address can count twice'),
  })
  .refine((b) => b.smtpCode !== undefined || b.enhancedStatus !== undefined, {
    message: 'give smtpCode or enhancedStatus',
    path: ['enhancedStatus'],
  })
  .meta({ id: 'BounceReport' });
export type JsonBounceBody = z.infer<typeof jsonBounceBody>;

export const ingestQuery = z.object({
  campaignId: z.string().optional().describe('For a raw DSN: the campaign the bounced message belonged to'),
});

export const bounceView = z
  .object({
    id: z.string(),
    email: z.string(),
    recipientDomain: z.string(),
    type: z.enum(bounceTypes),
    status: z.string().describe('RFC 3463 enhanced status'),
    smtpCode: z.number().int().nullable(),
    diagnostic: z.string().nullable(),
    action: z.string().nullable().describe('DSN Action (failed, delayed)'),
    reportingMta: z.string().nullable(),
    senderDomain: z.string().nullable(),
    campaignId: z.string().nullable(),
    format: z.enum(['dsn', 'json', 'platform']).describe('platform: reported by a connected outreach platform'),
    createdAt: z.string(),
  })
  .meta({ id: 'Bounce' });

export const ingestResult = z.object({
  received: z.number().int().describe('Bounced recipients in the report'),
  recorded: z.number().int().describe('Of them, new (not seen before)'),
  duplicates: z.number().int().describe('Of them, already recorded: they change nothing'),
  bounces: z.array(bounceView.extend({ duplicate: z.boolean() })),
});

export const listBouncesQuery = paginationQuery.extend({
  type: z.enum(bounceTypes).optional(),
  domain: z.string().max(253).optional().describe('Recipient domain (IDN accepted)'),
  campaignId: z.string().optional(),
  from: isoDate.optional().describe('Received at or after'),
  to: isoDate.optional().describe('Received before'),
});
export type ListBouncesQuery = z.infer<typeof listBouncesQuery>;

const rate = z.number().nullable().describe('bounces ÷ outreach mails sent (same filters); null when none were sent');
const counts = { hard: z.number().int(), soft: z.number().int(), block: z.number().int(), total: z.number().int() };

export const bounceList = z.object({
  bounces: z.array(bounceView),
  nextCursor,
  rates: z.object({
    byDomain: z.array(z.object({ domain: z.string(), ...counts, sends: z.number().int().nullable(), rate })),
    byCampaign: z.array(z.object({ campaignId: z.string(), ...counts, sends: z.number().int().nullable(), rate })),
    blocksBySender: z.array(z.object({ senderDomain: z.string(), blocks: z.number().int() })),
  }),
});

export const trapReasons = [
  'known_trap_pattern',
  'invisible_element',
  'hard_bounced',
  'suppressed',
  'domain_not_found',
  'null_mx',
  'no_mx',
  'typo_domain',
  'disposable_domain',
  'role_account',
  'recently_seen_domain',
] as const;
export type TrapReason = (typeof trapReasons)[number];

export const trapCheckBody = z
  .object({
    emails: z.array(z.string().max(320)).max(MAX_TRAP_CHECKS).optional(),
    leadIds: z.array(z.string().max(100)).max(MAX_TRAP_CHECKS).optional(),
  })
  .refine((b) => (b.emails?.length ?? 0) + (b.leadIds?.length ?? 0) > 0, {
    message: 'give emails or leadIds',
    path: ['emails'],
  })
  .refine((b) => (b.emails?.length ?? 0) + (b.leadIds?.length ?? 0) <= MAX_TRAP_CHECKS, {
    message: `at most ${MAX_TRAP_CHECKS} emails and leadIds together`,
    path: ['leadIds'],
  });
export type TrapCheckBody = z.infer<typeof trapCheckBody>;

export const trapCheckResult = z.object({
  results: z.array(
    z
      .object({
        email: z.string().describe('Normalized'),
        leadIds: z.array(z.string()).describe('The leads asked for with this address'),
        risk: z.enum(['high', 'medium', 'low', 'none']),
        score: z.number().int().describe('Sum of the weights of the reasons, at most 100'),
        reasons: z.array(z.enum(trapReasons)),
      })
      .meta({ id: 'SpamTrapRisk' }),
  ),
  skipped: z.array(z.object({ leadId: z.string(), reason: z.enum(['not_found', 'no_email', 'invalid_email']) })),
});
