/**
 * The suppressions module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export { suppressionRoutes } from './suppressions.routes.ts';
export { suppress, suppressionOf } from './suppressions.service.ts';
