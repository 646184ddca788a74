/**
 * `GET /api/browser/usage`: the caller's live and sleeping sessions, its browser minutes this month, and every
 * host's room (PostgreSQL: the hosts' registry, fresh heartbeats only; PGlite: this process).
 */
import os from 'node:os';
import { and, eq, gte, inArray, sql } from 'drizzle-orm';
import { z } from 'zod';
import { browserSessions } from '../../../db/schema/index.ts';
import type { RouteModule } from '../../../route-module.ts';
import { envelope, errorResponses, isoDate, ok } from '../../../shared/http.ts';
import { hostsRepository } from '../hosts/hosts.repository.ts';
import { LIVE_STATUSES, OPEN_STATUSES } from '../sessions/sessions.repository.ts';
import { browserSessionsOf } from '../sessions/sessions.service.ts';
import { scopeOf } from '../sessions/tenancy.ts';
import { browserTags, readScope } from '../tabs/route-parts.ts';

const hostView = z.object({
  hostId: z.string(),
  maxSessions: z.number().int().describe('BROWSER_MAX_SESSIONS of that host'),
  liveSessions: z.number().int().describe('Sessions it runs now, every user'),
  freeMemoryMb: z.number().int().describe("The machine's free memory (at its last heartbeat on PostgreSQL)"),
});

const usageView = z
  .object({
    live: z.number().int().describe('Sessions starting or live'),
    sleeping: z.number().int().describe('Sleeping sessions (no process; they do not count against capacity)'),
    minutes: z
      .number()
      .int()
      .describe(
        'Browser minutes of the sessions created this month (UTC), each live part counted as it is billed: started ' +
          'minutes, at least one; a live session up to now; a sleeping session costs none while it sleeps',
      ),
    monthStart: isoDate,
    hosts: z.array(hostView),
  })
  .meta({ id: 'BrowserUsage' });

export const browserUsageRoutes: RouteModule = (app, deps) => {
  const { db, config, clock } = deps;
  const sessions = browserSessionsOf(deps);

  async function hosts(): Promise<z.infer<typeof hostView>[]> {
    const here = sessions.host
      ? [
          {
            hostId: sessions.hostId,
            maxSessions: config.BROWSER_MAX_SESSIONS,
            liveSessions: sessions.host.liveCount,
            freeMemoryMb: Math.round(os.freemem() / 2 ** 20),
          },
        ]
      : [];
    if (deps.database.kind !== 'postgres') return here;
    const rows = await hostsRepository.live(db);
    // This process's own numbers are now's, not its last heartbeat's.
    const others = rows
      .filter((r) => r.hostId !== sessions.hostId)
      .map(({ hostId, maxSessions, liveSessions, freeMemoryMb }) => ({
        hostId,
        maxSessions,
        liveSessions,
        freeMemoryMb,
      }));
    return [...here, ...others];
  }

  app.get('/api/browser/usage', {
    config: readScope,
    schema: {
      tags: browserTags,
      summary: 'Live and sleeping session counts, browser minutes this month, and the hosts’ capacity',
      description:
        'With X-Client-Ref, `live`, `sleeping` and `minutes` are of that ref’s sessions only; without it, of every ' +
        'session of the key. `hosts` is every browser host with a fresh heartbeat (PostgreSQL), or this process ' +
        '(PGlite); their counts are of every user. `minutes` is reckoned from the sessions (the credits ledger ' +
        'holds what was charged, key-wide).',
      response: { 200: envelope(usageView), ...errorResponses(400, 401, 403) },
    },
    handler: async (request) => {
      const scope = scopeOf(request);
      const now = clock.now();
      const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
      const mine = and(
        eq(browserSessions.userId, scope.userId),
        scope.clientRef === undefined ? undefined : eq(browserSessions.clientRef, scope.clientRef),
      );
      const until = sql`coalesce(${browserSessions.endedAt}, ${now.toISOString()}::timestamptz)`;
      const [[counts], [month]] = await Promise.all([
        db
          .select({
            live: sql<number>`count(*) filter (where ${inArray(browserSessions.status, LIVE_STATUSES)})::int`,
            sleeping: sql<number>`count(*) filter (where ${browserSessions.status} = 'SLEEPING')::int`,
          })
          .from(browserSessions)
          .where(and(mine, inArray(browserSessions.status, OPEN_STATUSES))),
        db
          .select({
            // Each live part as it is billed (its started minutes, at least one); a sleeping one's parts are billed.
            minutes: sql<number>`coalesce(sum(${browserSessions.billedMinutes} + case when ${browserSessions.liveSince} is null then 0 else greatest(1, ceil(extract(epoch from (${until} - ${browserSessions.liveSince})) / 60)) end), 0)::int`,
          })
          .from(browserSessions)
          .where(and(mine, gte(browserSessions.createdAt, monthStart))),
      ]);
      return ok({
        live: counts?.live ?? 0,
        sleeping: counts?.sleeping ?? 0,
        minutes: month?.minutes ?? 0,
        monthStart: monthStart.toISOString(),
        hosts: await hosts(),
      });
    },
  });
};
