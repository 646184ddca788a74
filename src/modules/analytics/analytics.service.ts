import type { AppDeps } from '../../deps.ts';
import { notFound, validationError } from '../../shared/errors.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { analyticsRepository, type DayWindow } from './analytics.repository.ts';
import { type BurnQuery, MAX_SERIES_DAYS, type SourcesQuery, type WindowQuery } from './analytics.schemas.ts';
import { leadStatsRepository } from './lead-stats.repository.ts';

/** Days of `recentActivity` (docs/qualification.md "Analytics"). */
export const ACTIVITY_DAYS = 30;
/** Default windows: the capacity's recent runs, the burn rate's usage. */
export const THROUGHPUT_DAYS = 7;
export const BURN_DAYS = 30;

const DAY_MS = 86_400_000;
const dayString = (d: Date) => d.toISOString().slice(0, 10);
const addDays = (day: string, n: number) => dayString(new Date(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS));
const daysBetween = (from: string, to: string) => Math.round((Date.parse(to) - Date.parse(from)) / DAY_MS) + 1;

export type AnalyticsService = ReturnType<typeof createAnalyticsService>;

/** Figures over the caller's own data; every one of them is computed by the database (docs/qualification.md "Analytics"). */
export function createAnalyticsService(deps: Pick<AppDeps, 'db' | 'clock' | 'credits' | 'logger'>) {
  const repo = analyticsRepository(deps.db);
  const stats = leadStatsRepository(deps.db);
  const today = () => dayString(deps.clock.now());

  /** The caller's project, validated by the schema as a UUID; anyone else's is a 404 naming the field. */
  async function checkProject(userId: string, projectId: string | undefined): Promise<string | undefined> {
    if (!projectId) return undefined;
    const key = projectId.toLowerCase();
    if (!(await repo.projectOwned(userId, key))) throw notFound('Project', 'projectId');
    return key;
  }

  /** A bounded window ending `to` (default today) and `days` long unless `from` is given. */
  function bounded(q: DayWindow, days: number): Required<DayWindow> {
    const to = q.to ?? today();
    const from = q.from ?? addDays(to, -days + 1);
    if (from > to) throw validationError('from', 'must not be after to');
    if (daysBetween(from, to) > MAX_SERIES_DAYS)
      throw validationError('from', `the window is at most ${MAX_SERIES_DAYS} days`);
    return { from, to };
  }

  return {
    async pipelineOverview(userId: string, q: WindowQuery) {
      const projectId = await checkProject(userId, q.projectId);
      const w = { from: q.from, to: q.to };
      const activityTo = q.to ?? today();
      const start = addDays(activityTo, -(ACTIVITY_DAYS - 1));
      const activityWindow = { from: q.from && q.from > start ? q.from : start, to: activityTo };
      const [figures, days] = await Promise.all([
        repo.pipeline(userId, w, projectId),
        repo.activity(userId, activityWindow, projectId),
      ]);
      return {
        window: { from: q.from ?? null, to: q.to ?? null, projectId: projectId ?? null },
        ...figures,
        recentActivity: { ...activityWindow, days },
      };
    },

    async sources(userId: string, q: SourcesQuery) {
      const projectId = await checkProject(userId, q.projectId);
      const rows = await repo.sources(
        userId,
        { from: q.from, to: q.to },
        { limit: q.limit, before: decodeCursor(q.cursor), projectId },
      );
      const { items, nextCursor } = pageOf(rows, q.limit);
      return {
        window: { from: q.from ?? null, to: q.to ?? null, projectId: projectId ?? null },
        sources: items.map(({ id: _id, ...view }) => view),
        nextCursor,
      };
    },

    async capacity(userId: string, q: WindowQuery) {
      const projectId = await checkProject(userId, q.projectId);
      const figures = await repo.capacity(userId, bounded(q, THROUGHPUT_DAYS), deps.clock.now(), projectId);
      return { projectId: projectId ?? null, ...figures };
    },

    async creditBurnRate(userId: string, q: BurnQuery) {
      const w = bounded(q, BURN_DAYS);
      const balance = await deps.credits.balance(deps.db, userId);
      const figures = await repo.creditBurn(userId, w, balance, today());
      return { ...w, balance, ...figures };
    },

    /** One pass of the rollup's upkeep: compacts every user with new rows; returns the rows folded. */
    async compactLeadStats(limit = 500): Promise<number> {
      let folded = 0;
      for (const userId of await stats.usersToCompact(limit)) {
        try {
          folded += await deps.db.transaction(async (tx) => {
            const r = leadStatsRepository(tx);
            return (await r.lockUser(userId)) ? r.compact(userId) : 0;
          });
        } catch (err) {
          // One user's failure (e.g. deleted mid-way) must not stop the others; the rows stay for the next pass.
          deps.logger.warn({ err, userId }, 'lead stats compaction failed');
        }
      }
      return folded;
    },

    /** Lead totals for the admin views: per user, and created in the last 7 UTC days. */
    leadTotals(userIds: string[]) {
      return stats.leadTotals(userIds, addDays(today(), -6));
    },
    platformLeadTotals() {
      return stats.platformLeadTotals(addDays(today(), -6));
    },
  };
}
