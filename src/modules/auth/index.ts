/**
 * The auth module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export { authRoutes } from './auth.routes.ts';
export { consoleSessionRoutes } from './console-session.routes.ts';
