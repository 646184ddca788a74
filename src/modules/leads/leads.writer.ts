import { z } from 'zod';
import type { Tx } from '../../db/client.ts';
import type { ProfileFieldDefinition } from '../../db/schema/index.ts';
import type { AppDeps } from '../../deps.ts';
import { nothingToEmit } from '../../shared/events.ts';
import { newId } from '../../shared/ids.ts';
import { coerceData } from '../profile-types/index.ts';
import { createProfileService } from '../profiles/index.ts';
import type { CrawledPage, ExtractedItem } from '../scraping/index.ts';
import { LEAD_FIELD_KEYS, type LeadFieldKey } from '../scraping/index.ts';
import { scrapedInsertSteps } from './leads.embedded.ts';
import { embeddedWrite, leadRepository, type ScrapedLead } from './leads.repository.ts';
import { LEAD_LIMITS } from './leads.schemas.ts';
import { emitLeadsCreated, INITIAL_LEAD_STATUS } from './leads.service.ts';

/** Selector keys that fill lead columns (fullName is split into first/last by extraction); others are custom fields. */
type LeadColumn = Exclude<LeadFieldKey, 'fullName'>;
const LEAD_COLUMNS = new Set<string>(LEAD_FIELD_KEYS);

/** Buffered leads are written at least this often, so a running job's leads show up as it goes. */
const LEAD_FLUSH_MS = 1_000;
/**
 * A buffer this large is written at once, without waiting for the timer. On the embedded database a write also takes
 * about this many rows at most (whole pages): its lock, which every read waits for, is held for one such write, not
 * for a backlog. PostgreSQL's reads wait for no writer, so there a write takes the whole buffer.
 */
const BATCH_ROWS = 2_000;
/**
 * Pages wait for the database (back-pressure) only once this much is buffered: the crawl goes on
 * while a batch is written, and a slow write makes the next batch larger, not the crawl slower.
 */
const MAX_BUFFERED_ROWS = 5 * BATCH_ROWS;
/** Writes failing in a row before the writer gives up (the database is gone, not busy): the job then fails. */
const MAX_FAILED_WRITES = 3;
const noop = () => {};

export interface LeadWriterContext {
  userId: string;
  sourceId: string;
  jobId: string;
  profileType?: { id: string; fields: ProfileFieldDefinition[] };
}

export interface LeadWriterOptions {
  /** Called after each write with the number of leads it inserted (duplicates not counted). */
  onStored?(inserted: number): void;
  /**
   * Called once when a write finds the balance short of its pages: the leads of the pages paid for
   * are stored, later pages are dropped (the runner stops the crawl).
   */
  onOutOfCredits?(): void;
}

interface Pending {
  lead: ScrapedLead;
  profile?: Record<string, unknown>;
  /** Ordinal of the page the lead came from (pages are paid for in order). */
  page: number;
}

/**
 * Text PostgreSQL accepts: NUL characters removed, lone surrogates (a cut emoji) replaced, so one
 * odd page cannot fail the statement that writes a whole batch.
 */
const storable = (text: string) => text.replaceAll('\0', '').toWellFormed();

/** A lead from an extracted item, or undefined when nothing identifies a person or company. */
function scrapedLead(item: ExtractedItem, pageUrl: string, now: Date): ScrapedLead | undefined {
  const f = item.fields;
  const col = (key: LeadColumn) => (f[key] ? storable(f[key].slice(0, LEAD_LIMITS[key])) || null : null);
  const email = col('email')?.toLowerCase() ?? null;
  if (!email && !f.firstName && !f.lastName && !f.company && !f.phone) return undefined;
  const customFields: Record<string, string> = {};
  for (const [key, value] of Object.entries(f)) {
    if (!LEAD_COLUMNS.has(key)) customFields[key] = storable(value.slice(0, LEAD_LIMITS.customFieldValue));
  }
  const provenanceKey = email ? 'email' : (['firstName', 'lastName', 'company', 'phone'] as const).find((k) => f[k]);
  return {
    id: newId(),
    firstName: col('firstName'),
    lastName: col('lastName'),
    email,
    phone: col('phone'),
    company: col('company'),
    jobTitle: col('jobTitle'),
    sourceUrl: pageUrl.slice(0, LEAD_LIMITS.sourceUrl),
    status: INITIAL_LEAD_STATUS,
    customFields,
    provenance: {
      pageUrl,
      selector: provenanceKey ? item.matchedSelectors[provenanceKey] : undefined,
      selectors: item.matchedSelectors,
      visible: item.visible,
    },
    createdAt: now,
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

const storableValue = (v: unknown): unknown =>
  typeof v === 'string' ? storable(v) : Array.isArray(v) ? v.map((e) => (typeof e === 'string' ? storable(e) : e)) : v;

export type LeadWriter = ReturnType<typeof createLeadWriter>;

/**
 * Stores what a crawl finds: leads de-duplicated per source (email, else name + company, through
 * the unique indexes) and, for a source with a profile type, one profile per new lead, in one
 * transaction that also pays for the pages crawled since the last write (README "Credits"; when the
 * balance runs short only the pages it paid for are stored, and `onOutOfCredits` is called). Pages
 * are buffered and written together, one statement for many pages, at least every LEAD_FLUSH_MS and
 * as soon as BATCH_ROWS wait; `close()` writes the rest (the runner calls it
 * before it records the job's end). Idempotent: a job re-delivered after a crash inserts nothing twice.
 * A failed write keeps its rows for the next one; after MAX_FAILED_WRITES failures in a row `add()`
 * refuses pages and `close()` reports the failure (the runner fails the job: it can be retried).
 */
export function createLeadWriter(
  deps: Pick<AppDeps, 'db' | 'database' | 'clock' | 'ai' | 'logger' | 'credits'>,
  ctx: LeadWriterContext,
  options: LeadWriterOptions = {},
) {
  const profileFields = ctx.profileType?.fields ?? [];
  const schema = ctx.profileType && deps.ai.configured ? profileSchema(profileFields) : undefined;
  const owner = { userId: ctx.userId, sourceId: ctx.sourceId, jobId: ctx.jobId };
  // PGlite: parents checked once per batch, rows through COPY (leadRepository.insertScraped); PostgreSQL: undefined.
  const embedded = embeddedWrite(deps.database);
  const writeRows = deps.database.kind === 'pglite' ? BATCH_ROWS : Number.POSITIVE_INFINITY;
  let buffer: Pending[] = [];
  // The write in progress (or the last one), and the one queued after it that takes the buffer when it starts.
  let current: Promise<void> = Promise.resolve();
  let queued: Promise<void> | undefined;
  let closed = false;
  let failedWrites = 0;
  let gaveUp: unknown;
  // Pages handed to `add` (each page's ordinal), pages paid for (or dropped), and whether credits ran out.
  let pagesAdded = 0;
  let pagesSettled = 0;
  let outOfCredits = false;

  /** Profile data from selectors named after the type's fields, completed by the model from the item's text. */
  async function profileData(
    item: ExtractedItem,
    pageText: string | undefined,
  ): Promise<Record<string, unknown> | undefined> {
    const fromSelectors: Record<string, string> = {};
    for (const field of profileFields) {
      const value = item.fields[field.name];
      if (value !== undefined) fromSelectors[field.name] = storable(value);
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
          system:
            'You extract structured facts from web page text. ' +
            'Answer null for anything the text does not state; never guess.',
          prompt:
            `Fields wanted: ${missing.map((f) => f.name).join(', ')}.\n` +
            `Known: ${JSON.stringify(fromSelectors)}\n\nText:\n${text.slice(0, 8000)}`,
        });
        const fromModel = Object.fromEntries(
          Object.entries(filled as Record<string, unknown>)
            .filter(([k, v]) => v !== null && fromSelectors[k] === undefined)
            .map(([k, v]) => [k, storableValue(v)]),
        );
        merged = { ...fromModel, ...fromSelectors };
      } catch (error) {
        // A model failure costs the AI-filled fields of this item, not the crawl.
        deps.logger.warn({ err: error, jobId: ctx.jobId }, 'AI profile extraction failed');
      }
    }
    // As for profiles stored through the API: a profile missing a required field is not stored.
    const { data, missing: stillMissing } = coerceData(profileFields, merged);
    return stillMissing.length || !Object.keys(data).length ? undefined : data;
  }

  /** Leads (and profiles) of `batch`, in the caller's transaction; how many were new. */
  async function insert(tx: Tx, batch: Pending[]): Promise<number> {
    if (!batch.length) return 0;
    const ids = await leadRepository(tx).insertScraped(
      owner,
      batch.map((p) => p.lead),
      embedded,
    );
    if (ctx.profileType) {
      const profileOf = new Map(batch.map((p) => [p.lead.id, p]));
      const items = ids.flatMap((id) => {
        const p = profileOf.get(id)!;
        return p.profile ? [{ leadId: id, data: p.profile, sourceUrl: p.lead.sourceUrl }] : [];
      });
      if (items.length)
        await createProfileService({ db: tx, clock: deps.clock }).createForScrapedLeads(
          { ...owner, profileTypeId: ctx.profileType.id },
          items,
        );
    }
    // The batch's `lead.created` event (README, Webhooks) commits with its leads.
    if (ids.length) await emitLeadsCreated(tx, ctx.userId, ids, { jobId: ctx.jobId, sourceId: ctx.sourceId });
    return ids.length;
  }

  /**
   * On the embedded database, `write`'s transaction as one message (src/db/pipeline.ts): PGlite's lock, which every
   * other statement waits for, is held for the SQL's own time, not across a round trip per statement through the busy
   * service thread. It covers the usual case: every page paid for, no profiles, no endpoint subscribed to
   * `lead.created`. Undefined (nothing written) when a step says otherwise; `write` then runs its transaction.
   */
  async function pipelined(batch: Pending[], pages: number): Promise<number | undefined> {
    if (!deps.database.pipeline || !embedded?.copy || ctx.profileType) return undefined;
    const reason = `job ${ctx.jobId}`;
    const spend = pages > 0 ? deps.credits.spendStatement(deps.db, ctx.userId, 'pages', pages, { reason }) : undefined;
    const insert = scrapedInsertSteps(
      owner,
      batch.map((p) => p.lead),
    );
    const steps = [
      ...(spend ? [spend] : []),
      ...(batch.length ? [nothingToEmit(ctx.userId, 'lead.created')] : []),
      ...insert.steps,
    ];
    if (!steps.length) return 0;
    const outcome = await deps.database.pipeline(steps);
    if ('stoppedAt' in outcome) return undefined;
    return insert.ids(outcome.results, steps.length - insert.steps.length).length;
  }

  /**
   * Writes `batch` and pays for pages up to `throughPage` in one transaction; when the balance is short,
   * only the leads of the pages it paid for are stored. On failure the rows go back to the front of the
   * buffer (and the pages stay unpaid) for the next write.
   */
  async function write(batch: Pending[], throughPage: number): Promise<void> {
    const pages = throughPage - pagesSettled;
    if (!batch.length && pages <= 0) return;
    try {
      const fast = await pipelined(batch, pages);
      const { inserted, short } =
        fast !== undefined
          ? { inserted: fast, short: false }
          : await deps.db.transaction(async (tx) => {
              const { paidUnits } = await deps.credits.spend(tx, ctx.userId, 'pages', pages, {
                partial: true,
                reason: `job ${ctx.jobId}`,
              });
              const paidThrough = pagesSettled + paidUnits;
              const rows = paidUnits < pages ? batch.filter((p) => p.page <= paidThrough) : batch;
              return { inserted: await insert(tx, rows), short: paidUnits < pages };
            });
      pagesSettled = Math.max(pagesSettled, throughPage);
      failedWrites = 0;
      if (inserted) options.onStored?.(inserted);
      // The balance is spent: pages buffered after this write cannot be paid either, and are not stored (as when one
      // write took the whole buffer), nor charged again by writes that would store nothing.
      if (short) {
        buffer = [];
        pagesSettled = pagesAdded;
      }
      if (short && !outOfCredits) {
        outOfCredits = true;
        options.onOutOfCredits?.();
      }
    } catch (error) {
      buffer = batch.concat(buffer);
      if (++failedWrites >= MAX_FAILED_WRITES) gaveUp = error;
      throw error;
    }
  }

  /**
   * Writes what is buffered: one write at a time, and requests made while one runs share the next. A write takes
   * whole pages up to `writeRows` rows (a page is never split, so a short balance drops whole pages) and pays through
   * its last page; what it leaves is written by the next, queued at once.
   */
  function flush(): Promise<void> {
    if (!queued) {
      const next = current.then(() => {
        queued = undefined;
        let take = Math.min(buffer.length, writeRows);
        while (take < buffer.length && buffer[take]!.page === buffer[take - 1]!.page) take++;
        const batch = buffer.splice(0, take);
        return write(batch, buffer.length ? batch.at(-1)!.page : pagesAdded);
      });
      queued = next;
      current = next.catch(() => {});
      next.then(() => {
        if (buffer.length >= BATCH_ROWS && !queued) flush().catch(writeFailed);
      }, noop);
    }
    return queued;
  }

  /** Writes until nothing is left: what is buffered, and pages not yet paid for. */
  async function drain(): Promise<void> {
    while (buffer.length || pagesAdded > pagesSettled) await flush();
  }

  /** A write nobody waits for failed: its rows are buffered again for the next one. */
  const writeFailed = (err: unknown) =>
    deps.logger.warn({ err, jobId: ctx.jobId }, 'storing leads failed; retrying with the next batch');
  const timer = setInterval(() => {
    if ((buffer.length || pagesAdded > pagesSettled) && !queued) flush().catch(writeFailed);
  }, LEAD_FLUSH_MS);
  timer.unref();

  return {
    /**
     * Buffers one page's leads (and, with a profile type, their profile data: model calls happen
     * here, outside any transaction). Resolves at once unless MAX_BUFFERED_ROWS wait; then it
     * waits for the write, so the crawl slows down to what the database takes.
     */
    async add(page: CrawledPage): Promise<void> {
      // Nothing more is buffered once writes keep failing: the page fails, memory stays bounded.
      if (gaveUp) throw gaveUp;
      // Pages the balance cannot pay for are not stored (the crawl is being stopped).
      if (outOfCredits) return;
      const now = deps.clock.now();
      const pending: Array<Omit<Pending, 'page'>> = [];
      for (const item of page.items) {
        const lead = scrapedLead(item, page.url, now);
        if (!lead) continue;
        pending.push({ lead, profile: ctx.profileType ? await profileData(item, page.text) : undefined });
      }
      // Numbered once its leads are ready, so ordinals follow the buffer's order.
      const ordinal = ++pagesAdded;
      if (!pending.length) return;
      for (const p of pending) buffer.push({ ...p, page: ordinal });
      if (closed) return await drain();
      // Back-pressure: a write may take only part of the buffer, so a page waits until it is below the limit again.
      while (buffer.length >= MAX_BUFFERED_ROWS) {
        if (gaveUp) throw gaveUp;
        await flush();
      }
      if (buffer.length >= BATCH_ROWS && !queued) flush().catch(writeFailed);
    },

    /** Writes whatever is buffered and waits for it. */
    flush: drain,

    /**
     * Stops the timer and writes the rest, trying again after a pause while writes fail fewer than
     * MAX_FAILED_WRITES times in a row; then rejects. Safe to call again.
     */
    async close(): Promise<void> {
      closed = true;
      clearInterval(timer);
      for (;;) {
        try {
          await current;
          return await drain();
        } catch (error) {
          if (gaveUp) throw error;
          await new Promise((resolve) => setTimeout(resolve, 250 * failedWrites));
        }
      }
    },
  };
}
