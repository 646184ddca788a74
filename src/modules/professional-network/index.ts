/**
 * The professional-network module's face (docs/CONVENTIONS.md "A module's face"). Named for what it is, not for
 * one network: the HTTP path word is `linkedin` (the specification's fixed word), the network's address a setting.
 */

export { createEnrichRecovery } from './enrich.recovery.ts';
export { createEnricher, type NetworkEnrichMessage } from './enrich.ts';
export { professionalNetworkRoutes } from './network.routes.ts';
