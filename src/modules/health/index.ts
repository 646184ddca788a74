/**
 * The health module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export { healthRoutes } from './health.routes.ts';
