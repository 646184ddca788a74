import { z } from 'zod';
import { outreachProviders } from '../../../db/schema/index.ts';
import { normalizeEmail } from '../../../shared/mail/address.ts';
import { parseMailboxUrl } from '../../../shared/mail/mailbox.ts';
import { paginationQuery } from '../../../shared/pagination.ts';

export const MAX_MAILBOXES = 50;

const mailboxUrl = (kind: 'smtp' | 'imap') =>
  z
    .string()
    .max(2000)
    .refine(
      (v) => parseMailboxUrl(v.trim(), kind) !== undefined,
      `must be ${kind}://user:pass@host[:port] or ${kind}s://…, without a path, query or fragment`,
    )
    .transform((v) => v.trim());

const mailboxInput = z.object({
  email: z
    .string()
    .max(320)
    .transform((v, ctx) => {
      const email = normalizeEmail(v);
      if (!email) ctx.addIssue({ code: 'custom', message: 'must be an email address' });
      return email ?? '';
    })
    .describe('The sending address (From)'),
  fromName: z.string().trim().min(1).max(200).optional(),
  smtpUrl: mailboxUrl('smtp').describe('`smtp(s)://user:pass@host:port`; stored encrypted, never returned'),
  imapUrl: mailboxUrl('imap').describe('`imap(s)://user:pass@host:port`: replies and bounces are read from INBOX'),
  dailyLimit: z.number().int().min(1).max(2000).default(50).describe('Mails per day over every campaign'),
});

export const createConnectionBody = z
  .object({
    provider: z.enum(outreachProviders),
    name: z.string().trim().min(1).max(200),
    apiKey: z.string().trim().min(8).max(500).optional().describe('`instantly`, `smartlead`: the API key'),
    mailboxes: z.array(mailboxInput).min(1).max(MAX_MAILBOXES).optional().describe('`smtp`: 1–50 mailboxes'),
  })
  .superRefine((body, ctx) => {
    if (body.provider === 'smtp') {
      if (!body.mailboxes) ctx.addIssue({ code: 'custom', path: ['mailboxes'], message: 'required for smtp' });
      const seen = new Set<string>();
      body.mailboxes?.forEach((m, i) => {
        if (seen.has(m.email))
          ctx.addIssue({ code: 'custom', path: ['mailboxes', i, 'email'], message: 'listed twice' });
        seen.add(m.email);
      });
    } else if (!body.apiKey)
      ctx.addIssue({ code: 'custom', path: ['apiKey'], message: `required for ${body.provider}` });
  });
export type CreateConnectionInput = z.infer<typeof createConnectionBody>;

export const mailboxView = z
  .object({
    id: z.string(),
    connectionId: z.string(),
    provider: z.enum(outreachProviders),
    email: z.string(),
    fromName: z.string().nullable(),
    dailyLimit: z.number().int(),
    sentToday: z.number().int().describe('Mails sent from it since 00:00 UTC'),
    smtp: z.object({ host: z.string(), port: z.number().int() }).nullable(),
    imap: z
      .object({
        host: z.string(),
        port: z.number().int(),
        lastCheckedAt: z.string().nullable(),
        error: z.string().nullable().describe('The last read’s failure, if it failed'),
      })
      .nullable(),
    username: z.string().nullable(),
    externalId: z.string().nullable().describe('The platform’s account id'),
    createdAt: z.string(),
  })
  .meta({ id: 'OutreachAccount' });
export type MailboxView = z.infer<typeof mailboxView>;

export const connectionView = z
  .object({
    id: z.string(),
    provider: z.enum(outreachProviders),
    name: z.string(),
    apiKey: z.string().nullable().describe('Masked: the last four characters'),
    accountLabel: z.string().nullable(),
    verifiedAt: z.string(),
    mailboxes: z.array(mailboxView).describe('`smtp`: the mailboxes given; platforms: their sending accounts'),
    webhook: z
      .object({
        url: z.string().describe('The inbound webhook address (a path when PUBLIC_URL is not set); it holds a secret'),
        registered: z.boolean().describe('Whether Quarry pointed the platform’s webhooks at it'),
        shownOnce: z.literal(true),
      })
      .nullable()
      .describe('Platforms, in the answer that creates the connection only; null everywhere else'),
    createdAt: z.string(),
  })
  .meta({ id: 'OutreachConnection' });
export type ConnectionView = z.infer<typeof connectionView>;

export const listConnectionsQuery = paginationQuery;
export const listAccountsQuery = paginationQuery.extend({ connectionId: z.string().optional() });

export const accountTestBody = z
  .object({
    dkimSelector: z
      .string()
      .trim()
      .toLowerCase()
      .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/, 'must be a DNS label')
      .optional()
      .describe('Default: the common selectors default, google, selector1, selector2, k1, s1, mail, dkim'),
  })
  .default({});

export const accountTestView = z.object({
  domain: z.string(),
  checks: z.array(
    z.object({
      check: z.enum(['mx', 'spf', 'dkim', 'dmarc']),
      pass: z.boolean(),
      record: z.string().nullable().describe('What DNS answered'),
      message: z.string(),
    }),
  ),
  passed: z.number().int().describe('Checks that passed, of 4'),
});

export const accountWarmupBody = z.object({
  enabled: z.boolean(),
  dkimSelector: z
    .string()
    .trim()
    .toLowerCase()
    .max(253)
    .optional()
    .describe('The DKIM selector of the mailbox’s domain; needed the first time warmup is enabled'),
});
