import { and, inArray, sql } from 'drizzle-orm';
import { queryRows } from '../../db/client.ts';
import { jobs } from '../../db/schema/index.ts';
import type { AppDeps } from '../../deps.ts';
import { newId } from '../../shared/ids.ts';
import type { JobService } from './jobs.service.ts';

const BATCH = 500;

/**
 * The source scheduler, run by a pg-boss cron every minute (pg-boss sends each tick once across all
 * processes). Each due ACTIVE source is claimed atomically (its `next_run_at` moves to the next
 * period after now, FOR UPDATE SKIP LOCKED), so even overlapping ticks start one run per period. A
 * source whose previous run is still PENDING or RUNNING is not started twice; its period is skipped.
 * The sources of a suspended user (README "Admin") are left as they are: not run, not advanced, so they run
 * once at the first tick after the user is reactivated.
 */
export async function dispatchDueSources(
  deps: Pick<AppDeps, 'db' | 'clock' | 'logger'>,
  jobService: Pick<JobService, 'enqueue'>,
): Promise<string[]> {
  const now = deps.clock.now();
  const created = await deps.db.transaction(async (tx) => {
    const due = await queryRows<{ id: string; user_id: string; name: string }>(
      tx,
      sql`UPDATE sources s
             SET next_run_at = s.next_run_at + p.period
                   * (floor(extract(epoch FROM (${now}::timestamptz - s.next_run_at))
                            / extract(epoch FROM p.period))::int + 1),
                 last_run_at = ${now}::timestamptz
            FROM (VALUES ('HOURLY', interval '1 hour'), ('DAILY', interval '1 day'), ('WEEKLY', interval '7 days'))
                 AS p(type, period)
           WHERE s.schedule_type = p.type
             AND s.id IN (SELECT id FROM sources
                           WHERE status = 'ACTIVE' AND schedule_type <> 'MANUAL' AND next_run_at <= ${now}::timestamptz
                             AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = sources.user_id AND u.status = 'suspended')
                           ORDER BY next_run_at LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
       RETURNING s.id, s.user_id, s.name`,
    );
    if (due.length === 0) return [];
    const busy = new Set(
      (
        await tx
          .select({ sourceId: jobs.sourceId })
          .from(jobs)
          .where(
            and(
              inArray(
                jobs.sourceId,
                due.map((d) => d.id),
              ),
              inArray(jobs.status, ['PENDING', 'RUNNING']),
            ),
          )
      ).map((r) => r.sourceId),
    );
    const rows = due
      .filter((d) => !busy.has(d.id))
      .map((d) => ({
        id: newId(),
        userId: d.user_id,
        sourceId: d.id,
        name: `${d.name} (scheduled ${now.toISOString().slice(0, 16)}Z)`.slice(0, 200),
        trigger: 'schedule' as const,
        createdAt: now,
        updatedAt: now,
      }));
    if (rows.length) await tx.insert(jobs).values(rows);
    if (busy.size) deps.logger.info({ sources: [...busy] }, 'scheduled run skipped: the previous run is still going');
    return rows.map((r) => r.id);
  });
  for (const id of created) await jobService.enqueue(id);
  return created;
}
