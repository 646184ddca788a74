import { catalogue } from './directory-catalogue.ts';
import type { TemplateView } from './templates.schemas.ts';
import { parsePattern } from './url-pattern.ts';

export const BUILTIN_PREFIX = 'builtin:';

/**
 * The built-in templates: one per directory kind of the catalogue (docs/source-catalogue.md), its search URL as
 * the pattern (`{query}`, `{slug}`, `{term}` become variables) and its selectors where it has them. Read-only.
 */
export const builtinTemplates: readonly TemplateView[] = catalogue.map((entry) => ({
  id: `${BUILTIN_PREFIX}${entry.id}`,
  kind: 'builtin',
  name: entry.name,
  description: entry.description,
  scrapeType: entry.scrapeType,
  urlPattern: entry.urlTemplate,
  variables: parsePattern(entry.urlTemplate, 'urlPattern').variables,
  selectors: entry.selectors ?? {},
  scheduleType: 'MANUAL',
  options: {},
  createdAt: null,
  updatedAt: null,
}));

const byId = new Map(builtinTemplates.map((t, index) => [t.id, { template: t, index }]));

/** The built-in template with this id and its place in the list, if any. */
export const findBuiltin = (id: string) => byId.get(id);
