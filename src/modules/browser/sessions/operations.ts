import type { AppDeps } from '../../../deps.ts';
import type { RouteModule } from '../../../route-module.ts';
import { AppError } from '../../../shared/errors.ts';
import { browserActionRoutes } from '../actions/actions.routes.ts';
import { browserFileRoutes } from '../files/files.routes.ts';
import { browserLogRoutes } from '../logs/logs.routes.ts';
import { browserPageRoutes } from '../page/page.routes.ts';
import { browserRecordingRoutes } from '../recording/recording.routes.ts';
import { browserSnapshotRoutes } from '../snapshots/snapshots.routes.ts';
import { browserStateRoutes } from '../state/state.routes.ts';
import type { SessionOperations, SessionResolver } from '../tabs/session-browser.ts';
import { browserTabRoutes } from '../tabs/tabs.routes.ts';
import type { LiveSession } from './host.ts';
import { operationsFor } from './session-operations.ts';
import { browserSessionsOf } from './sessions.service.ts';

/**
 * A live session's operations (tab registry, log buffer) over the service's own Playwright connection, made on
 * first use and disposed when that connection closes with the session. The live viewer and a wake share them.
 */
export async function operationsOf(deps: AppDeps, live: LiveSession): Promise<SessionOperations> {
  const browser = await browserSessionsOf(deps).playwright(live.id);
  return operationsFor(browser, live, () => deps.clock.now());
}

/**
 * The resolver the operation routes call: X-Client-Ref and ownership through the sessions service (404, 400
 * INVALID_STATE once ended, 503 on another host; a sleeping session is woken first, the caller waiting for it),
 * then the session's operations (`operationsOf`).
 */
export function operationsResolverOf(deps: AppDeps): SessionResolver {
  const sessions = browserSessionsOf(deps);
  return async (request, id) => {
    const live = await sessions.findLiveSession(request, id);
    // The session may end between the two (or its browser refuse the connection): that is its state, not a fault.
    return operationsOf(deps, live).catch((err: Error) => {
      throw new AppError('INVALID_STATE', `The browser session cannot be driven now: ${err.message}`, {
        details: [{ field: 'id', message: 'session is ending' }],
      });
    });
  };
}

/**
 * Actions, page, tabs, cookies and storage, logs: `/api/browser/sessions/{id}/…` on a live session; sleep and the
 * snapshots it leaves.
 */
export const browserOperationRoutes: RouteModule = (app, deps) => {
  const resolve = operationsResolverOf(deps);
  browserRecordingRoutes()(app, deps); // read after release too: it looks the session up itself, not via resolve
  browserSnapshotRoutes(app, deps);
  for (const routes of [
    browserActionRoutes,
    browserPageRoutes,
    browserTabRoutes,
    browserStateRoutes,
    browserLogRoutes,
    browserFileRoutes,
  ])
    routes(resolve)(app, deps);
};
