// The cloud browser's face (docs/CONVENTIONS.md, "A module with sub-folders").
export { browserCdpRoutes } from './cdp/cdp.routes.ts';
export { browserExtensionRoutes } from './extensions/extensions.routes.ts';
export { browserLiveRoutes } from './live/live.routes.ts';
export { browserProfileRoutes } from './profiles/profiles.routes.ts';
export { removeProfileFilesOf } from './profiles/profiles.store.ts';
export type { LiveSession } from './sessions/host.ts';
export { browserOperationRoutes } from './sessions/operations.ts';
export { withServiceSession } from './sessions/service-session.ts';
export { browserSessionRoutes } from './sessions/sessions.routes.ts';
export type { SessionView } from './sessions/sessions.schemas.ts';
export { type BrowserSessions, browserSessionsOf } from './sessions/sessions.service.ts';
export { clientRefOf, scopeOf } from './sessions/tenancy.ts';
export { sweepSnapshots } from './snapshots/sweep.ts';
export { browserUsageRoutes } from './usage/usage.routes.ts';
