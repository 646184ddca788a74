import { z } from 'zod';
import type { AppDeps } from '../../deps.ts';
import { leads, profiles, type ProfileFieldDefinition } from '../../db/schema/index.ts';
import { newId } from '../../shared/ids.ts';
import { coerceData } from '../profile-types/profile-fields.ts';
import { initialLeadStatus } from '../leads/leads.service.ts';
import { LEAD_FIELD_KEYS, type LeadFieldKey } from '../scraping/selectors.ts';
import type { CrawledPage, ExtractedItem } from '../scraping/scraping.types.ts';

/** Selector keys that fill lead columns (fullName is split into first/last by extraction); every other key is a custom field. */
const LEAD_COLUMNS = LEAD_FIELD_KEYS.filter((k): k is Exclude<LeadFieldKey, 'fullName'> => k !== 'fullName');
const LIMITS: Record<Exclude<LeadFieldKey, 'fullName'>, number> = { firstName: 200, lastName: 200, email: 254, phone: 50, company: 200, jobTitle: 200 };
const MAX_CUSTOM_VALUE = 10_000;

export interface LeadWriterContext {
  userId: string;
  sourceId: string;
  jobId: string;
  profileType?: { id: string; fields: ProfileFieldDefinition[] };
}

type Fields = Record<string, string>;

/** A lead row from an extracted item, or undefined when nothing identifies a person or company. */
function leadValues(item: ExtractedItem, pageUrl: string, ctx: LeadWriterContext, now: Date) {
  const f = item.fields;
  const col = (key: Exclude<LeadFieldKey, 'fullName'>) => f[key]?.slice(0, LIMITS[key]) || null;
  const email = col('email')?.toLowerCase() ?? null;
  if (!email && !f.firstName && !f.lastName && !f.company && !f.phone) return undefined;
  const customFields: Record<string, string> = {};
  for (const [key, value] of Object.entries(f)) {
    if (!(LEAD_COLUMNS as readonly string[]).includes(key) && key !== 'fullName') customFields[key] = value.slice(0, MAX_CUSTOM_VALUE);
  }
  const provenanceKey = email ? 'email' : (['firstName', 'lastName', 'company', 'phone'] as const).find((k) => f[k]);
  return {
    id: newId(),
    userId: ctx.userId,
    sourceId: ctx.sourceId,
    jobId: ctx.jobId,
    firstName: col('firstName'),
    lastName: col('lastName'),
    email,
    phone: col('phone'),
    company: col('company'),
    jobTitle: col('jobTitle'),
    sourceUrl: pageUrl.slice(0, 2048),
    status: initialLeadStatus(email),
    customFields,
    provenance: {
      pageUrl,
      selector: provenanceKey ? item.matchedSelectors[provenanceKey] : undefined,
      selectors: item.matchedSelectors,
      visible: item.visible,
    },
    createdAt: now,
    updatedAt: now,
  };
}

/** The zod schema the model fills for a profile type's missing fields. */
function profileSchema(fields: ProfileFieldDefinition[]) {
  const shape: Record<string, z.ZodType> = {};
  for (const field of fields) {
    const described = (t: z.ZodType) => t.nullable().describe(field.description ?? field.label ?? field.name);
    if (field.type === 'number' || field.type === 'integer') shape[field.name] = described(z.number());
    else if (field.type === 'boolean') shape[field.name] = described(z.boolean());
    else if (field.type === 'array') shape[field.name] = described(z.array(z.string()));
    else shape[field.name] = described(field.enum ? z.enum(field.enum as [string, ...string[]]) : z.string());
  }
  return z.object(shape);
}

/**
 * Stores what a crawl finds, page by page, as it is found: leads de-duplicated per source (email,
 * else name + company, through the unique indexes) and, for a source with a profile type, one
 * profile per new lead in the same transaction. Idempotent: a job re-delivered after a crash inserts
 * nothing twice. The runner keeps the job's `leadsFound` (it writes it with each progress update).
 */
export function createLeadWriter(deps: Pick<AppDeps, 'db' | 'clock' | 'ai' | 'logger'>, ctx: LeadWriterContext) {
  const profileFields = ctx.profileType?.fields ?? [];
  const schema = ctx.profileType && deps.ai.configured ? profileSchema(profileFields) : undefined;

  /** Profile data from selectors named after the type's fields, completed by the model from the item's text. */
  async function profileData(item: ExtractedItem, pageText: string | undefined): Promise<Record<string, unknown> | undefined> {
    const fromSelectors: Fields = {};
    for (const field of profileFields) {
      const value = item.fields[field.name];
      if (value !== undefined) fromSelectors[field.name] = value;
    }
    const missing = profileFields.filter((f) => fromSelectors[f.name] === undefined);
    let merged: Record<string, unknown> = fromSelectors;
    const text = item.text ?? pageText;
    if (schema && missing.length && text) {
      try {
        const filled = await deps.ai.generateObject({
          userId: ctx.userId,
          feature: 'scraping.profile',
          schema,
          system: 'You extract structured facts from web page text. Answer null for anything the text does not state; never guess.',
          prompt: `Fields wanted: ${missing.map((f) => f.name).join(', ')}.\nKnown: ${JSON.stringify(fromSelectors)}\n\nText:\n${text.slice(0, 8000)}`,
        });
        const fromModel = Object.fromEntries(Object.entries(filled as Record<string, unknown>).filter(([k, v]) => v !== null && fromSelectors[k] === undefined));
        merged = { ...fromModel, ...fromSelectors };
      } catch (error) {
        // A model failure costs the AI-filled fields of this item, not the crawl.
        deps.logger.warn({ err: error, jobId: ctx.jobId }, 'AI profile extraction failed');
      }
    }
    // As for profiles stored through the API: a profile missing a required field is not stored.
    const { data, missing: stillMissing } = coerceData(profileFields, merged);
    return stillMissing.length ? undefined : data;
  }

  return {
    /** Stores one page's items; resolves to the number of new leads. */
    async writePage(page: CrawledPage): Promise<number> {
      const now = deps.clock.now();
      const rows = page.items.flatMap((item) => {
        const values = leadValues(item, page.url, ctx, now);
        return values ? [{ item, values }] : [];
      });
      if (rows.length === 0) return 0;
      // Model calls happen before the transaction: PGlite has one connection, held by a transaction.
      const profileByLead = new Map<string, Record<string, unknown>>();
      if (ctx.profileType) {
        for (const { item, values } of rows) {
          const data = await profileData(item, page.text);
          if (data) profileByLead.set(values.id, data);
        }
      }
      const values = rows.map((r) => r.values);
      if (!ctx.profileType) {
        // No transaction and no shared counter row: concurrent pages of one job never wait on each other.
        return (await deps.db.insert(leads).values(values).onConflictDoNothing().returning({ id: leads.id })).length;
      }
      return deps.db.transaction(async (tx) => {
        const inserted = await tx.insert(leads).values(values).onConflictDoNothing().returning({ id: leads.id });
        if (inserted.length === 0) return 0;
        const profileRows = inserted
          .map(({ id }) => ({ id, data: profileByLead.get(id) }))
          .filter((p): p is { id: string; data: Record<string, unknown> } => !!p.data && Object.keys(p.data).length > 0)
          .map((p) => ({
            userId: ctx.userId,
            profileTypeId: ctx.profileType!.id,
            sourceId: ctx.sourceId,
            jobId: ctx.jobId,
            leadId: p.id,
            data: p.data,
            sourceUrl: page.url.slice(0, 2048),
            createdAt: now,
            updatedAt: now,
          }));
        if (profileRows.length) await tx.insert(profiles).values(profileRows).onConflictDoNothing();
        return inserted.length;
      });
    },
  };
}
