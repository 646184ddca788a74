/**
 * The api-keys module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export { apiKeyRoutes } from './api-keys.routes.ts';
export { type ApiKeyService, createApiKeyService } from './api-keys.service.ts';
