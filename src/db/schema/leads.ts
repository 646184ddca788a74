import { sql } from 'drizzle-orm';
import { index, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn, updatedAt } from './columns.ts';
import { jobs, sources } from './sources.ts';
import { users } from './users.ts';

export const leadStatuses = [
  'NEW',
  'VALID',
  'INVALID',
  'RISKY',
  'CONTACTED',
  'REPLIED',
  'QUALIFIED',
  'DISQUALIFIED',
  'CONVERTED',
  'UNSUBSCRIBED',
] as const;
export type LeadStatus = (typeof leadStatuses)[number];

/** Where a scraped lead came from: the page, the selector that matched, whether it was visible. */
export interface LeadProvenance {
  pageUrl?: string;
  selector?: string;
  visible?: boolean;
  [key: string]: unknown;
}

export interface EmailValidationResult {
  status: 'valid' | 'risky' | 'invalid' | 'unknown';
  tier: 'syntax' | 'domain' | 'mailbox';
  errors: string[];
  flags: string[];
  checkedAt: string;
  [key: string]: unknown;
}

export const leads = pgTable(
  'leads',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    sourceId: uuid('source_id').references(() => sources.id, { onDelete: 'cascade' }),
    jobId: uuid('job_id').references(() => jobs.id, { onDelete: 'set null' }),
    firstName: text('first_name'),
    lastName: text('last_name'),
    email: text('email'),
    phone: text('phone'),
    company: text('company'),
    jobTitle: text('job_title'),
    sourceUrl: text('source_url'),
    status: text('status', { enum: leadStatuses }).notNull().default('NEW'),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    notes: text('notes'),
    customFields: jsonb('custom_fields').$type<Record<string, unknown>>().notNull().default({}),
    provenance: jsonb('provenance').$type<LeadProvenance>(),
    emailValidation: jsonb('email_validation').$type<EmailValidationResult>(),
    validatedAt: tsColumn('validated_at'),
    /**
     * The account the lead belongs to (`domain:acme.com`, `company:acme`, or NULL), kept by the database:
     * `account_key_of(email, company)` on insert and whenever email or company change (migration 0003).
     */
    accountKey: text('account_key'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    // Keyset pagination: newest first within one user, optionally narrowed by company/status/job.
    index('leads_user_id_idx').on(t.userId, t.id),
    index('leads_user_company_idx').on(t.userId, sql`lower(${t.company})`, t.id),
    index('leads_user_status_idx').on(t.userId, t.status, t.id),
    // A job's leads, newest first: the `?jobId=` list filter (a job's leads are all its owner's, so the
    // user_id condition filters nothing), the job's lead count, and the FK's SET NULL when a job is deleted.
    index('leads_job_idx').on(t.jobId, t.id),
    // An account's leads, most recently updated first; the account rollups are recomputed through it.
    index('leads_user_account_idx').on(t.userId, t.accountKey, t.updatedAt, t.id),
    // List filter by source, newest first, without sorting a whole source's leads.
    index('leads_user_source_idx').on(t.userId, t.sourceId, t.id),
    // `?tag=` filter (`tags @> ARRAY[tag]`): finds rare tags without walking every lead of the user.
    // Partial: scraped leads have no tags, and an empty array still costs a GIN entry per insert; the
    // tag queries repeat the predicate so the planner can use the index (it cannot infer it from `@>`).
    index('leads_tags_idx').using('gin', t.tags).where(sql`${t.tags} <> '{}'::text[]`),
    // De-duplication per source (scraping): by email, else by name + company.
    uniqueIndex('leads_source_email_key')
      .on(t.sourceId, sql`lower(${t.email})`)
      .where(sql`${t.sourceId} IS NOT NULL AND ${t.email} IS NOT NULL`),
    uniqueIndex('leads_source_name_company_key')
      .on(
        t.sourceId,
        sql`lower(coalesce(${t.firstName}, ''))`,
        sql`lower(coalesce(${t.lastName}, ''))`,
        sql`lower(coalesce(${t.company}, ''))`,
      )
      .where(sql`${t.sourceId} IS NOT NULL AND ${t.email} IS NULL`),
  ],
);
