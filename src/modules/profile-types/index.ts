/**
 * The profile-types module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export { coerceData, coerceFieldValue, isEmptyValue } from './profile-fields.ts';
export type { ProfileTypeRow } from './profile-types.repository.ts';
export { profileTypeRoutes } from './profile-types.routes.ts';
export { createProfileTypeService } from './profile-types.service.ts';
