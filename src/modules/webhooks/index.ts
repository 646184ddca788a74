/**
 * The webhooks module's face (docs/CONVENTIONS.md "A module's face"). Services emit events through
 * `emitEvent` (src/shared/events.ts); this module implements its outbox (`recordEvent`, which `assembleDeps`
 * installs) and delivers what it holds.
 */
export { createWebhookDispatcher } from './webhooks.dispatcher.ts';
export { recordEvent, WEBHOOK_WAKE_CHANNEL } from './webhooks.repository.ts';
export { webhookRoutes } from './webhooks.routes.ts';
export { pruneWebhookHistory } from './webhooks.service.ts';
