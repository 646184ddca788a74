/**
 * The webhooks module's face (docs/CONVENTIONS.md "A module's face"). Services emit events through
 * `emitEvent` (src/shared/events.ts); this module implements its outbox (`eventOutbox`, which `assembleDeps`
 * installs) and delivers what it holds.
 */
export { createWebhookDispatcher } from './webhooks.dispatcher.ts';
export { webhookRoutes } from './webhooks.routes.ts';
export { eventOutbox, pruneWebhookHistory } from './webhooks.service.ts';
export { newSigningSecret, signatureHeader } from './webhooks.signing.ts';
