/** The rows of a scrape job's batch as insertScraped sends them (leads.repository.ts, leads.embedded.ts). */
import type { SQL } from 'drizzle-orm';
import { sql } from 'drizzle-orm';
import { freeMailDomains } from '../../db/free-mail-domains.ts';
import { type LeadProvenance, type LeadStatus, leads } from '../../db/schema/index.ts';

/**
 * Whether an email's domain (SQL: `split_part(email, '@', 2)`) is free mail, or null when only SQL may say: no
 * email, or a domain that is not plain ASCII (JavaScript's and PostgreSQL's lower-casing may differ there).
 */
export function freeMailOf(email: string | null, free: ReadonlySet<string>): boolean | null {
  if (email === null) return false;
  const domain = email.split('@')[1] ?? '';
  return /^[\x20-\x7e]*$/.test(domain) ? free.has(domain.toLowerCase()) : null;
}

/**
 * The distinct selector maps of a batch, each sent once (a row holds its index): both parameter formats (the JSON
 * parameter and COPY) use it, and the statement reads them back as one JSON array.
 */
export function selectorSets() {
  const texts: string[] = [];
  const index = new Map<string, number>();
  return {
    indexOf(selectors: unknown): number | undefined {
      if (selectors === undefined) return undefined;
      const text = JSON.stringify(selectors);
      let k = index.get(text);
      if (k === undefined) {
        k = texts.push(text) - 1;
        index.set(text, k);
      }
      return k;
    },
    json: () => `[${texts.join(',')}]`,
  };
}

/**
 * insertScraped's parameter: one-letter keys, NULL columns left out, `sourceUrl` only when it is not the
 * provenance's `pageUrl`, an empty `customFields` left out, and each distinct `provenance.selectors` map sent
 * once (`selectorSets`, the row holds its index `k`): a scraped lead's JSON goes from ~540 to ~250 bytes.
 * The statement rebuilds exactly what it was given (jsonb orders an object's keys itself).
 */
function compactRows(rows: readonly ScrapedLead[]): { rows: string; selectorSets: string } {
  const free = freeMailDomains();
  const sets = selectorSets();
  const compact = rows.map((row) => {
    const { selectors, ...provenance } = row.provenance;
    const k = sets.indexOf(selectors);
    return {
      i: row.id,
      f: row.firstName ?? undefined,
      l: row.lastName ?? undefined,
      e: row.email ?? undefined,
      p: row.phone ?? undefined,
      c: row.company ?? undefined,
      t: row.jobTitle ?? undefined,
      u: row.sourceUrl === provenance.pageUrl ? undefined : row.sourceUrl,
      s: row.status,
      x: Object.keys(row.customFields).length ? row.customFields : undefined,
      v: provenance,
      k,
      a: row.createdAt,
      m: freeMailOf(row.email, free) ?? undefined,
    };
  });
  return { rows: JSON.stringify(compact), selectorSets: sets.json() };
}

/** A lead found by a scrape job; `ScrapedLeadOwner` holds what all leads of one job share. */
export interface ScrapedLead {
  id: string;
  firstName: string | null;
  lastName: string | null;
  email: string | null;
  phone: string | null;
  company: string | null;
  jobTitle: string | null;
  sourceUrl: string;
  status: LeadStatus;
  customFields: Record<string, string>;
  provenance: LeadProvenance;
  createdAt: Date;
}
export interface ScrapedLeadOwner {
  userId: string;
  sourceId: string;
  jobId: string;
}

/** insertScraped's statement with the rows as one jsonb parameter (`compactRows`). */
export function jsonInsert(owner: ScrapedLeadOwner, rows: readonly ScrapedLead[]): SQL {
  const { rows: compact, selectorSets } = compactRows(rows);
  return sql`
    INSERT INTO ${leads} (id, user_id, source_id, job_id, first_name, last_name, email, phone, company, job_title,
      source_url, status, custom_fields, provenance, created_at, updated_at, account_key)
    SELECT r.i, ${owner.userId}::uuid, ${owner.sourceId}::uuid, ${owner.jobId}::uuid, r.f, r.l, r.e, r.p, r.c, r.t,
      coalesce(r.u, r.v->>'pageUrl'), r.s, coalesce(r.x, '{}'),
      CASE WHEN r.k IS NULL THEN r.v ELSE r.v || jsonb_build_object('selectors', ${selectorSets}::jsonb -> r.k) END,
      r.a, r.a,
      account_key_from(r.e, r.c, coalesce(r.m,
        EXISTS (SELECT 1 FROM free_email_domains f WHERE f.domain = lower(split_part(r.e, '@', 2)))))
    FROM jsonb_to_recordset(${compact}::jsonb) AS r(i uuid, f text, l text, e text, p text, c text, t text,
      u text, s text, x jsonb, v jsonb, k int, a timestamptz, m boolean)
    ON CONFLICT DO NOTHING
    RETURNING id`;
}
