/**
 * The sources module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */

export type { SourceRow } from './sources.repository.ts';
export { sourceRoutes } from './sources.routes.ts';
export { type CrawlOptions, createSourceBody, listSourcesQuery } from './sources.schemas.ts';
export { createSourceService, findSource, insertSources, ownedProjectExists } from './sources.service.ts';
export { type CatalogueEntry, catalogue } from './templates/directory-catalogue.ts';
export { sourceTemplateRoutes } from './templates/templates.routes.ts';
