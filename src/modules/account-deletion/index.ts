/**
 * The account-deletion module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export { accountDeletionRoutes } from './account-deletion.routes.ts';
export { createAccountDeletionService } from './account-deletion.service.ts';
