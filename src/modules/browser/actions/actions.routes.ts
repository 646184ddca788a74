import type { RouteModule } from '../../../route-module.ts';
import { envelope, errorResponses, ok } from '../../../shared/http.ts';
import { browserTags, sessionParams, sessionPath, writeScope } from '../tabs/route-parts.ts';
import type { SessionResolver } from '../tabs/session-browser.ts';
import { ACTION_BODIES, type ActionName, actionResultView, batchBody, batchResultView } from './actions.schemas.ts';
import { runAction, runBatch } from './actions.service.ts';

const summaries: Record<ActionName, string> = {
  navigate: 'Go to a URL, or back, forward, reload, on the active tab',
  click: 'Click an element or a point',
  type: 'Type text into an element, key by key',
  press: 'Press a key or a chord (Control+A)',
  scroll: 'Scroll the page or an element, by pixels or to the top or bottom',
  drag: 'Drag from an element or point to another',
  wait: 'Wait for a selector state, a URL, a load state, or a time',
  evaluate: 'Run JavaScript in the page; the result comes back as JSON (at most 1 MB)',
};

/** `POST /api/browser/sessions/{id}/actions/…`: the nine actions, run on the session's active tab. */
export const browserActionRoutes =
  (resolve: SessionResolver): RouteModule =>
  (app) => {
    const errors = errorResponses(400, 401, 403, 404, 422);
    for (const action of Object.keys(ACTION_BODIES) as ActionName[]) {
      app.post(sessionPath(`actions/${action}`), {
        config: writeScope,
        schema: {
          tags: browserTags,
          summary: summaries[action],
          description:
            'A failure of the page (selector not found in time, navigation error, script error) is 422 ACTION_FAILED.',
          params: sessionParams,
          body: ACTION_BODIES[action],
          response: { 200: envelope(actionResultView), ...errors },
        },
        handler: async (request) => {
          const session = await resolve(request, request.params.id);
          return ok(await runAction(session, action, request.body as never));
        },
      });
    }
    app.post(sessionPath('actions/batch'), {
      config: writeScope,
      schema: {
        tags: browserTags,
        summary: 'Run several actions in order, stopping at the first failure',
        description:
          "Each step is `{ action, …that action's body }`; all are checked before the first runs. A failing step " +
          'answers 422 ACTION_FAILED naming `steps.<i>.<action>`.',
        params: sessionParams,
        body: batchBody,
        response: { 200: envelope(batchResultView), ...errors },
      },
      handler: async (request) => {
        const session = await resolve(request, request.params.id);
        return ok(await runBatch(session, request.body.steps));
      },
    });
  };
