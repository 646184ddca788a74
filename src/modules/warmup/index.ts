/**
 * The warmup module's face (docs/CONVENTIONS.md "A module's face"): its routes and sender for the app and the
 * workers, and the service and views outreach's connections use to warm a connected domain.
 */

export { warmupRoutes } from './warmup.routes.ts';
export { createWarmupBody, type WarmupDomainView, warmupDomainView } from './warmup.schemas.ts';
export { createWarmupSender } from './warmup.sender.ts';
export { createWarmupService } from './warmup.service.ts';
