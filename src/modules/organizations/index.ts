/**
 * The organizations module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export { organizationRoutes } from './organizations.routes.ts';
export { joinByInvitation, lockMembershipsOf, orgsBlockingDeletion, orgsDeletedWith } from './organizations.service.ts';
