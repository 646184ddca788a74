/**
 * The source-discovery module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export { createProposer } from './source-discovery.ai.ts';
export { sourceDiscoveryRoutes } from './source-discovery.routes.ts';
