import { finished, Readable } from 'node:stream';
import { to as copyTo } from 'pg-copy-streams';
import type { Db, Tx } from '../../db/client.ts';
import type { LeadStatus } from '../../db/schema/index.ts';
import type { AppDeps } from '../../deps.ts';
import { csvRow } from '../../shared/csv.ts';
import { isUniqueViolation, pgConstraint } from '../../shared/db-errors.ts';
import { AppError, notFound } from '../../shared/errors.ts';
import { emitEvent } from '../../shared/events.ts';
import { findOwned, isUuid, storedId } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import {
  type CopyFormat,
  LEAD_COPY_COLUMNS,
  type LeadFilters,
  type LeadListRow,
  type LeadRow,
  type LeadWithRelations,
  leadRepository,
  leadsCopyOutStatement,
} from './leads.repository.ts';
import {
  type BulkUpdateInput,
  type CreateLeadInput,
  type ExportLeadsInput,
  type LeadListItem,
  type LeadView,
  type ListLeadsQuery,
  MAX_TAGS,
  type UpdateLeadInput,
} from './leads.schemas.ts';

/**
 * Every lead starts NEW, scraped or created: VALID, INVALID and RISKY are set by email validation only
 * (a syntax check is not validation, and outreach refuses leads that were never validated).
 */
export const INITIAL_LEAD_STATUS: LeadStatus = 'NEW';

/** One `lead.created` event for the leads one write stored (README, Webhooks), in that write's transaction. */
export const emitLeadsCreated = (
  tx: Db | Tx,
  userId: string,
  leadIds: string[],
  from: { jobId: string | null; sourceId: string | null },
) => emitEvent(tx, userId, 'lead.created', { leadIds, count: leadIds.length, ...from });

export const toLeadListItem = (r: LeadListRow): LeadListItem => ({
  id: r.id,
  firstName: r.firstName,
  lastName: r.lastName,
  email: r.email,
  phone: r.phone,
  company: r.company,
  jobTitle: r.jobTitle,
  status: r.status,
  tags: r.tags,
  sourceUrl: r.sourceUrl,
  createdAt: r.createdAt.toISOString(),
});

/** The documented parts of a lead's provenance (what the scraper stored; other keys are left out). */
function provenanceView(p: LeadRow['provenance']): LeadView['provenance'] {
  if (!p) return null;
  const view: NonNullable<LeadView['provenance']> = {};
  if (typeof p.pageUrl === 'string') view.pageUrl = p.pageUrl;
  if (typeof p.selector === 'string') view.selector = p.selector;
  if (typeof p.visible === 'boolean') view.visible = p.visible;
  const selectors = p.selectors;
  if (selectors && typeof selectors === 'object' && !Array.isArray(selectors)) {
    view.selectors = Object.fromEntries(
      Object.entries(selectors).filter((e): e is [string, string] => typeof e[1] === 'string'),
    );
  }
  return view;
}

export function toLeadView({
  lead,
  job,
  source,
}: {
  lead: LeadRow;
  job: LeadWithRelations['job'];
  source: LeadWithRelations['source'];
}): LeadView {
  const v = lead.emailValidation;
  return {
    ...toLeadListItem(lead),
    notes: lead.notes,
    customFields: lead.customFields ?? {},
    sourceId: lead.sourceId,
    jobId: lead.jobId,
    emailValidation: v
      ? {
          status: v.status,
          tier: v.tier,
          errors: v.errors,
          flags: v.flags,
          ...(typeof v.suggestion === 'string' ? { suggestion: v.suggestion } : {}),
          checkedAt: v.checkedAt,
        }
      : null,
    provenance: provenanceView(lead.provenance),
    validatedAt: lead.validatedAt?.toISOString() ?? null,
    updatedAt: lead.updatedAt.toISOString(),
    job,
    source,
  };
}

/**
 * Ids of a bulk request, each counted once: well-formed UUIDs (lower-cased) to look up, and the
 * first spelling of each, to report the ones that name nothing of the caller's.
 */
export function distinctIds(raw: string[]): { lookup: string[]; spelled: Map<string, string> } {
  const spelled = new Map<string, string>();
  for (const id of raw) {
    const key = storedId(id) ?? id;
    if (!spelled.has(key)) spelled.set(key, id);
  }
  return { lookup: [...spelled.keys()].filter(isUuid), spelled };
}

export function createLeadService(deps: Pick<AppDeps, 'db' | 'clock'>) {
  const repo = leadRepository(deps.db);

  async function view(userId: string, id: string): Promise<LeadView> {
    const row = await findOwned(id, 'Lead', (key) => repo.findWithRelations(userId, key));
    return toLeadView(row);
  }

  return {
    async list(userId: string, query: ListLeadsQuery) {
      const cursor = decodeCursor(query.cursor);
      const { cursor: _c, limit, sort, ...filters } = query;
      const rows = await repo.list(userId, filters, cursor, limit + 1, sort);
      const { items, nextCursor } = pageOf(rows, limit);
      return { leads: items.map(toLeadListItem), nextCursor };
    },

    /** The caller's leads among `ids` in one statement (ids that are not uuids or not theirs are absent). */
    async listByIds(userId: string, ids: string[]): Promise<LeadListItem[]> {
      const keys = ids.filter(isUuid).map((id) => id.toLowerCase());
      return keys.length ? (await repo.listByIds(userId, keys)).map(toLeadListItem) : [];
    },

    get: view,

    async create(userId: string, input: CreateLeadInput): Promise<LeadView> {
      const now = deps.clock.now();
      const lead = await deps.db.transaction(async (tx) => {
        const row = await leadRepository(tx).insert({
          userId,
          sourceUrl: input.sourceUrl,
          firstName: input.firstName ?? null,
          lastName: input.lastName ?? null,
          email: input.email ?? null,
          phone: input.phone ?? null,
          company: input.company ?? null,
          jobTitle: input.jobTitle ?? null,
          status: INITIAL_LEAD_STATUS,
          createdAt: now,
          updatedAt: now,
        });
        await emitLeadsCreated(tx, userId, [row.id], { jobId: null, sourceId: null });
        return row;
      });
      return toLeadView({ lead, job: null, source: null });
    },

    async update(userId: string, id: string, input: UpdateLeadInput): Promise<LeadView> {
      const key = storedId(id);
      if (!key) throw notFound('Lead');
      const patch = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
      if (!Object.keys(patch).length) return view(userId, id);
      const emailStatus = input.email !== undefined ? INITIAL_LEAD_STATUS : undefined;
      let updated: boolean;
      try {
        updated = await repo.update(userId, key, patch, emailStatus, deps.clock.now());
      } catch (err) {
        // Leads of one source are unique by email, else by name + company (scraping de-duplication).
        if (!isUniqueViolation(err)) throw err;
        const field = String(pgConstraint(err)).includes('email') ? 'email' : 'company';
        throw new AppError(
          'CONFLICT',
          'Another lead of the same source already has this email, or this name and company',
          {
            details: [{ field, message: 'duplicates another lead of the same source' }],
          },
        );
      }
      if (!updated) throw notFound('Lead');
      return view(userId, id);
    },

    async remove(userId: string, id: string): Promise<void> {
      await findOwned(id, 'Lead', (key) => repo.delete(userId, key));
    },

    async bulkDelete(userId: string, leadIds: string[]) {
      const { lookup, spelled } = distinctIds(leadIds);
      const deleted = new Set(await repo.deleteMany(userId, lookup));
      const errors = [...spelled].filter(([key]) => !deleted.has(key)).map(([, id]) => ({ id, error: 'not_found' }));
      return { deleted: deleted.size, failed: errors.length, errors };
    },

    async bulkUpdate(userId: string, leadIds: string[], updates: BulkUpdateInput) {
      const { lookup, spelled } = distinctIds(leadIds);
      const { updated, overLimit } = await repo.updateMany(userId, lookup, updates, MAX_TAGS, deps.clock.now());
      const done = new Set(updated);
      const tooMany = new Set(overLimit);
      const errors = [...spelled]
        .filter(([key]) => !done.has(key))
        .map(([key, id]) => ({ id, error: tooMany.has(key) ? 'too_many_tags' : 'not_found' }));
      return { updated: done.size, failed: errors.length, errors };
    },
  };
}

export type LeadService = ReturnType<typeof createLeadService>;

/** The columns of a leads CSV (those of the list), in order. */
export const LEAD_CSV_COLUMNS = [
  'id',
  'firstName',
  'lastName',
  'email',
  'phone',
  'company',
  'jobTitle',
  'status',
  'tags',
  'sourceUrl',
  'createdAt',
] as const;
export const LEAD_EXPORT_PAGE_SIZE = 1000;

const csvLine = (r: LeadListRow) =>
  csvRow([
    r.id,
    r.firstName,
    r.lastName,
    r.email,
    r.phone,
    r.company,
    r.jobTitle,
    r.status,
    r.tags.join('; '),
    r.sourceUrl,
    r.createdAt.toISOString(),
  ]);

/**
 * A CSV of leads (RFC 4180, header first, tags joined with "; ", formulas neutralised by csvRow), streamed: the
 * selected ones in one read, or every lead the list's filters find, page by page newest first (keyset, so memory
 * stays flat whatever their number).
 */
export function exportLeadsCsv(deps: Pick<AppDeps, 'db'>, userId: string, input: ExportLeadsInput): Readable {
  const repo = leadRepository(deps.db);
  async function* lines(): AsyncGenerator<string> {
    yield csvRow([...LEAD_CSV_COLUMNS]);
    if (input.leadIds) {
      const ids = distinctIds(input.leadIds).lookup;
      if (ids.length) yield (await repo.listByIds(userId, ids)).map(csvLine).join('');
      return;
    }
    let before: string | undefined;
    for (;;) {
      const rows = await repo.list(userId, input.filter ?? {}, before, LEAD_EXPORT_PAGE_SIZE);
      if (rows.length) yield rows.map(csvLine).join('');
      if (rows.length < LEAD_EXPORT_PAGE_SIZE) return;
      before = rows[rows.length - 1]!.id;
    }
  }
  return Readable.from(lines(), { objectMode: false });
}

/**
 * The leads of a list as COPY's CSV straight from PostgreSQL, batch by batch, never turned into objects here (a push
 * to a PostgreSQL destination pipes it into the destination's COPY … FROM STDIN). A batch is an id range of the
 * list, newest first: `boundary` finds its lower end, `open` streams it in `columns` order. Undefined on the
 * embedded database (PGlite has no COPY TO STDOUT over a socket): callers read `list` there.
 */
export function createLeadCopyOut(deps: Pick<AppDeps, 'db' | 'database'>) {
  const pool = deps.database.pool;
  if (deps.database.kind !== 'postgres' || !pool) return undefined;
  const repo = leadRepository(deps.db);
  let encoding: Promise<string> | undefined;
  return {
    /** Names and types (as `regtype` spells them), in the order of every row. */
    columns: LEAD_COPY_COLUMNS,
    /** The database's encoding: the one binary text values are in. */
    encoding: () => {
      encoding ??= pool
        .query<{ server_encoding: string }>('SHOW server_encoding')
        .then((r) => r.rows[0]!.server_encoding);
      return encoding;
    },
    /** The smallest id of the next `size` leads below `before`, and how many there are; undefined when none. */
    boundary: (userId: string, filters: LeadFilters, before: string, size: number) =>
      repo.batchBoundary(userId, filters, before, size),
    /** The leads of the list in [floor, before), newest first, as CSV (no header) or PostgreSQL's binary COPY. */
    async open(
      userId: string,
      filters: LeadFilters,
      before: string,
      floor: string,
      format: CopyFormat,
    ): Promise<Readable> {
      const statement = leadsCopyOutStatement(userId, filters, before, floor, format);
      const client = await pool.connect();
      const stream = client.query(copyTo(statement));
      // A stream left before its end leaves the connection inside the COPY: it is dropped, not pooled.
      finished(stream, (error) => client.release(error ?? (stream.readableEnded ? undefined : true)));
      return stream;
    },
  };
}

export type LeadCopyOut = NonNullable<ReturnType<typeof createLeadCopyOut>>;
