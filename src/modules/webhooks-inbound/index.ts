/**
 * The webhooks-inbound module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export { inboundWebhookRoutes } from './webhooks-inbound.routes.ts';
