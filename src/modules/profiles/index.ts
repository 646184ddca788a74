/**
 * The profiles module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */

export { profilesOfLeads } from './profiles.outreach.ts';
export { profileRoutes } from './profiles.routes.ts';
export { createProfileService } from './profiles.service.ts';
