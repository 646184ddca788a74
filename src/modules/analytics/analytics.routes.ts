import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { validationError } from '../../shared/errors.ts';
import { envelope, errorResponses, ok } from '../../shared/http.ts';
import {
  burnQuery,
  capacityView,
  creditBurnView,
  pipelineView,
  sourcesQuery,
  sourcesView,
  windowQuery,
} from './analytics.schemas.ts';
import { ACTIVITY_DAYS, BURN_DAYS, createAnalyticsService, THROUGHPUT_DAYS } from './analytics.service.ts';

const WINDOW =
  '`from` and `to` are UTC days (`YYYY-MM-DD`), both included; `from` after `to`, a bad date or a `projectId` ' +
  'that is not a UUID is a 400 naming the field; a `projectId` that is not one of your projects is a 404. ' +
  'Lead figures come from per-day counts the database keeps as leads are written, so they are exact at every read.';

export const analyticsRoutes: RouteModule = (app, deps) => {
  const tags = ['Analytics'];
  const analytics = createAnalyticsService(deps);
  const errors = errorResponses(400, 401, 403, 404);

  app.get('/api/analytics/pipeline-overview', {
    config: { scope: 'analytics:read' },
    schema: {
      tags,
      summary: 'Leads by status, funnel conversion, email validation rates and recent activity',
      description:
        `${WINDOW} The window selects leads by creation day (no \`from\`/\`to\`: all of them); \`projectId\` keeps ` +
        "the leads of that project's sources. `byStatus`: leads by current status. `funnel`: a lead counts in " +
        'every stage up to the one its current status is in: contacted = CONTACTED, REPLIED, QUALIFIED, ' +
        'DISQUALIFIED, CONVERTED or UNSUBSCRIBED; replied = REPLIED, QUALIFIED, DISQUALIFIED or CONVERTED; ' +
        'qualified = QUALIFIED or CONVERTED; converted = CONVERTED; `rateFromPrevious` = leads ÷ leads of the ' +
        'stage before, `rateFromTotal` = leads ÷ totalLeads (4 decimals; null when dividing by 0). ' +
        '`emailValidation`: withEmail = leads with an email, validated = leads with a stored validation, ' +
        'validatedRate = validated ÷ withEmail, each result (the stored `status`) with leads ÷ validated. ' +
        `\`recentActivity\`: the ${ACTIVITY_DAYS} UTC days ending \`to\` (default today), not before \`from\`: ` +
        'leads created, leads whose latest validation was that day, jobs COMPLETED and FAILED by the day they ' +
        'finished.',
      querystring: windowQuery,
      response: { 200: envelope(pipelineView), ...errors },
    },
    handler: async (request) => ok(await analytics.pipelineOverview(principalOf(request).userId, request.query)),
  });

  app.get('/api/analytics/sources', {
    config: { scope: 'analytics:read' },
    schema: {
      tags,
      summary: 'Per source: lead yield, run success rate and average run time',
      description:
        `${WINDOW} Sources newest first, cursor-paginated (\`limit\` 1–1000, default 50). For runs the window ` +
        'selects the day they finished (no bounds: all runs): finished = COMPLETED + FAILED + CANCELLED, ' +
        'successRate = completed ÷ (completed + failed), leadsFound = sum of the runs’ `leadsFound`, ' +
        'leadsPerRun = leadsFound ÷ finished, leadsPerPage = leadsFound ÷ pages visited, avgRunSeconds = mean ' +
        'of finishedAt − startedAt over completed runs (null when there is none). `leads`: leads of the source ' +
        'stored now and created in the window (after de-duplication and deletions, unlike leadsFound).',
      querystring: sourcesQuery,
      response: { 200: envelope(sourcesView), ...errors },
    },
    handler: async (request) => ok(await analytics.sources(principalOf(request).userId, request.query)),
  });

  app.get('/api/analytics/capacity', {
    config: { scope: 'analytics:read' },
    schema: {
      tags,
      summary: 'Active sources, runs planned in the next 24 h, queue depth and throughput of recent runs',
      description:
        `${WINDOW} activeSources: sources ACTIVE now; scheduledSources: those with an HOURLY, DAILY or WEEKLY ` +
        'schedule; scheduledRunsNext24h: for each of them, the runs the scheduler starts from now to 24 h ' +
        'later (an overdue `nextRunAt` counts as one run now, then one per period boundary `nextRunAt` + k × ' +
        'period; a run is skipped when the previous one is still going, so this is an upper bound). queue: ' +
        'your jobs PENDING and RUNNING. throughput: the runs COMPLETED in the window (default the last ' +
        `${THROUGHPUT_DAYS} days): runsPerDay = runs ÷ days of the window, avgRunSeconds = Σ(finishedAt − ` +
        'startedAt) ÷ runs, leadsPerRun = Σ leadsFound ÷ runs, leadsPerHour = Σ leadsFound ÷ run hours, ' +
        'pagesPerMinute = Σ pages visited ÷ run minutes. estimatedLeadsNext24h = scheduledRunsNext24h × ' +
        'leadsPerRun, rounded (null without completed runs).',
      querystring: windowQuery,
      response: { 200: envelope(capacityView), ...errors },
    },
    handler: async (request) => ok(await analytics.capacity(principalOf(request).userId, request.query)),
  });

  app.get('/api/analytics/credit-burn-rate', {
    config: { scope: 'analytics:read' },
    // Before validation, which would drop the unknown parameter silently.
    preValidation: async (request) => {
      if (Object.hasOwn(request.query as object, 'projectId')) {
        throw validationError('projectId', 'not accepted here: credits belong to the user, not to a project');
      }
    },
    schema: {
      tags,
      summary: 'Daily credit usage, its trend, and how many days the balance lasts at that pace',
      description:
        '`from` and `to` are UTC days (`YYYY-MM-DD`), both included, default the last ' +
        `${BURN_DAYS} days up to today; at most 366 days. Credits are the user's: \`projectId\` is refused ` +
        '(400). days: credits taken by metered work (ledger rows of kind `usage`) per UTC day, 0 on days ' +
        'without usage; usedInWindow: their sum; averagePerDay = usedInWindow ÷ days in the window; ' +
        'trendPerDay: the least-squares slope of daily usage against the day number (`regr_slope`; positive ' +
        'means rising); byFeature: credits and units per metered feature in the window. projection.daysLeft ' +
        '= balance ÷ averagePerDay (1 decimal; null when nothing was used); runsOutOn = today + ' +
        'floor(daysLeft) days.',
      querystring: burnQuery,
      response: { 200: envelope(creditBurnView), ...errorResponses(400, 401, 403) },
    },
    handler: async (request) => ok(await analytics.creditBurnRate(principalOf(request).userId, request.query)),
  });
};
