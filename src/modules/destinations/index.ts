/**
 * The destinations module's face (docs/CONVENTIONS.md "A module's face"): what the app and the workers use.
 */
export { destinationRoutes } from './destinations.routes.ts';
export { createDestinationPushRecovery, createDestinationPushRunner } from './destinations.runner.ts';
export { createDestinationService, type DestinationPushMessage } from './destinations.service.ts';
