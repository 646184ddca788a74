import { type SQL, sql } from 'drizzle-orm';
import { type Db, queryRows, type Tx } from '../../db/client.ts';
import { jobs, leadStatDeltas, leadStatuses, sources } from '../../db/schema/index.ts';

/** A window of UTC days, both ends included; an absent end is open. */
export interface DayWindow {
  from?: string;
  to?: string;
}

/** Funnel stages: a lead counts in every stage up to the one its current status is in (docs/qualification.md "Analytics"). */
export const FUNNEL = {
  contacted: ['CONTACTED', 'REPLIED', 'QUALIFIED', 'DISQUALIFIED', 'CONVERTED', 'UNSUBSCRIBED'],
  replied: ['REPLIED', 'QUALIFIED', 'DISQUALIFIED', 'CONVERTED'],
  qualified: ['QUALIFIED', 'CONVERTED'],
  converted: ['CONVERTED'],
} as const;
const TERMINAL = ['COMPLETED', 'FAILED', 'CANCELLED'];
export const VALIDATION_RESULTS = ['valid', 'risky', 'invalid', 'unknown'] as const;

/** A list of fixed names (never client text) as SQL literals. */
const literals = (values: readonly string[]) => sql.raw(values.map((v) => `'${v}'`).join(', '));
/** `round(a ÷ b, places)` as float8, NULL when b is 0. */
const ratio = (a: SQL, b: SQL, places = 4) =>
  sql`round((${a})::numeric / nullif(${b}, 0), ${sql.raw(String(places))})::float8`;
const dayOf = (column: SQL) => sql`((${column}) AT TIME ZONE 'UTC')::date`;
const startOfDay = (d: string) => sql`(${d}::date::timestamp AT TIME ZONE 'UTC')`;

/** `column`'s UTC day within the window. */
function inWindow(column: SQL, w: DayWindow, asDay = false): SQL {
  const parts: SQL[] = [];
  if (w.from) parts.push(asDay ? sql`${column} >= ${w.from}::date` : sql`${column} >= ${startOfDay(w.from)}`);
  if (w.to) {
    parts.push(asDay ? sql`${column} <= ${w.to}::date` : sql`${column} < ${startOfDay(w.to)} + interval '1 day'`);
  }
  return parts.length ? sql`AND ${sql.join(parts, sql` AND `)}` : sql``;
}

/** Sources of the project (the caller checked it is the user's), or every source when none is given. */
const inProject = (column: SQL, userId: string, projectId: string | undefined) =>
  projectId
    ? sql`AND ${column} IN (SELECT id FROM ${sources} WHERE user_id = ${userId} AND project_id = ${projectId})`
    : sql``;

export const int = (v: unknown) => Number(v ?? 0);
const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

export function analyticsRepository(db: Db | Tx) {
  return {
    async projectOwned(userId: string, projectId: string): Promise<boolean> {
      const rows = await queryRows<{ id: string }>(
        db,
        sql`SELECT id FROM projects WHERE id = ${projectId} AND user_id = ${userId}`,
      );
      return rows.length > 0;
    },

    /** Status counts, funnel and validation figures of the leads created in the window. */
    async pipeline(userId: string, w: DayWindow, projectId?: string) {
      const stage = (values: readonly string[]) =>
        sql`coalesce(sum(n) FILTER (WHERE kind = 'status' AND value IN (${literals(values)})), 0)`;
      const result = (value: string) =>
        sql`coalesce(sum(n) FILTER (WHERE kind = 'validation' AND value = ${value}), 0)`;
      const [row] = await queryRows<Record<string, unknown>>(
        db,
        sql`
        WITH c AS (
          SELECT kind, value, sum(n) AS n FROM ${leadStatDeltas}
          WHERE user_id = ${userId} AND kind IN ('status', 'validation', 'email')
            ${inWindow(sql`day`, w, true)} ${inProject(sql`source_id`, userId, projectId)}
          GROUP BY kind, value
        ), t AS (
          SELECT coalesce(sum(n) FILTER (WHERE kind = 'status'), 0) AS total,
                 ${stage(FUNNEL.contacted)} AS contacted, ${stage(FUNNEL.replied)} AS replied,
                 ${stage(FUNNEL.qualified)} AS qualified, ${stage(FUNNEL.converted)} AS converted,
                 coalesce(sum(n) FILTER (WHERE kind = 'email'), 0) AS with_email,
                 coalesce(sum(n) FILTER (WHERE kind = 'validation'), 0) AS validated,
                 ${result('valid')} AS valid, ${result('risky')} AS risky,
                 ${result('invalid')} AS invalid, ${result('unknown')} AS unknown
          FROM c
        )
        SELECT t.*,
               (SELECT jsonb_object_agg(s.status, coalesce(c.n, 0)::int)
                FROM unnest(ARRAY[${literals(leadStatuses)}]::text[]) AS s(status)
                LEFT JOIN c ON c.kind = 'status' AND c.value = s.status) AS by_status,
               ${ratio(sql`contacted`, sql`total`)} AS contacted_of_previous,
               ${ratio(sql`replied`, sql`contacted`)} AS replied_of_previous,
               ${ratio(sql`qualified`, sql`replied`)} AS qualified_of_previous,
               ${ratio(sql`converted`, sql`qualified`)} AS converted_of_previous,
               ${ratio(sql`contacted`, sql`total`)} AS contacted_of_total,
               ${ratio(sql`replied`, sql`total`)} AS replied_of_total,
               ${ratio(sql`qualified`, sql`total`)} AS qualified_of_total,
               ${ratio(sql`converted`, sql`total`)} AS converted_of_total,
               ${ratio(sql`validated`, sql`with_email`)} AS validated_rate,
               ${ratio(sql`valid`, sql`validated`)} AS valid_rate, ${ratio(sql`risky`, sql`validated`)} AS risky_rate,
               ${ratio(sql`invalid`, sql`validated`)} AS invalid_rate,
               ${ratio(sql`unknown`, sql`validated`)} AS unknown_rate
        FROM t`,
      );
      const r = row!;
      const byStatus = (typeof r.by_status === 'string' ? JSON.parse(r.by_status) : r.by_status) as Record<
        string,
        number
      >;
      const stages = ['contacted', 'replied', 'qualified', 'converted'] as const;
      return {
        totalLeads: int(r.total),
        byStatus,
        funnel: [
          {
            stage: 'total' as const,
            leads: int(r.total),
            rateFromPrevious: null,
            rateFromTotal: int(r.total) ? 1 : null,
          },
          ...stages.map((s) => ({
            stage: s,
            leads: int(r[s]),
            rateFromPrevious: num(r[`${s}_of_previous`]),
            rateFromTotal: num(r[`${s}_of_total`]),
          })),
        ],
        emailValidation: {
          withEmail: int(r.with_email),
          validated: int(r.validated),
          validatedRate: num(r.validated_rate),
          results: Object.fromEntries(
            VALIDATION_RESULTS.map((v) => [v, { leads: int(r[v]), rate: num(r[`${v}_rate`]) }]),
          ) as Record<(typeof VALIDATION_RESULTS)[number], { leads: number; rate: number | null }>,
        },
      };
    },

    /** Per UTC day from `from` to `to`: leads created, leads validated, jobs completed and failed. */
    async activity(userId: string, w: Required<DayWindow>, projectId?: string) {
      const rows = await queryRows<Record<string, unknown>>(
        db,
        sql`
        WITH d AS (
          SELECT day, sum(n) FILTER (WHERE kind = 'status') AS created,
                 sum(n) FILTER (WHERE kind = 'validated') AS validated
          FROM ${leadStatDeltas}
          WHERE user_id = ${userId} AND kind IN ('status', 'validated')
            ${inWindow(sql`day`, w, true)} ${inProject(sql`source_id`, userId, projectId)}
          GROUP BY day
        ), j AS (
          SELECT ${dayOf(sql`finished_at`)} AS day, count(*) FILTER (WHERE status = 'COMPLETED') AS completed,
                 count(*) FILTER (WHERE status = 'FAILED') AS failed
          FROM ${jobs}
          WHERE user_id = ${userId} AND status IN ('COMPLETED', 'FAILED')
            ${inWindow(sql`finished_at`, w)} ${inProject(sql`source_id`, userId, projectId)}
          GROUP BY 1
        )
        SELECT to_char(g.day, 'YYYY-MM-DD') AS date, coalesce(d.created, 0)::int AS leads_created,
               coalesce(d.validated, 0)::int AS leads_validated, coalesce(j.completed, 0)::int AS jobs_completed,
               coalesce(j.failed, 0)::int AS jobs_failed
        FROM generate_series(${w.from}::date, ${w.to}::date, interval '1 day') AS g(day)
        LEFT JOIN d ON d.day = g.day::date LEFT JOIN j ON j.day = g.day::date
        ORDER BY g.day`,
      );
      return rows.map((r) => ({
        date: String(r.date),
        leadsCreated: int(r.leads_created),
        leadsValidated: int(r.leads_validated),
        jobsCompleted: int(r.jobs_completed),
        jobsFailed: int(r.jobs_failed),
      }));
    },

    /** One page of sources (newest first, `limit + 1` rows) with their run and lead figures in the window. */
    async sources(userId: string, w: DayWindow, page: { limit: number; before?: string; projectId?: string }) {
      const rows = await queryRows<Record<string, unknown>>(
        db,
        sql`
        WITH page AS (
          SELECT id, name, status, scrape_type, project_id, last_run_at FROM ${sources}
          WHERE user_id = ${userId}
            ${page.projectId ? sql`AND project_id = ${page.projectId}` : sql``}
            ${page.before ? sql`AND id < ${page.before}` : sql``}
          ORDER BY id DESC LIMIT ${page.limit + 1}
        ), runs AS (
          SELECT source_id, count(*) AS finished, count(*) FILTER (WHERE status = 'COMPLETED') AS completed,
                 count(*) FILTER (WHERE status = 'FAILED') AS failed,
                 count(*) FILTER (WHERE status = 'CANCELLED') AS cancelled,
                 sum(leads_found) AS leads_found, sum(pages_visited) AS pages,
                 avg(extract(epoch FROM finished_at - started_at))
                   FILTER (WHERE status = 'COMPLETED' AND started_at IS NOT NULL) AS avg_run
          FROM ${jobs}
          WHERE user_id = ${userId} AND source_id IN (SELECT id FROM page)
            AND status IN (${literals(TERMINAL)}) AND finished_at IS NOT NULL ${inWindow(sql`finished_at`, w)}
          GROUP BY source_id
        ), stored AS (
          SELECT source_id, sum(n) AS n FROM ${leadStatDeltas}
          WHERE user_id = ${userId} AND kind = 'status' AND source_id IN (SELECT id FROM page)
            ${inWindow(sql`day`, w, true)}
          GROUP BY source_id
        )
        SELECT p.id, p.name, p.status, p.scrape_type, p.project_id, p.last_run_at,
               coalesce(s.n, 0)::int AS leads, coalesce(r.finished, 0)::int AS finished,
               coalesce(r.completed, 0)::int AS completed, coalesce(r.failed, 0)::int AS failed,
               coalesce(r.cancelled, 0)::int AS cancelled, coalesce(r.leads_found, 0)::int AS leads_found,
               ${ratio(sql`r.completed`, sql`r.completed + r.failed`)} AS success_rate,
               ${ratio(sql`r.leads_found`, sql`r.finished`, 2)} AS leads_per_run,
               ${ratio(sql`r.leads_found`, sql`r.pages`)} AS leads_per_page,
               round(r.avg_run::numeric, 1)::float8 AS avg_run_seconds
        FROM page p LEFT JOIN runs r ON r.source_id = p.id LEFT JOIN stored s ON s.source_id = p.id
        ORDER BY p.id DESC`,
      );
      return rows.map((r) => ({
        id: String(r.id),
        sourceId: String(r.id),
        name: String(r.name),
        status: String(r.status),
        scrapeType: String(r.scrape_type),
        projectId: (r.project_id as string | null) ?? null,
        leads: int(r.leads),
        runs: {
          finished: int(r.finished),
          completed: int(r.completed),
          failed: int(r.failed),
          cancelled: int(r.cancelled),
        },
        successRate: num(r.success_rate),
        leadsFound: int(r.leads_found),
        leadsPerRun: num(r.leads_per_run),
        leadsPerPage: num(r.leads_per_page),
        avgRunSeconds: num(r.avg_run_seconds),
        lastRunAt: r.last_run_at ? new Date(r.last_run_at as string).toISOString() : null,
      }));
    },

    /** Sources, planned runs in the next 24 h, the user's queue, and throughput of the completed runs in `w`. */
    async capacity(userId: string, w: Required<DayWindow>, now: Date, projectId?: string) {
      const horizonHours = 24;
      const [r] = await queryRows<Record<string, unknown>>(
        db,
        sql`
        WITH s AS (
          SELECT s.status, s.schedule_type, s.next_run_at, p.secs FROM ${sources} s
          LEFT JOIN (VALUES ('HOURLY', 3600), ('DAILY', 86400), ('WEEKLY', 604800)) AS p(type, secs)
            ON p.type = s.schedule_type
          WHERE s.user_id = ${userId} ${projectId ? sql`AND s.project_id = ${projectId}` : sql``}
        ), planned AS (
          -- x: periods from next_run_at to now. An overdue source runs once at the next tick, then on each
          -- boundary next_run_at + k·period after now; a future one on each boundary from next_run_at.
          SELECT count(*) FILTER (WHERE status = 'ACTIVE') AS active,
                 count(*) FILTER (WHERE status = 'ACTIVE' AND secs IS NOT NULL) AS scheduled,
                 coalesce(sum(greatest(0, ceil(x + ${horizonHours * 3600}::float8 / secs) - greatest(floor(x), 0))::int)
                   FILTER (WHERE status = 'ACTIVE' AND secs IS NOT NULL AND next_run_at IS NOT NULL), 0) AS runs
          FROM (SELECT *, extract(epoch FROM ${now}::timestamptz - next_run_at)::float8 / secs AS x FROM s) s
        ), q AS (
          SELECT count(*) FILTER (WHERE status = 'PENDING') AS pending,
                 count(*) FILTER (WHERE status = 'RUNNING') AS running,
                 min(created_at) FILTER (WHERE status = 'PENDING') AS oldest_pending
          FROM ${jobs}
          WHERE user_id = ${userId} AND status IN ('PENDING', 'RUNNING') ${inProject(sql`source_id`, userId, projectId)}
        ), tp AS (
          SELECT count(*) AS runs, sum(leads_found) AS leads, sum(pages_visited) AS pages,
                 sum(extract(epoch FROM finished_at - started_at)) AS secs
          FROM ${jobs}
          WHERE user_id = ${userId} AND status = 'COMPLETED' AND started_at IS NOT NULL
            ${inWindow(sql`finished_at`, w)} ${inProject(sql`source_id`, userId, projectId)}
        )
        SELECT planned.active::int, planned.scheduled::int, planned.runs::int AS planned_runs,
               q.pending::int, q.running::int, q.oldest_pending, tp.runs::int AS completed_runs,
               ${ratio(sql`tp.runs`, sql`(${w.to}::date - ${w.from}::date + 1)`, 2)} AS runs_per_day,
               ${ratio(sql`tp.secs`, sql`tp.runs`, 1)} AS avg_run_seconds,
               ${ratio(sql`tp.leads`, sql`tp.runs`, 2)} AS leads_per_run,
               ${ratio(sql`tp.leads * 3600`, sql`tp.secs`, 2)} AS leads_per_hour,
               ${ratio(sql`tp.pages * 60`, sql`tp.secs`, 2)} AS pages_per_minute,
               round(planned.runs * tp.leads::numeric / nullif(tp.runs, 0))::int AS estimated_leads
        FROM planned, q, tp`,
      );
      return {
        activeSources: int(r!.active),
        scheduledSources: int(r!.scheduled),
        scheduledRunsNext24h: int(r!.planned_runs),
        queue: {
          pending: int(r!.pending),
          running: int(r!.running),
          oldestPendingAt: r!.oldest_pending ? new Date(r!.oldest_pending as string).toISOString() : null,
        },
        throughput: {
          from: w.from,
          to: w.to,
          completedRuns: int(r!.completed_runs),
          runsPerDay: num(r!.runs_per_day),
          avgRunSeconds: num(r!.avg_run_seconds),
          leadsPerRun: num(r!.leads_per_run),
          leadsPerHour: num(r!.leads_per_hour),
          pagesPerMinute: num(r!.pages_per_minute),
        },
        estimatedLeadsNext24h: num(r!.estimated_leads),
      };
    },

    /** Daily usage in the window, its total, mean, slope, and the days the balance lasts at that mean. */
    async creditBurn(userId: string, w: Required<DayWindow>, balance: number, today: string) {
      const usage = sql`FROM credit_transactions
          WHERE user_id = ${userId} AND kind = 'usage' ${inWindow(sql`created_at`, w)}`;
      const [r] = await queryRows<Record<string, unknown>>(
        db,
        sql`
        WITH u AS (SELECT ${dayOf(sql`created_at`)} AS day, -sum(amount) AS credits ${usage} GROUP BY 1),
        series AS (
          SELECT g.day::date AS day, coalesce(u.credits, 0) AS credits, row_number() OVER (ORDER BY g.day) AS i
          FROM generate_series(${w.from}::date, ${w.to}::date, interval '1 day') AS g(day)
          LEFT JOIN u ON u.day = g.day::date
        ), agg AS (
          SELECT sum(credits) AS used, avg(credits) AS mean, regr_slope(credits, i) AS slope,
                 jsonb_agg(jsonb_build_object('date', to_char(day, 'YYYY-MM-DD'), 'credits', credits::int) ORDER BY day)
                   AS days
          FROM series
        )
        SELECT used::int, round(mean::numeric, 2)::float8 AS mean, round(slope::numeric, 4)::float8 AS slope, days,
               ${ratio(sql`${balance}::int`, sql`mean`, 1)} AS days_left,
               to_char(${today}::date + floor(${balance}::int / nullif(mean, 0))::int, 'YYYY-MM-DD') AS runs_out_on,
               (SELECT coalesce(jsonb_agg(jsonb_build_object('feature', feature, 'credits', credits, 'units', units)
                                          ORDER BY feature), '[]')
                FROM (SELECT coalesce(feature, 'other') AS feature, (-sum(amount))::int AS credits,
                             coalesce(sum(units), 0)::int AS units ${usage} GROUP BY 1) f) AS by_feature
        FROM agg`,
      );
      const json = <T>(v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v) as T;
      return {
        usedInWindow: int(r!.used),
        averagePerDay: Number(r!.mean ?? 0),
        trendPerDay: num(r!.slope),
        byFeature: json<Array<{ feature: string; credits: number; units: number }>>(r!.by_feature),
        days: json<Array<{ date: string; credits: number }>>(r!.days),
        projection: { daysLeft: num(r!.days_left), runsOutOn: (r!.runs_out_on as string | null) ?? null },
      };
    },
  };
}
