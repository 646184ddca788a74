import { z } from 'zod';
import type { RouteModule } from '../../../route-module.ts';
import { envelope, errorResponses, isoDate, ok } from '../../../shared/http.ts';
import { openEventStream } from '../../../shared/sse.ts';
import { browserTags, readScope, sessionParams, sessionPath } from '../tabs/route-parts.ts';
import type { SessionResolver } from '../tabs/session-browser.ts';
import { LOG_TYPES, type LogType } from './log-buffer.ts';

const logQuery = z.object({
  type: z
    .string()
    .regex(
      new RegExp(`^(${LOG_TYPES.join('|')})(,(${LOG_TYPES.join('|')}))*$`),
      `comma-separated: ${LOG_TYPES.join(', ')}`,
    )
    .optional()
    .describe('console, pageerror, network, live (comma-separated)'),
  since: isoDate.optional().describe('Entries at or after this time'),
  after: z.coerce.number().int().min(0).optional().describe('Entries after this seq (the last one seen)'),
});

const logEntryView = z
  .object({
    seq: z.number().int(),
    type: z.enum(LOG_TYPES),
    at: z.string(),
    tabId: z.string(),
    level: z.string(),
    text: z.string(),
    method: z.string().optional(),
    url: z.string().optional(),
    status: z.number().int().optional(),
    durationMs: z.number().int().optional(),
    failure: z.string().optional(),
  })
  .meta({ id: 'BrowserLogEntry' });

const filterOf = (query: z.infer<typeof logQuery>) => ({
  types: query.type?.split(',') as LogType[] | undefined,
  after: query.after,
  since: query.since === undefined ? undefined : new Date(query.since),
});

/** `/api/browser/sessions/{id}/logs` (and `/stream`): console, page errors and requests of every tab, bounded. */
export const browserLogRoutes =
  (resolve: SessionResolver): RouteModule =>
  (app) => {
    app.get(sessionPath('logs'), {
      config: readScope,
      schema: {
        tags: browserTags,
        summary: "The session's recent console messages, page errors and network requests",
        description: 'A ring buffer per session: the oldest entries are dropped beyond its capacity, and counted.',
        params: sessionParams,
        querystring: logQuery,
        response: {
          200: envelope(
            z.object({ entries: z.array(logEntryView), dropped: z.number().int(), capacity: z.number().int() }),
          ),
          ...errorResponses(400, 401, 403, 404),
        },
      },
      handler: async (request) => {
        const { logs } = await resolve(request, request.params.id);
        return ok({ entries: logs.entries(filterOf(request.query)), dropped: logs.dropped, capacity: logs.capacity });
      },
    });
    app.get(sessionPath('logs/stream'), {
      config: readScope,
      schema: {
        tags: browserTags,
        summary: 'The session log as Server-Sent Events: entries matching the filter so far, then each new one',
        description: 'Each entry is an `event: log` whose data is a log entry (as in `GET logs`).',
        params: sessionParams,
        querystring: logQuery,
        response: { 200: z.any().describe('text/event-stream'), ...errorResponses(400, 401, 403, 404) },
      },
      handler: async (request, reply) => {
        const { logs } = await resolve(request, request.params.id);
        const filter = filterOf(request.query);
        const stream = openEventStream(reply);
        stream.retry(2000);
        for (const entry of logs.entries(filter)) stream.send('log', entry);
        // The session's end (dispose) ends the stream too.
        const unsubscribe = logs.subscribe(
          (entry) => {
            if (!filter.types || filter.types.includes(entry.type)) stream.send('log', entry);
          },
          () => stream.raw.end(),
        );
        const stopKeepAlive = stream.keepAlive(15_000);
        stream.raw.once('close', () => {
          unsubscribe();
          stopKeepAlive();
        });
      },
    });
  };
