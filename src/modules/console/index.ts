/**
 * The console module's face (docs/CONVENTIONS.md "A module's face"): the web console's pages and files. Its sign-in
 * is the auth module's (`consoleSessionRoutes`).
 */
export { consoleRoutes } from './console.routes.ts';
