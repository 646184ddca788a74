import { z } from 'zod';
import { leadStatuses } from '../../db/schema/index.ts';
import { isUuid } from '../../shared/ids.ts';
import { isEmailSyntaxValid } from '../../shared/mail/syntax.ts';
import { paginationQuery } from '../../shared/pagination.ts';

export const MAX_TAGS = 50;
export const MAX_BULK_IDS = 1000;
/** Longest values a lead holds, through the API and from scraping (the leads writer cuts scraped values to these). */
export const LEAD_LIMITS = {
  firstName: 200,
  lastName: 200,
  email: 254,
  phone: 50,
  company: 200,
  jobTitle: 200,
  sourceUrl: 2048,
  /** One custom field value (scraped; the API does not set custom fields). */
  customFieldValue: 10_000,
} as const;

const status = z.enum(leadStatuses);

/** Set by email validation only (decisions.md), so no update body may set them. */
export const VALIDATION_STATUSES = ['VALID', 'INVALID', 'RISKY'] as const;
const BY_VALIDATION_ONLY =
  'VALID, INVALID and RISKY are set by email validation only: POST /api/leads/{id}/validate-email or ' +
  'POST /api/leads/validate-bulk';
/** A status an update may set (PATCH /api/leads/{id}, PATCH /api/leads/bulk, the chat's updateLeads). */
export const settableStatus = status
  .exclude(VALIDATION_STATUSES, {
    error: (issue) =>
      (VALIDATION_STATUSES as readonly unknown[]).includes(issue.input) ? BY_VALIDATION_ONLY : undefined,
  })
  .describe('VALID, INVALID and RISKY are not settable: email validation sets them (validate-email, validate-bulk)');
const uuidString = z.string().refine(isUuid, 'must be a UUID');

/** Optional text: trimmed; an empty string or null clears it. */
const text = (max: number) =>
  z
    .string()
    .trim()
    .max(max)
    .transform((v) => (v === '' ? null : v))
    .nullable()
    .optional();

/** An address that passes the syntax check of the email validator (src/shared/mail/syntax.ts). */
export const leadEmail = z
  .string()
  .trim()
  .max(LEAD_LIMITS.email, `must be at most ${LEAD_LIMITS.email} characters`)
  .refine((v) => v === '' || isEmailSyntaxValid(v), 'invalid email address')
  .transform((v) => (v === '' ? null : v))
  .nullable()
  .optional();

const tag = z.string().trim().min(1, 'tags must not be empty').max(100);
/** Distinct tags, first occurrence first. */
const tagList = (max: number) =>
  z
    .array(tag)
    .max(max * 2)
    .transform((tags) => [...new Set(tags)])
    .refine((tags) => tags.length <= max, `at most ${max} distinct tags`);

const leadFields = {
  firstName: text(LEAD_LIMITS.firstName),
  lastName: text(LEAD_LIMITS.lastName),
  email: leadEmail,
  phone: text(LEAD_LIMITS.phone),
  company: text(LEAD_LIMITS.company),
  jobTitle: text(LEAD_LIMITS.jobTitle),
};

export const createLeadBody = z.object({
  sourceUrl: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(LEAD_LIMITS.sourceUrl),
  ...leadFields,
});

export const updateLeadBody = z
  .object({
    ...leadFields,
    status: settableStatus.optional(),
    tags: tagList(MAX_TAGS).optional().describe(`Replaces the tags: trimmed, de-duplicated, at most ${MAX_TAGS}`),
    notes: text(10_000),
  })
  .describe('Every field is optional; an empty body changes nothing and answers the lead.');

export const listLeadsQuery = paginationQuery.extend({
  status: status.optional(),
  company: z.string().trim().min(1).max(200).optional().describe('Exact company name, case-insensitive'),
  jobId: uuidString.optional().describe('Leads found by this job (UUID)'),
  sourceId: uuidString.optional().describe('Leads of this source (UUID)'),
  tag: tag.optional().describe('Leads carrying this tag'),
  q: z
    .string()
    .trim()
    .min(2)
    .max(200)
    .optional()
    .describe('Text found in the name, email, company or job title (any case, a substring)'),
});

/** The order of `GET /api/leads`: by id (UUIDv7), so by creation; each order walks the same indexes. */
export const LEAD_SORTS = ['newest', 'oldest'] as const;
export type LeadSort = (typeof LEAD_SORTS)[number];

/** GET /api/leads: the list's filters (shared with pushes and the chat's searchLeads) and its order. */
export const listLeadsRouteQuery = listLeadsQuery.extend({
  sort: z
    .enum(LEAD_SORTS)
    .default('newest')
    .describe('newest (default) or oldest first; a `nextCursor` continues in the order it was given for'),
});

/** POST /api/leads/export: the selected leads, or every lead the list's filters find (all of them without either). */
export const exportLeadsBody = z
  .object({
    leadIds: z
      .array(z.string().max(100))
      .min(1)
      .max(MAX_BULK_IDS)
      .optional()
      .describe(`Up to ${MAX_BULK_IDS} of your leads (ids that name none are left out)`),
    filter: listLeadsQuery
      .omit({ limit: true, cursor: true })
      .strict()
      .optional()
      .describe('The filters of GET /api/leads: every lead they find, newest first'),
  })
  .strict()
  .refine((b) => !(b.leadIds && b.filter), { path: ['filter'], message: 'give leadIds or filter, not both' });
export type ExportLeadsInput = z.infer<typeof exportLeadsBody>;

/**
 * Bulk id lists: 1–1000 entries. An entry that names nothing of the caller's, whatever its shape
 * (documented in OpenAPI), is reported in `errors`, not refused: non-strings are reported as their JSON text.
 */
const leadIds = z
  .array(z.unknown().transform((v) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v)))))
  .min(1, 'at least 1 id')
  .max(MAX_BULK_IDS, `at most ${MAX_BULK_IDS} ids`)
  .describe('Lead ids; entries that name none of your leads are reported per id');

export const bulkIdsBody = z.object({ leadIds });

export const bulkUpdateBody = z.object({
  leadIds,
  updates: z
    .object({
      status: settableStatus.optional(),
      addTags: tagList(MAX_TAGS).optional(),
      removeTags: tagList(MAX_TAGS).optional(),
    })
    .refine(
      (u) => u.status !== undefined || !!u.addTags?.length || !!u.removeTags?.length,
      'must set status, addTags or removeTags',
    ),
});

// ---- views

export const emailValidationView = z
  .object({
    status: z
      .enum(['valid', 'risky', 'invalid', 'unknown'])
      .describe('invalid with any error; risky with disposable, possible_typo, role_account or catch_all'),
    tier: z
      .enum(['syntax', 'domain', 'mailbox'])
      .describe(
        'How deep the check got: syntax only (DNS gave no answer), the domain (DNS), or the mailbox (the mail ' +
          'exchanger answered RCPT TO; only with SMTP_PROBE on)',
      ),
    errors: z
      .array(z.string())
      .describe(
        'syntax_invalid, domain_not_found, no_mx, null_mx, mailbox_not_found, hard_bounced, suppressed, spamtrap. ' +
          'mailbox_not_found: the exchanger refused the address as unknown (550 5.1.1, or 550/551/553 user unknown). ' +
          'A suppressed address is never probed.',
      ),
    flags: z
      .array(z.string())
      .describe(
        'disposable, role_account, catch_all, free_provider, possible_typo, possible_trap, smtp_unverified. ' +
          'catch_all: the exchanger also accepts a random address at the domain, so its yes says little. ' +
          'smtp_unverified: the mailbox was not probed (SMTP_PROBE off) or gave no conclusive answer ' +
          '(greylisting, another 4xx, a policy refusal, a timeout, no connection).',
      ),
    suggestion: z.string().optional().describe('With the possible_typo flag: the address as probably meant'),
    checkedAt: z.string(),
  })
  .meta({ id: 'EmailValidation' });

export const leadListItem = z
  .object({
    id: z.string(),
    firstName: z.string().nullable(),
    lastName: z.string().nullable(),
    email: z.string().nullable(),
    phone: z.string().nullable(),
    company: z.string().nullable(),
    jobTitle: z.string().nullable(),
    status,
    tags: z.array(z.string()),
    sourceUrl: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'LeadListItem' });

export const leadView = leadListItem
  .extend({
    notes: z.string().nullable(),
    customFields: z.record(z.string(), z.unknown()),
    sourceId: z.string().nullable(),
    jobId: z.string().nullable(),
    emailValidation: emailValidationView.nullable(),
    provenance: z
      .object({
        pageUrl: z.string().optional().describe('The page the lead was found on'),
        selector: z.string().optional().describe('The CSS selector of the field that identified the lead'),
        selectors: z
          .record(z.string(), z.string())
          .optional()
          .describe('Per field, the CSS selector its value was read with'),
        visible: z.boolean().optional().describe('Whether the item was visible on the page'),
      })
      .nullable()
      .describe('Where a scraped lead came from (null for leads added by hand)'),
    validatedAt: z.string().nullable(),
    updatedAt: z.string(),
    job: z.object({ id: z.string(), name: z.string(), status: z.string() }).nullable(),
    source: z.object({ id: z.string(), name: z.string(), url: z.string() }).nullable(),
  })
  .meta({ id: 'Lead' });

export const bulkError = z.object({ id: z.string(), error: z.string() });

export const bulkDeleteView = z.object({
  deleted: z.number().int(),
  failed: z.number().int(),
  errors: z.array(bulkError),
});
export const bulkUpdateView = z.object({
  updated: z.number().int(),
  failed: z.number().int(),
  errors: z.array(bulkError),
});
export const validateBulkView = z.object({
  totalRequested: z.number().int().describe('Distinct ids in the request'),
  totalQueued: z.number().int(),
  skipped: z.array(z.object({ id: z.string(), reason: z.enum(['no_email', 'not_found']) })),
});

export type LeadListItem = z.infer<typeof leadListItem>;
export type LeadView = z.infer<typeof leadView>;
export type CreateLeadInput = z.infer<typeof createLeadBody>;
export type UpdateLeadInput = z.infer<typeof updateLeadBody>;
export type ListLeadsQuery = z.infer<typeof listLeadsQuery> & { sort?: LeadSort };
export type BulkUpdateInput = z.infer<typeof bulkUpdateBody>['updates'];
