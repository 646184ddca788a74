/**
 * The analytics module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export { analyticsRoutes } from './analytics.routes.ts';
export { createAnalyticsService } from './analytics.service.ts';
