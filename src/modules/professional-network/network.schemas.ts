import { z } from 'zod';
import { networkJobStatuses } from '../../db/schema/index.ts';
import { paginationQuery } from '../../shared/pagination.ts';

export const credentialStatuses = ['ACTIVE', 'RATE_LIMITED', 'SOFT_BANNED', 'INVALID'] as const;
export type CredentialStatus = (typeof credentialStatuses)[number];

/** Most leads one job (and one commonalities analysis) takes. */
export const MAX_JOB_LEADS = 500;
export const MAX_COMMONALITY_LEADS = 200;

const uuid = z.uuid('must be a UUID');

export const createCredentialBody = z.strictObject({
  cookie: z
    .string()
    .trim()
    .min(8, 'at least 8 characters')
    .max(4096)
    .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
    .refine((v) => !/[;,"\\]/.test(v), 'a cookie value cannot hold ; , " or \\')
    .describe('The session cookie value (the `li_at` cookie of a logged-in browser); stored encrypted, never returned'),
  cookieName: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and -')
    .default('li_at')
    .describe('The cookie name; default `li_at`'),
  name: z.string().trim().min(1).max(200).optional().describe('A label of yours'),
  dailyLimit: z
    .number()
    .int()
    .min(1)
    .max(10_000)
    .optional()
    .describe('Requests per UTC day; default LINKEDIN_DAILY_LIMIT (80)'),
});
export type CreateCredentialInput = z.infer<typeof createCredentialBody>;

export const credentialView = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    cookieName: z.string(),
    cookie: z.string().describe('Masked: only its last 4 characters'),
    status: z
      .enum(credentialStatuses)
      .describe(
        'Computed: INVALID (the network rejected the login) before SOFT_BANNED (it answered a challenge in the ' +
          'last 24 hours) before RATE_LIMITED (no requests left today) before ACTIVE',
      ),
    statusReason: z.string().nullable().describe('What the network answered when it was marked'),
    dailyLimit: z.number().int(),
    requestsToday: z.number().int(),
    requestsRemaining: z.number().int(),
    lastUsedAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'NetworkCredential' });
export type CredentialView = z.infer<typeof credentialView>;

export const validateBody = z.strictObject({
  url: z.string().min(1).max(2048).describe('A profile URL: LINKEDIN_BASE_URL/in/<profile-name>'),
});

export const profileDataView = z
  .object({
    name: z.string().nullable(),
    firstName: z.string().nullable(),
    lastName: z.string().nullable(),
    headline: z.string().nullable(),
    title: z.string().nullable(),
    company: z.string().nullable(),
    location: z.string().nullable(),
    description: z.string().nullable(),
    imageUrl: z.string().nullable(),
  })
  .meta({ id: 'NetworkProfile' });

export const validateView = z.object({
  url: z.string().describe('The canonical profile URL'),
  slug: z.string(),
  reachable: z.boolean().describe('The page answered with the profile'),
  httpStatus: z.number().int().nullable(),
  reason: z.string().nullable().describe('Why it is not reachable (a challenge, a login wall, a 404…)'),
  profile: profileDataView.nullable().describe('Its public metadata (meta tags, JSON-LD) when reachable'),
});
export type ValidateView = z.infer<typeof validateView>;

export const enrichBody = z
  .strictObject({
    leadId: uuid.optional().describe('Enrich this lead now (the answer waits for it)'),
    leadIds: z
      .array(uuid)
      .min(1, 'at least 1 id')
      .max(MAX_JOB_LEADS, `at most ${MAX_JOB_LEADS} ids`)
      .optional()
      .describe('Enrich these leads in a background job, one at a human pace'),
    profileUrl: z
      .string()
      .min(1)
      .max(2048)
      .optional()
      .describe("With `leadId`: the profile to read (default the lead's `customFields.profileUrl` or `sourceUrl`)"),
    credentialId: uuid.optional().describe('Default: your newest credential that is ACTIVE'),
  })
  .superRefine((body, ctx) => {
    if ((body.leadId === undefined) === (body.leadIds === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['leadId'], message: 'give exactly one of leadId and leadIds' });
    }
    if (body.profileUrl !== undefined && body.leadIds !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['profileUrl'], message: 'only with leadId' });
    }
  });
export type EnrichInput = z.infer<typeof enrichBody>;

export const enrichedLeadView = z.object({
  id: z.string(),
  jobTitle: z.string().nullable(),
  company: z.string().nullable(),
  location: z.string().nullable(),
  profileUrl: z.string(),
});

export const enrichOneView = z.object({
  lead: enrichedLeadView,
  profile: profileDataView,
  credential: credentialView,
});
export type EnrichOneView = z.infer<typeof enrichOneView>;

export const jobView = z
  .object({
    id: z.string(),
    status: z.enum(networkJobStatuses).describe('STOPPED: a challenge, a rejected login or the daily limit'),
    credentialId: z.string().nullable(),
    total: z.number().int(),
    processed: z.number().int(),
    enriched: z.number().int(),
    failed: z.number().int(),
    progress: z.number().int().describe('0–100'),
    stopReason: z.string().nullable(),
    createdAt: z.string(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
  })
  .meta({ id: 'NetworkEnrichJob' });
export type JobView = z.infer<typeof jobView>;

export const jobDetailView = jobView
  .extend({
    results: z.array(
      z.object({
        leadId: z.string(),
        status: z.enum(['ENRICHED', 'FAILED', 'SKIPPED']),
        error: z.string().optional(),
      }),
    ),
  })
  .meta({ id: 'NetworkEnrichJobDetail' });
export type JobDetailView = z.infer<typeof jobDetailView>;

export const listQuery = paginationQuery;
export type ListQuery = z.infer<typeof listQuery>;

export const commonalitiesBody = z.strictObject({
  leadIds: z
    .array(uuid)
    .min(2, 'at least 2 ids')
    .max(MAX_COMMONALITY_LEADS, `at most ${MAX_COMMONALITY_LEADS} ids`)
    .describe('The leads (their titles, companies, locations and profile data) to compare'),
});

export const networkCommonalitiesView = z
  .object({
    summary: z.string(),
    traits: z.array(z.object({ trait: z.string(), evidence: z.string(), leadCount: z.number().int() })),
    leadCount: z.number().int(),
    method: z
      .enum(['ai', 'heuristic'])
      .describe('`heuristic`: counted shared values (no AI provider configured), not an analysis'),
    model: z.string().nullable(),
  })
  .meta({ id: 'NetworkCommonalities' });
export type NetworkCommonalitiesView = z.infer<typeof networkCommonalitiesView>;
