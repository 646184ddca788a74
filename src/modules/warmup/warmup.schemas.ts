import { z } from 'zod';
import { warmupStatuses } from '../../db/schema/index.ts';
import { normalizeHostName } from '../../shared/mail/address.ts';
import { paginationQuery } from '../../shared/pagination.ts';

const domain = z
  .string()
  .max(253)
  .transform((value, ctx) => {
    const normalized = normalizeHostName(value);
    if (!normalized) ctx.addIssue({ code: 'custom', message: 'must be a domain name such as example.com' });
    return normalized;
  })
  .describe('The sending domain; stored lower case, an international name in punycode');

const dkimSelector = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/, 'must be a DNS label')
  .max(253)
  .describe('The DKIM selector: the key record is `<selector>._domainkey.<domain>`');

/** The mailbox URL, checked: `smtp(s)://user:pass@host[:port]`. */
export interface MailboxUrl {
  url: string;
  host: string;
  port: number;
  username: string;
}

export function parseMailboxUrl(value: string): MailboxUrl | string {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    return 'must be an smtp:// or smtps:// URL';
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') return 'must be an smtp:// or smtps:// URL';
  if (!url.hostname) return 'must name the host';
  if (!url.username || !url.password) return 'must carry the mailbox user and password (smtp://user:pass@host:port)';
  // Nothing but the server and the login: a query would become transport options (another transport, a proxy…).
  if (url.search || url.hash || (url.pathname !== '' && url.pathname !== '/'))
    return 'must be smtp(s)://user:pass@host[:port], without a path, query or fragment';
  const port = url.port ? Number(url.port) : url.protocol === 'smtps:' ? 465 : 587;
  return { url: url.href, host: url.hostname, port, username: decodeURIComponent(url.username) };
}

const smtpUrl = z
  .string()
  .max(2000)
  .transform((value, ctx) => {
    const parsed = parseMailboxUrl(value);
    if (typeof parsed === 'string') {
      ctx.addIssue({ code: 'custom', message: parsed });
      return z.NEVER;
    }
    return parsed;
  })
  .describe(
    'The sending mailbox, `smtp://user:pass@host:587` (STARTTLS when offered) or `smtps://…:465`; stored ' +
      'encrypted and never returned',
  );

const fromAddress = z
  .string()
  .trim()
  .max(320)
  .regex(/^[^\s@]+@[^\s@]+$/, 'must be an email address')
  .describe('The From address of warmup mail; it must be at the domain');

export const createWarmupBody = z.object({ domain, dkimSelector, smtpUrl, fromAddress });
export type CreateWarmupInput = z.infer<typeof createWarmupBody>;

export const updateWarmupBody = z
  .object({
    status: z
      .enum(['PAUSED', 'WARMING'])
      .optional()
      .describe('`PAUSED` pauses a warming domain; `WARMING` resumes a paused or auto-paused one'),
    dkimSelector: dkimSelector.optional(),
    smtpUrl: smtpUrl.optional(),
    fromAddress: fromAddress.optional(),
  })
  .refine((body) => Object.values(body).some((v) => v !== undefined), { message: 'nothing to update' });
export type UpdateWarmupInput = z.infer<typeof updateWarmupBody>;

const rate = (what: string) => z.number().min(0).max(1).optional().describe(`${what}, a fraction 0–1 (0.05 is 5 %)`);

export const metricsBody = z
  .object({
    openRate: rate('Share of warmup mail opened'),
    replyRate: rate('Share replied to'),
    bounceRate: rate('Share bounced; above 0.10 auto-pauses'),
    spamRate: rate('Share that landed in spam or was reported; above 0.005 auto-pauses'),
  })
  .refine((body) => Object.values(body).some((v) => v !== undefined), { message: 'give at least one rate' });
export type MetricsInput = z.infer<typeof metricsBody>;

export const listWarmupQuery = paginationQuery;

export const warmupMetricsView = z
  .object({
    openRate: z.number().nullable(),
    replyRate: z.number().nullable(),
    bounceRate: z.number().nullable(),
    spamRate: z.number().nullable(),
    recordedAt: z.string(),
  })
  .meta({ id: 'WarmupMetrics' });

export const warmupDomainView = z
  .object({
    id: z.string(),
    domain: z.string(),
    dkimSelector: z.string(),
    fromAddress: z.string(),
    mailbox: z
      .object({ host: z.string(), port: z.int(), username: z.string() })
      .describe('The sending mailbox without its password'),
    status: z.enum(warmupStatuses),
    statusReason: z.string().nullable().describe('Why it was auto-paused'),
    startedAt: z.string().nullable(),
    pausedAt: z.string().nullable(),
    completedAt: z.string().nullable(),
    day: z
      .int()
      .nullable()
      .describe('The schedule day (1–35) today is, counting UTC days spent warming; null before start'),
    todayTarget: z.int().describe("Today's volume in the schedule; 0 unless WARMING"),
    todaySent: z.int().describe('Warmup mails sent for the current schedule day'),
    totalSent: z.int(),
    lastSendError: z
      .object({ day: z.int(), date: z.string(), message: z.string() })
      .nullable()
      .describe('Why the latest day with a failure could not send (all) its mail: the mailbox server answer'),
    schedule: z
      .array(z.object({ week: z.int(), days: z.string(), dailyVolume: z.int() }))
      .describe('The 5-week schedule: 5, 10, 25, 50, 100 mails a day'),
    limits: z
      .object({ bounceRate: z.number(), spamRate: z.number() })
      .describe('Rates above these auto-pause the domain'),
    latestMetrics: warmupMetricsView.nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'WarmupDomain' });
export type WarmupDomainView = z.infer<typeof warmupDomainView>;
