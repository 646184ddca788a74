import { z } from 'zod';
import type { AppDeps } from '../../../deps.ts';
import { AppError, type ErrorDetail, validationErrors } from '../../../shared/errors.ts';
import { findOwned, isUuid } from '../../../shared/ids.ts';
import { decodeJsonCursor, encodeJsonCursor } from '../../../shared/pagination.ts';
import { validateSelectors } from '../../scraping/index.ts';
import { placeCrawlSettings } from '../crawl-settings.ts';
import { type CrawlOptions, sourceUrl } from '../sources.schemas.ts';
import { builtinTemplates, findBuiltin } from './templates.builtins.ts';
import { type TemplateRow, templateRepository } from './templates.repository.ts';
import type { CreateTemplateInput, ListTemplatesQuery, TemplateView } from './templates.schemas.ts';
import { fillPattern, parsePattern } from './url-pattern.ts';

const toView = (r: TemplateRow): TemplateView => ({
  id: r.id,
  kind: 'own',
  name: r.name,
  description: r.description,
  scrapeType: r.scrapeType,
  urlPattern: r.urlPattern,
  variables: parsePattern(r.urlPattern, 'urlPattern').variables,
  selectors: r.selectors,
  scheduleType: r.scheduleType,
  options: r.options as CrawlOptions,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

/** Built-ins come first, in catalogue order (`b`: the next index), then own templates newest first (`o`: last id). */
const cursorSchema = z
  .object({
    b: z.number().int().min(0).max(builtinTemplates.length).optional(),
    o: z.string().refine(isUuid).optional(),
  })
  .strict();

/** What a source body may carry to be made from a template (sources.schemas.ts `fromTemplate`). */
export interface TemplateFields {
  templateId?: string;
  variables?: Record<string, string>;
  url?: string;
  options?: Record<string, unknown>;
}

export type TemplateService = ReturnType<typeof createTemplateService>;

export function createTemplateService(deps: Pick<AppDeps, 'db' | 'clock'>) {
  const repo = templateRepository(deps.db);

  /** A built-in, or one of the caller's own; anything else is a 404 (naming `field` for ids in a body). */
  async function find(userId: string, id: string, field?: string): Promise<TemplateView> {
    const builtin = findBuiltin(id);
    if (builtin) return builtin.template;
    return toView(await findOwned(id, 'Source template', (key) => repo.find(userId, key), field));
  }

  return {
    find,

    async list(userId: string, query: ListTemplatesQuery) {
      const cursor = decodeJsonCursor(query.cursor, cursorSchema);
      const items: TemplateView[] = [];
      if (query.kind !== 'own' && !cursor?.o) {
        const start = cursor?.b ?? 0;
        items.push(...builtinTemplates.slice(start, start + query.limit + 1));
      }
      if (query.kind !== 'builtin' && items.length <= query.limit) {
        const rows = await repo.list(userId, query.limit - items.length, cursor?.o);
        items.push(...rows.map(toView));
      }
      if (items.length <= query.limit) return { templates: items, nextCursor: null };
      const page = items.slice(0, query.limit);
      const last = page[page.length - 1]!;
      const next = last.kind === 'own' ? { o: last.id } : { b: findBuiltin(last.id)!.index + 1 };
      return { templates: page, nextCursor: encodeJsonCursor(next) };
    },

    async create(userId: string, input: CreateTemplateInput): Promise<TemplateView> {
      const pattern = parsePattern(input.urlPattern, 'urlPattern');
      const errors = [...pattern.errors];
      const sample = fillPattern(input.urlPattern, Object.fromEntries(pattern.variables.map((v) => [v, 'x'])));
      if (!errors.length && !sourceUrl.safeParse(sample).success)
        errors.push({ field: 'urlPattern', message: 'must be an http(s) URL once its variables are filled' });
      // Crawl settings among the selectors or in `options` are sorted as a source's are; all go to `options`.
      const placed = placeCrawlSettings({ selectors: input.selectors, options: input.options });
      errors.push(...placed.errors, ...validateSelectors(placed.selectors ?? {}, input.scrapeType));
      if (errors.length) throw validationErrors(errors);
      const options = { ...placed.options };
      if (placed.maxPages != null) options.maxPages = placed.maxPages;
      if (placed.respectRobotsTxt !== undefined) options.respectRobotsTxt = placed.respectRobotsTxt;
      const now = deps.clock.now();
      const row = await repo.insert({
        userId,
        name: input.name,
        description: input.description || null,
        scrapeType: input.scrapeType,
        urlPattern: input.urlPattern,
        selectors: placed.selectors ?? {},
        scheduleType: input.scheduleType,
        options,
        createdAt: now,
        updatedAt: now,
      });
      return toView(row);
    },

    async remove(userId: string, id: string): Promise<void> {
      if (findBuiltin(id))
        throw new AppError('TEMPLATE_READ_ONLY', 'Built-in templates are read-only; save your own copy instead');
      await findOwned(id, 'Source template', (key) => repo.remove(userId, key));
    },

    /**
     * Source bodies with their templates applied (docs/scraping.md "Source templates"): the template gives `url`
     * (its pattern filled with `variables`), `scrapeType`, `selectors`, `scheduleType` and `options`; a field of the
     * body wins over the template's. Bodies without a template must carry the `required` fields themselves. Every
     * problem of every body is one 400 (fields prefixed by `prefixOf`); an unknown template is a 404.
     */
    async apply<T>(
      userId: string,
      bodies: Array<TemplateFields & Record<string, unknown>>,
      strict: z.ZodType<T>,
      required: readonly string[],
      prefixOf: (i: number) => string = () => '',
    ): Promise<Array<{ input: T; templateId: string | null }>> {
      const errors: ErrorDetail[] = [];
      const out: Array<{ input: T; templateId: string | null }> = [];
      const found = new Map<string, TemplateView>();
      for (const [i, body] of bodies.entries()) {
        const p = prefixOf(i);
        const { templateId, variables, ...given } = body;
        if (templateId === undefined) {
          if (variables !== undefined) errors.push({ field: `${p}variables`, message: 'only with templateId' });
          for (const key of required)
            if (given[key] === undefined)
              errors.push({ field: `${p}${key}`, message: 'Required unless templateId is given' });
          out.push({ input: given as T, templateId: null });
          continue;
        }
        const template = found.get(templateId) ?? (await find(userId, templateId, `${p}templateId`));
        found.set(templateId, template);
        const fill = given.url === undefined ? variableErrors(template, variables ?? {}, p) : [];
        errors.push(...fill);
        if (fill.length) continue;
        const defined = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
        const merged: Record<string, unknown> = {
          scrapeType: template.scrapeType,
          selectors: template.selectors,
          scheduleType: template.scheduleType,
          options: Object.keys(template.options).length ? template.options : undefined,
          url: given.url ?? fillPattern(template.urlPattern, variables ?? {}),
          ...defined,
        };
        const parsed = strict.safeParse(merged);
        if (!parsed.success) {
          errors.push(
            ...parsed.error.issues.map((issue) => ({ field: `${p}${issue.path.join('.')}`, message: issue.message })),
          );
          continue;
        }
        // Schemas without `options` (batch items) would drop the template's crawl settings.
        const input = merged.options ? { ...(parsed.data as object), options: merged.options } : parsed.data;
        out.push({ input: input as T, templateId: template.id });
      }
      if (errors.length) throw validationErrors(errors);
      return out;
    },
  };
}

/** A value for each variable of the template's pattern, and none other. */
function variableErrors(template: TemplateView, values: Record<string, string>, prefix: string): ErrorDetail[] {
  const missing = template.variables
    .filter((name) => values[name] === undefined)
    .map((name) => ({ field: `${prefix}variables.${name}`, message: `Required by template ${template.id}` }));
  const unknown = Object.keys(values)
    .filter((name) => !template.variables.includes(name))
    .map((name) => ({
      field: `${prefix}variables.${name}`,
      message: `Not a variable of template ${template.id} (${template.variables.join(', ') || 'it has none'})`,
    }));
  return [...missing, ...unknown];
}
