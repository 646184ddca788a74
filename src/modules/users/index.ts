/**
 * The users module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export { userRoutes } from './users.routes.ts';
export { emailInput, password, toUserView, userView } from './users.schemas.ts';
export {
  accountStatusOf,
  createUserService,
  findUserByEmail,
  insertOrganizationAccount,
  lockUser,
  setUserAccountState,
} from './users.service.ts';
