import type { Browser } from 'playwright-core';
import type { AppDeps } from '../../../deps.ts';
import type { RouteModule } from '../../../route-module.ts';
import { AppError } from '../../../shared/errors.ts';
import { browserActionRoutes } from '../actions/actions.routes.ts';
import { browserFileRoutes } from '../files/files.routes.ts';
import { browserLogRoutes } from '../logs/logs.routes.ts';
import { browserPageRoutes } from '../page/page.routes.ts';
import { browserRecordingRoutes } from '../recording/recording.routes.ts';
import { browserStateRoutes } from '../state/state.routes.ts';
import { createSessionOperations, type SessionOperations, type SessionResolver } from '../tabs/session-browser.ts';
import { browserTabRoutes } from '../tabs/tabs.routes.ts';
import type { LiveSession } from './host.ts';
import { browserSessionsOf } from './sessions.service.ts';

/** One set of operations (tab ids, the log buffer) per Playwright connection, i.e. per live session of this host. */
const operationsByBrowser = new WeakMap<Browser, SessionOperations>();

/**
 * A live session's operations (tab registry, log buffer) over the service's own Playwright connection, made on
 * first use and disposed when that connection closes with the session. The live viewer shares them.
 */
export async function operationsOf(deps: AppDeps, live: LiveSession): Promise<SessionOperations> {
  const browser = await browserSessionsOf(deps).playwright(live.id);
  let operations = operationsByBrowser.get(browser);
  if (!operations) {
    const created = createSessionOperations(browser, {
      now: () => deps.clock.now(),
      onActivity: () => {
        live.lastActivity = deps.clock.now().getTime();
      },
    });
    operationsByBrowser.set(browser, created);
    browser.once('disconnected', () => created.dispose());
    operations = created;
  }
  return operations;
}

/**
 * The resolver the operation routes call: X-Client-Ref and ownership through the sessions service (404, 400
 * INVALID_STATE once ended, 503 on another host), then the session's operations (`operationsOf`).
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

/** Actions, page, tabs, cookies and storage, logs: `/api/browser/sessions/{id}/…` on a live session. */
export const browserOperationRoutes: RouteModule = (app, deps) => {
  const resolve = operationsResolverOf(deps);
  browserRecordingRoutes()(app, deps); // read after release too: it looks the session up itself, not via resolve
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
