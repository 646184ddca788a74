import { z } from 'zod';
import type { RouteModule } from '../../../route-module.ts';
import { AppError, notFound } from '../../../shared/errors.ts';
import { envelope, errorResponses, ok } from '../../../shared/http.ts';
import { browserSessionsOf } from '../sessions/sessions.service.ts';
import { browserTags, readScope, sessionParams, sessionPath } from '../tabs/route-parts.ts';
import { readRecording, sweepRecordings } from './recording-store.ts';
import { REPLAY_CSP, replayPage } from './replay-page.ts';

const SWEEP_INTERVAL_MS = 6 * 3600_000;

const recordingQuery = z.object({
  format: z.enum(['json', 'html']).default('json').describe('json: the events; html: a self-contained replay page'),
  page: z
    .string()
    .regex(/^page_\d+$/, 'a page id of this recording (page_1, page_2, …)')
    .optional()
    .describe('The page (tab) to answer; default the first one recorded'),
});

const recordedPageView = z
  .object({
    id: z.string(),
    url: z.string().nullable().describe('Address of its first recorded document'),
    events: z.number().int(),
  })
  .meta({ id: 'BrowserRecordedPage' });

const recordingView = z
  .object({
    page: z.string().nullable().describe('The page these events are of (null when nothing was recorded)'),
    events: z.array(z.looseObject({ type: z.number().int(), timestamp: z.number() })),
    truncated: z.boolean().describe('The recording reached its size cap: events after that were dropped'),
    pages: z.array(recordedPageView),
  })
  .meta({ id: 'BrowserRecording' });

/**
 * `GET /api/browser/sessions/{id}/recording`: the rrweb events of a session created with `record: true`, live or
 * ended (recordings outlive their session; they are read afterwards). The session lookup is the one of `GET` a
 * session: another user's or another X-Client-Ref's is 404.
 */
export const browserRecordingRoutes = (): RouteModule => (app, deps) => {
  const sessions = browserSessionsOf(deps);
  const dataDir = deps.config.dataDir;
  const sweep = () =>
    void sweepRecordings(dataDir, deps.clock.now().getTime()).catch((err) =>
      deps.logger.warn({ err }, 'sweeping browser recordings failed'),
    );
  let sweeper: NodeJS.Timeout | undefined;
  app.addHook('onReady', async () => {
    sweep();
    sweeper = setInterval(sweep, SWEEP_INTERVAL_MS);
    sweeper.unref();
  });
  app.addHook('onClose', async () => clearInterval(sweeper));

  app.get(sessionPath('recording'), {
    config: readScope,
    schema: {
      tags: browserTags,
      summary: 'The rrweb recording of a session created with record: true (events, or an HTML replay page)',
      description:
        'Every page of the session is recorded from its first document on, through navigations, with its ' +
        'cross-origin frames; the recording stops when the session ends and stays readable after it. Each page ' +
        '(tab) is its own rrweb recording: `pages` lists them, `page` picks one (default: the first). ' +
        '`format=html` answers a self-contained replay page (rrweb-player inlined; text/html). 404 when the ' +
        'session was not recorded.',
      params: sessionParams,
      querystring: recordingQuery,
      response: {
        200: z.union([envelope(recordingView), z.string().describe('format=html: the replay page (text/html)')]),
        ...errorResponses(400, 401, 403, 404),
      },
    },
    handler: async (request, reply) => {
      const session = await sessions.get(request, request.params.id, '');
      if (!session.record)
        throw new AppError('NOT_FOUND', 'This session was not recorded (create it with record: true)');
      const recording = await readRecording(dataDir, session.id);
      if (!recording) {
        throw new AppError(
          'NOT_FOUND',
          'No recording of this session is stored here (it is kept by the host that ran it, for 30 days)',
        );
      }
      const pageId = request.query.page ?? recording.pages[0]?.id ?? null;
      if (request.query.page && !recording.pages.some((p) => p.id === pageId)) throw notFound('Recorded page', 'page');
      const events = pageId ? recording.events(pageId) : [];
      if (request.query.format === 'html') {
        const url = recording.pages.find((p) => p.id === pageId)?.url;
        const html = replayPage(`Recording of ${session.id}${url ? ` — ${url}` : ''}`, events);
        return reply
          .type('text/html; charset=utf-8')
          .header('cache-control', 'no-store')
          .header('content-security-policy', REPLAY_CSP)
          .send(html);
      }
      return ok({ page: pageId, events, truncated: recording.truncated, pages: recording.pages });
    },
  });
};
