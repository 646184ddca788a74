import { z } from 'zod';
import { leadStatuses } from '../../db/schema/index.ts';
import { isUuid } from '../../shared/ids.ts';
import { nextCursor } from '../../shared/pagination.ts';

/** Days of the daily series: a window longer than this is a 400 naming `from`. */
export const MAX_SERIES_DAYS = 366;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** ISO 8601 date-time with `Z` or an offset: a local time without one would name no particular UTC day. */
const DATE_TIME =
  /^(\d{4}-\d{2}-\d{2})T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,9})?)?(Z|[+-]([01]\d|2[0-3]):?[0-5]\d)$/i;
const DAY_FORMATS = 'a date YYYY-MM-DD or an ISO 8601 date-time with Z or an offset (cut to its UTC day)';

const realDay = (v: string) => {
  const m = DATE.exec(v);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.toISOString().startsWith(v) && v >= '1970-01-01' && v <= '9999-12-31';
};

/** The UTC day of `v`, or undefined when `v` is neither a real date nor a real date-time. */
const utcDayOf = (v: string): string | undefined => {
  if (realDay(v)) return v;
  const m = DATE_TIME.exec(v);
  if (!m?.[1] || !realDay(m[1])) return undefined;
  // Date keeps milliseconds only; the fraction below them cannot change the day.
  const at = new Date(v.replace(/(\.\d{3})\d+/, '$1'));
  if (Number.isNaN(at.getTime())) return undefined;
  const utc = at.toISOString().slice(0, 10);
  return realDay(utc) ? utc : undefined;
};

/**
 * A UTC calendar day: `YYYY-MM-DD` that exists (2025-02-30 is refused), or an ISO 8601 date-time with `Z` or
 * an offset, which stands for its UTC day (2026-11-19T23:30:00-05:00 is 2026-11-20). One issue per bad value.
 */
const day = z.string().transform((v, ctx) => {
  const utc = utcDayOf(v);
  if (utc === undefined) {
    ctx.addIssue({ code: 'custom', message: `must be ${DAY_FORMATS}` });
    return z.NEVER;
  }
  return utc;
});

const windowShape = {
  from: day
    .optional()
    .describe(`First UTC day of the window, included: ${DAY_FORMATS}, e.g. 2026-11-19 or 2026-11-19T14:00:00Z`),
  to: day
    .optional()
    .describe(`Last UTC day of the window, included: ${DAY_FORMATS}, e.g. 2026-11-30 or 2026-11-30T23:59:59+01:00`),
};
const projectId = z
  .string()
  .refine(isUuid, 'must be a UUID')
  .optional()
  .describe('Only sources of this project of yours (and their jobs and leads)');

const fromNotAfterTo = (q: { from?: string; to?: string }, ctx: z.RefinementCtx) => {
  if (q.from && q.to && q.from > q.to) {
    ctx.addIssue({ code: 'custom', path: ['from'], message: 'must not be after to' });
  }
};

export const windowQuery = z.object({ ...windowShape, projectId }).superRefine(fromNotAfterTo);
export type WindowQuery = z.infer<typeof windowQuery>;

export const sourcesQuery = z
  .object({
    ...windowShape,
    projectId,
    limit: z.coerce.number().int().min(1).max(1000).default(50),
    cursor: z.string().max(200).optional(),
  })
  .superRefine(fromNotAfterTo);
export type SourcesQuery = z.infer<typeof sourcesQuery>;

/** Credits belong to the user, not to a project: the route refuses a `projectId` (400 naming it). */
export const burnQuery = z.object(windowShape).superRefine(fromNotAfterTo);
export type BurnQuery = z.infer<typeof burnQuery>;

const count = z.number().int();
const rate = z.number().nullable();
const dayString = z.string().describe('YYYY-MM-DD (UTC)');

const windowView = z.object({
  from: dayString.nullable().describe('null: from the first lead'),
  to: dayString.nullable().describe('null: up to now'),
  projectId: z.string().nullable(),
});

export const pipelineView = z
  .object({
    window: windowView,
    totalLeads: count.describe('Leads created in the window (sum of `byStatus`)'),
    byStatus: z.record(z.enum(leadStatuses), count).describe('Leads created in the window, by current status'),
    funnel: z
      .array(
        z.object({
          stage: z.enum(['total', 'contacted', 'replied', 'qualified', 'converted']),
          leads: count.describe('Leads whose current status is this stage or a later one'),
          rateFromPrevious: rate.describe('leads ÷ leads of the previous stage (null when that is 0)'),
          rateFromTotal: rate.describe('leads ÷ totalLeads (null when 0)'),
        }),
      )
      .describe('total ⊇ contacted ⊇ replied ⊇ qualified ⊇ converted, from current statuses (see the description)'),
    emailValidation: z.object({
      withEmail: count.describe('Leads with an email'),
      validated: count.describe('Leads with a stored validation result'),
      validatedRate: rate.describe('validated ÷ withEmail'),
      results: z
        .record(z.enum(['valid', 'risky', 'invalid', 'unknown']), z.object({ leads: count, rate }))
        .describe('Per result: leads, and leads ÷ validated'),
    }),
    recentActivity: z.object({
      from: dayString,
      to: dayString,
      days: z.array(
        z.object({
          date: dayString,
          leadsCreated: count,
          leadsValidated: count.describe('Leads whose latest email validation was that day'),
          jobsCompleted: count,
          jobsFailed: count,
        }),
      ),
    }),
  })
  .meta({ id: 'PipelineOverview' });

export const sourceAnalyticsView = z
  .object({
    sourceId: z.string(),
    name: z.string(),
    status: z.string(),
    scrapeType: z.string(),
    projectId: z.string().nullable(),
    leads: count.describe("The source's leads stored now that were created in the window"),
    runs: z.object({
      finished: count.describe('Runs that ended (COMPLETED, FAILED or CANCELLED) in the window'),
      completed: count,
      failed: count,
      cancelled: count,
    }),
    successRate: rate.describe('completed ÷ (completed + failed); cancelled runs are left out'),
    leadsFound: count.describe('Sum of `leadsFound` of the finished runs'),
    leadsPerRun: rate.describe('leadsFound ÷ finished runs'),
    leadsPerPage: rate.describe('leadsFound ÷ pages visited by the finished runs'),
    avgRunSeconds: rate.describe('Mean of finishedAt − startedAt over the completed runs'),
    lastRunAt: z.string().nullable(),
  })
  .meta({ id: 'SourceAnalytics' });

export const sourcesView = z.object({
  window: windowView,
  sources: z.array(sourceAnalyticsView).describe('Newest source first'),
  nextCursor,
});

export const capacityView = z
  .object({
    projectId: z.string().nullable(),
    activeSources: count,
    scheduledSources: count.describe('ACTIVE sources with an HOURLY, DAILY or WEEKLY schedule'),
    scheduledRunsNext24h: count,
    queue: z.object({
      pending: count.describe('Your jobs waiting for a worker (PENDING)'),
      running: count,
      oldestPendingAt: z.string().nullable(),
    }),
    throughput: z.object({
      from: dayString,
      to: dayString,
      completedRuns: count,
      runsPerDay: rate,
      avgRunSeconds: rate,
      leadsPerRun: rate,
      leadsPerHour: rate.describe('Leads found per hour of run time'),
      pagesPerMinute: rate.describe('Pages visited per minute of run time'),
    }),
    estimatedLeadsNext24h: count.nullable().describe('scheduledRunsNext24h × leadsPerRun, rounded'),
  })
  .meta({ id: 'CapacityAnalytics' });

export const creditBurnView = z
  .object({
    from: dayString,
    to: dayString,
    balance: count,
    usedInWindow: count.describe('Credits taken by metered work in the window'),
    averagePerDay: z.number().describe('usedInWindow ÷ days in the window'),
    trendPerDay: rate.describe('Least-squares slope of daily usage (credits per day, per day); null for one day'),
    byFeature: z.array(z.object({ feature: z.string(), credits: count, units: count })),
    days: z.array(z.object({ date: dayString, credits: count })),
    projection: z.object({
      daysLeft: rate.describe('balance ÷ averagePerDay; null when nothing was used'),
      runsOutOn: dayString.nullable().describe('Today (UTC) + floor(daysLeft) days'),
    }),
  })
  .meta({ id: 'CreditBurnRate' });
