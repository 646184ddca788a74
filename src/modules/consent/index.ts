/**
 * The consent module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export { consentRoutes } from './consent.routes.ts';
