/**
 * The accounts module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export { accountIdOf, accountKeyOf, describeAccountKey } from './account-key.ts';
export { accountRoutes } from './accounts.routes.ts';
export { createAccountService, lockAccountRollups } from './accounts.service.ts';
