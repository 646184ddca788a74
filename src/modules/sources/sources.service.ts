import type { Db, Tx } from '../../db/client.ts';
import type { AppDeps } from '../../deps.ts';
import { AppError, type ErrorDetail, notFound, validationErrors } from '../../shared/errors.ts';
import { findOwned } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { ownsProxyProfile } from '../proxy-profiles/index.ts';
import { validateSelectors } from '../scraping/index.ts';
import { type CrawlSettingsInput, type PlacedCrawlSettings, placeCrawlSettings } from './crawl-settings.ts';
import { insertSourceRows, type NewSource, type SourceRow, sourceRepository } from './sources.repository.ts';
import { nextRunAt } from './sources.schedule.ts';
import {
  type BatchSourceInput,
  type BatchSourceRequestItem,
  batchSourceItem,
  type CrawlOptions,
  type CreateSourceInput,
  type CreateSourceRequest,
  createSourceBody,
  type ListSourcesQuery,
  type SourceView,
  type UpdateSourceInput,
} from './sources.schemas.ts';
import { createTemplateService } from './templates/templates.service.ts';

export const toSourceView = (r: SourceRow): SourceView => ({
  id: r.id,
  name: r.name,
  url: r.url,
  scrapeType: r.scrapeType,
  status: r.status,
  description: r.description,
  selectors: r.selectors,
  scheduleType: r.scheduleType,
  reasoning: r.reasoning,
  projectId: r.projectId,
  profileTypeId: r.profileTypeId,
  templateId: r.templateId,
  proxyProfileId: r.proxyProfileId,
  maxPages: r.maxPages,
  respectRobotsTxt: r.respectRobotsTxt,
  options: r.options as CrawlOptions,
  lastRunAt: r.lastRunAt?.toISOString() ?? null,
  nextRunAt: r.nextRunAt?.toISOString() ?? null,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

/** Selector problems of one source, with fields prefixed for batch items (`sources.2.selectors.email`). */
function selectorErrors(
  selectors: Record<string, string>,
  scrapeType: SourceRow['scrapeType'],
  prefix = '',
): ErrorDetail[] {
  return validateSelectors(selectors, scrapeType).map((d) => ({ field: `${prefix}${d.field}`, message: d.message }));
}

const invalid = validationErrors;

export type SourceService = ReturnType<typeof createSourceService>;

export function createSourceService(deps: Pick<AppDeps, 'db' | 'clock'>) {
  const repo = sourceRepository(deps.db);
  const templates = createTemplateService(deps);

  async function checkProject(userId: string, projectId: string | null | undefined): Promise<void> {
    if (projectId && !(await repo.projectExists(userId, projectId.toLowerCase())))
      throw notFound('Project', 'projectId');
  }

  async function checkProfileTypes(
    userId: string,
    ids: Array<{ id: string | null | undefined; field: string }>,
  ): Promise<void> {
    const wanted = ids.filter((i): i is { id: string; field: string } => !!i.id);
    const owned = await repo.profileTypesOwned(userId, [...new Set(wanted.map((w) => w.id.toLowerCase()))]);
    const missing = wanted.find((w) => !owned.has(w.id.toLowerCase()));
    if (missing) throw notFound('Profile type', missing.field);
  }

  async function checkProxyProfile(userId: string, id: string | null | undefined): Promise<void> {
    if (id && !(await ownsProxyProfile(deps.db, userId, id.toLowerCase())))
      throw notFound('Proxy profile', 'proxyProfileId');
  }

  async function owned(userId: string, id: string): Promise<SourceRow> {
    return findOwned(id, 'Source', (key) => repo.find(userId, key));
  }

  /** Rows for new DRAFT sources; every check happens before anything is written (no partial batches). */
  function newRow(
    userId: string,
    input: BatchSourceInput & Partial<CreateSourceInput>,
    placed: PlacedCrawlSettings,
    projectId: string | null,
    now: Date,
    templateId: string | null = null,
  ): NewSource {
    return {
      userId,
      templateId,
      projectId,
      profileTypeId: input.profileTypeId?.toLowerCase() ?? null,
      proxyProfileId: input.proxyProfileId?.toLowerCase() ?? null,
      name: input.name,
      url: input.url,
      scrapeType: input.scrapeType ?? 'DYNAMIC',
      status: 'DRAFT',
      description: input.description || null,
      selectors: placed.selectors ?? {},
      scheduleType: input.scheduleType ?? 'MANUAL',
      reasoning: input.reasoning || null,
      maxPages: placed.maxPages ?? null,
      respectRobotsTxt: placed.respectRobotsTxt ?? true,
      options: placed.options ?? {},
      createdAt: now,
      updatedAt: now,
    };
  }

  return {
    async list(userId: string, query: ListSourcesQuery) {
      const rows = await repo.list(
        userId,
        { status: query.status, projectId: query.projectId?.toLowerCase() },
        query.limit,
        decodeCursor(query.cursor),
      );
      const { items, nextCursor } = pageOf(rows, query.limit);
      return { sources: items.map(toSourceView), nextCursor };
    },

    async get(userId: string, id: string): Promise<SourceView> {
      return toSourceView(await owned(userId, id));
    },

    /** The row itself, for the job runner and the scheduler. */
    owned,

    /** The source a job runs, or undefined once it is deleted (the job runner). */
    findForJob: (userId: string, id: string): Promise<SourceRow | undefined> => repo.find(userId, id),

    /** Records the start of a run (the job runner). */
    async markRun(userId: string, id: string, at: Date): Promise<void> {
      await repo.update(userId, id, { lastRunAt: at });
    },

    /** One DRAFT source; with `templateId`, the template fills what the body leaves out. */
    async create(userId: string, request: CreateSourceRequest | CreateSourceInput): Promise<SourceView> {
      const [{ input, templateId }] = (await templates.apply(userId, [request], createSourceBody, [
        'url',
        'scrapeType',
        'selectors',
      ])) as [{ input: CreateSourceInput; templateId: string | null }];
      const placed = placeCrawlSettings(input);
      const errors = [...placed.errors, ...selectorErrors(placed.selectors ?? {}, input.scrapeType)];
      if (errors.length) throw invalid(errors);
      await checkProject(userId, input.projectId);
      await checkProfileTypes(userId, [{ id: input.profileTypeId, field: 'profileTypeId' }]);
      await checkProxyProfile(userId, input.proxyProfileId);
      const [row] = await repo.insertMany([
        newRow(userId, input, placed, input.projectId?.toLowerCase() ?? null, deps.clock.now(), templateId),
      ]);
      return toSourceView(row!);
    },

    /** Several DRAFT sources at once (default scrapeType DYNAMIC), all or none. Also used by `generate` (autoSave). */
    async createMany(
      userId: string,
      requests: Array<BatchSourceRequestItem | BatchSourceInput>,
      projectId?: string | null,
    ): Promise<SourceView[]> {
      const applied = await templates.apply(userId, requests, batchSourceItem, ['url'], (i) => `sources.${i}.`);
      const items = applied.map((a) => a.input as BatchSourceInput);
      const placed = items.map((item, i) => placeCrawlSettings(item as CrawlSettingsInput, `sources.${i}.`));
      const errors = items.flatMap((item, i) => [
        ...placed[i]!.errors,
        ...selectorErrors(placed[i]!.selectors ?? {}, item.scrapeType ?? 'DYNAMIC', `sources.${i}.`),
      ]);
      if (errors.length) throw invalid(errors);
      await checkProject(userId, projectId);
      await checkProfileTypes(
        userId,
        items.map((item, i) => ({ id: item.profileTypeId, field: `sources.${i}.profileTypeId` })),
      );
      const now = deps.clock.now();
      const rows = await repo.insertMany(
        items.map((item, i) =>
          newRow(userId, item, placed[i]!, projectId?.toLowerCase() ?? null, now, applied[i]!.templateId),
        ),
      );
      return rows.map(toSourceView);
    },

    async update(userId: string, id: string, input: UpdateSourceInput): Promise<SourceView> {
      const current = await owned(userId, id);
      const scrapeType = input.scrapeType ?? current.scrapeType;
      const placed = placeCrawlSettings(input);
      if (placed.errors.length) throw invalid(placed.errors);
      if (input.selectors !== undefined || input.scrapeType !== undefined) {
        const errors = selectorErrors(placed.selectors ?? current.selectors, scrapeType);
        if (errors.length) throw invalid(errors);
      }
      // Settings moved out of the selectors join the stored options unless the body replaces them.
      const options =
        placed.options && input.options === undefined
          ? { ...(current.options as object), ...placed.options }
          : placed.options;
      const settled = { ...input, ...placed, options };
      await checkProject(userId, input.projectId);
      await checkProfileTypes(userId, [{ id: input.profileTypeId, field: 'profileTypeId' }]);
      await checkProxyProfile(userId, input.proxyProfileId);
      const now = deps.clock.now();
      const status = input.status ?? current.status;
      const scheduleType = input.scheduleType ?? current.scheduleType;
      const scheduleChanged = status !== current.status || scheduleType !== current.scheduleType;
      const values: Partial<NewSource> = {};
      for (const key of [
        'name',
        'url',
        'scrapeType',
        'selectors',
        'status',
        'scheduleType',
        'maxPages',
        'respectRobotsTxt',
        'options',
      ] as const) {
        if (settled[key] !== undefined) (values as Record<string, unknown>)[key] = settled[key];
      }
      if (input.description !== undefined) values.description = input.description || null;
      if (input.reasoning !== undefined) values.reasoning = input.reasoning || null;
      if (input.projectId !== undefined) values.projectId = input.projectId?.toLowerCase() ?? null;
      if (input.profileTypeId !== undefined) values.profileTypeId = input.profileTypeId?.toLowerCase() ?? null;
      if (input.proxyProfileId !== undefined) values.proxyProfileId = input.proxyProfileId?.toLowerCase() ?? null;
      if (Object.keys(values).length === 0) return toSourceView(current);
      if (scheduleChanged) values.nextRunAt = nextRunAt(scheduleType, status, now);
      const row = await repo.update(userId, current.id, { ...values, updatedAt: now });
      if (!row) throw notFound('Source');
      return toSourceView(row);
    },

    async remove(userId: string, id: string): Promise<void> {
      await findOwned(id, 'Source', (key) => repo.deleteWithData(userId, key));
    },

    /** DRAFT or ARCHIVED → ACTIVE; an ACTIVE source is 400 ALREADY_ACTIVE (docs/api.md, Errors). Starts its schedule. */
    async activate(userId: string, id: string): Promise<SourceView> {
      const current = await owned(userId, id);
      if (current.status === 'ACTIVE') throw new AppError('ALREADY_ACTIVE', 'Source is already active');
      const now = deps.clock.now();
      // Conditional on the status read, so two concurrent activations give one 200 and one 400.
      const row = await repo.update(
        userId,
        current.id,
        { status: 'ACTIVE', nextRunAt: nextRunAt(current.scheduleType, 'ACTIVE', now), updatedAt: now },
        current.status,
      );
      if (!row) throw new AppError('ALREADY_ACTIVE', 'Source is already active');
      return toSourceView(row);
    },
  };
}

/** The user's source with this id, if any (the job runner and the jobs service ask for it). */
export const findSource = (db: Db, userId: string, id: string) => sourceRepository(db).find(userId, id);

/** Inserts sources in the caller's transaction (a deal campaign's proposed sources), answering their ids and statuses. */
export const insertSources = (tx: Tx, values: NewSource[]) => insertSourceRows(tx, values);

/** Whether the user has this project (a body's `projectId` for new sources). */
export const ownedProjectExists = (db: Db, userId: string, projectId: string) =>
  sourceRepository(db).projectExists(userId, projectId);
