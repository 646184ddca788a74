import fs from 'node:fs/promises';
import { z } from 'zod';
import { ping } from '../../db/client.ts';
import type { RouteModule } from '../../route-module.ts';
import { envelope, errorEnvelope, ok } from '../../shared/http.ts';

const healthData = z.object({
  status: z.enum(['ok', 'degraded']),
  database: z.object({
    status: z.enum(['ok', 'down']),
    kind: z.enum(['pglite', 'postgres']),
    latencyMs: z.number().optional(),
  }),
  queue: z.object({
    status: z.enum(['ok', 'down']),
    queued: z.number().int().optional(),
    active: z.number().int().optional(),
  }),
  browserPool: z.object({ status: z.enum(['ready', 'unavailable']), chromiumPath: z.string() }),
  uptimeSeconds: z.number(),
});

export const healthRoutes: RouteModule = (app, deps) => {
  app.get('/api/health', {
    config: { public: true },
    schema: {
      tags: ['Infrastructure'],
      summary: 'Liveness and readiness: database, job queue and browser pool',
      description: '200 when the database answers, 503 otherwise.',
      security: [],
      response: { 200: envelope(healthData), 503: errorEnvelope },
    },
    handler: async (_request, reply) => {
      const started = performance.now();
      const database = await Promise.race([
        ping(deps.database).then(() => true),
        new Promise<false>((resolve) => setTimeout(resolve, 3000, false).unref()),
      ]).catch(() => false);
      if (!database) {
        return reply
          .code(503)
          .send({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'Database is not answering' } });
      }
      const latencyMs = Math.round((performance.now() - started) * 10) / 10;
      const queue = await deps.boss
        .getQueues()
        .then((qs) => ({
          status: 'ok' as const,
          queued: qs.reduce((n, q) => n + (q.queuedCount ?? 0), 0),
          active: qs.reduce((n, q) => n + (q.activeCount ?? 0), 0),
        }))
        .catch(() => ({ status: 'down' as const }));
      const chromium = await fs.access(deps.config.CHROMIUM_PATH).then(
        () => true,
        () => false,
      );
      return ok({
        status: queue.status === 'ok' ? ('ok' as const) : ('degraded' as const),
        database: { status: 'ok' as const, kind: deps.database.kind, latencyMs },
        queue,
        browserPool: {
          status: chromium ? ('ready' as const) : ('unavailable' as const),
          chromiumPath: deps.config.CHROMIUM_PATH,
        },
        uptimeSeconds: Math.round(process.uptime()),
      });
    },
  });
};
