import { count, dayToUnix, decimal, duration, percent } from '../lib/account-format.js';
import { WindowForm, windowOf } from '../lib/account-window.js';
import { get, query } from '../lib/api.js';
import { html } from '../lib/html.js';
import { Chart, ErrorMessage, Page, Table, Time, useResource } from '../lib/ui.js';

const Stat = ({ label, value, note }) =>
  html`<div class="stat">
    <div class="label">${label}</div>
    <div class="value">${value}</div>
    ${note ? html`<small class="muted">${note}</small>` : null}
  </div>`;

const Loading = ({ what }) => html`<p class="loading" aria-live="polite">Loading ${what}…</p>`;

/**
 * Analytics (GET /api/analytics/pipeline-overview, /sources, /capacity, /credit-burn-rate): stat tiles, the recent
 * activity and the credit burn as charts, the funnel and the sources as tables; a window of UTC days and a project.
 */
export default function Analytics({ query: params }) {
  const win = windowOf(params);
  const { from, to, projectId } = win;

  const projects = useResource((signal) => get('/api/projects?limit=100', { signal }), []);
  const pipeline = useResource(
    (signal) => get(`/api/analytics/pipeline-overview${query(win)}`, { signal }),
    [from, to, projectId],
  );
  const capacity = useResource(
    (signal) => get(`/api/analytics/capacity${query(win)}`, { signal }),
    [from, to, projectId],
  );
  const sources = useResource(
    (signal) => get(`/api/analytics/sources${query({ ...win, limit: 50 })}`, { signal }),
    [from, to, projectId],
  );
  // Credits are the user's, not a project's: the burn rate takes the window only.
  const burn = useResource(
    (signal) => get(`/api/analytics/credit-burn-rate${query({ from, to })}`, { signal }),
    [from, to],
  );

  const p = pipeline.data;
  const c = capacity.data;
  const b = burn.data;

  return html`<${Page} title="Analytics">
    <${WindowForm}
      key=${`${from}|${to}|${projectId}|${projects.data ? 1 : 0}`}
      value=${win}
      projects=${projects.data?.projects ?? []}
      hint="UTC days, both included; empty: the default of each figure."
    />

    <h2>Pipeline</h2>
    <${ErrorMessage} error=${pipeline.error} />
    ${pipeline.loading && !p ? html`<${Loading} what="the pipeline" />` : null}
    ${
      p
        ? html`<div class="grid stats">
            <${Stat} label="Leads" value=${count(p.totalLeads)} />
            <${Stat} label="With an email" value=${count(p.emailValidation.withEmail)} />
            <${Stat} label="Emails validated" value=${percent(p.emailValidation.validatedRate)}
              note=${`${count(p.emailValidation.validated)} leads`} />
            <${Stat} label="Converted" value=${count(p.funnel.at(-1)?.leads ?? 0)}
              note=${`${percent(p.funnel.at(-1)?.rateFromTotal ?? null)} of all leads`} />
          </div>
                      <${Chart}
              title=${`Recent activity per day, ${p.recentActivity.from} to ${p.recentActivity.to}`}
              x=${p.recentActivity.days.map((d) => dayToUnix(d.date))}
              series=${[
                { label: 'Leads created', values: p.recentActivity.days.map((d) => d.leadsCreated) },
                { label: 'Leads validated', values: p.recentActivity.days.map((d) => d.leadsValidated) },
                { label: 'Jobs completed', values: p.recentActivity.days.map((d) => d.jobsCompleted) },
                { label: 'Jobs failed', values: p.recentActivity.days.map((d) => d.jobsFailed) },
              ]}
            />
          <div class="columns">
            <${Table}
              caption="Funnel"
              rowKey=${(s) => s.stage}
              rows=${p.funnel}
              columns=${[
                { key: 'stage', label: 'Stage', render: (s) => s.stage[0].toUpperCase() + s.stage.slice(1) },
                { key: 'leads', label: 'Leads', render: (s) => count(s.leads) },
                { key: 'rateFromPrevious', label: 'Of the stage before', render: (s) => percent(s.rateFromPrevious) },
                { key: 'rateFromTotal', label: 'Of all leads', render: (s) => percent(s.rateFromTotal) },
              ]}
            />
            <${Table}
              caption="Leads by status"
              rowKey=${(s) => s[0]}
              rows=${Object.entries(p.byStatus).filter(([, n]) => n > 0)}
              columns=${[
                { key: 'status', label: 'Status', render: ([s]) => s },
                { key: 'leads', label: 'Leads', render: ([, n]) => count(n) },
              ]}
              empty="No leads in this window."
            />
          </div>`
        : null
    }

    <h2>Capacity</h2>
    <${ErrorMessage} error=${capacity.error} />
    ${capacity.loading && !c ? html`<${Loading} what="the capacity" />` : null}
    ${
      c
        ? html`<div class="grid stats">
            <${Stat} label="Active sources" value=${count(c.activeSources)} note=${`${count(c.scheduledSources)} on a schedule`} />
            <${Stat} label="Runs in the next 24 h" value=${count(c.scheduledRunsNext24h)}
              note=${c.estimatedLeadsNext24h === null ? 'No completed runs to estimate from' : `About ${count(c.estimatedLeadsNext24h)} leads`} />
            <${Stat} label="Queue" value=${`${count(c.queue.pending)} pending`} note=${`${count(c.queue.running)} running`} />
            <${Stat} label="Completed runs" value=${count(c.throughput.completedRuns)}
              note=${`${decimal(c.throughput.runsPerDay)} a day`} />
            <${Stat} label="Average run" value=${duration(c.throughput.avgRunSeconds)}
              note=${`${decimal(c.throughput.leadsPerRun)} leads a run`} />
            <${Stat} label="Throughput" value=${`${decimal(c.throughput.leadsPerHour)} leads/h`}
              note=${`${decimal(c.throughput.pagesPerMinute)} pages a minute`} />
          </div>
          ${c.queue.oldestPendingAt ? html`<p class="muted">Oldest pending job since <${Time} iso=${c.queue.oldestPendingAt} />.</p>` : null}`
        : null
    }

    <h2>Credit burn</h2>
    <${ErrorMessage} error=${burn.error} />
    ${burn.loading && !b ? html`<${Loading} what="the credit burn" />` : null}
    ${
      b
        ? html`<div class="grid stats">
            <${Stat} label="Used in the window" value=${count(b.usedInWindow)} />
            <${Stat} label="Average per day" value=${decimal(b.averagePerDay)} />
            <${Stat} label="Trend" value=${b.trendPerDay === null ? '—' : decimal(b.trendPerDay)} note="credits per day, per day" />
            <${Stat} label="Days left" value=${b.projection.daysLeft === null ? '—' : decimal(b.projection.daysLeft)}
              note=${`Balance ${count(b.balance)}`} />
          </div>
                      <${Chart}
              title=${`Credits used per day, ${b.from} to ${b.to}`}
              x=${b.days.map((d) => dayToUnix(d.date))}
              series=${[{ label: 'Credits used', values: b.days.map((d) => d.credits) }]}
            />`
        : null
    }

    <h2>Sources</h2>
    <${ErrorMessage} error=${sources.error} />
    ${sources.loading && !sources.data ? html`<${Loading} what="the sources" />` : null}
    ${
      sources.data
        ? html`<${Table}
            caption="Sources, newest first"
            rowKey=${(s) => s.sourceId}
            rows=${sources.data.sources}
            columns=${[
              { key: 'name', label: 'Source', render: (s) => html`<a href=${`/sources/${s.sourceId}`}>${s.name}</a>` },
              { key: 'status', label: 'Status' },
              { key: 'leads', label: 'Leads', render: (s) => count(s.leads) },
              { key: 'runs', label: 'Runs finished', render: (s) => count(s.runs.finished) },
              { key: 'successRate', label: 'Success rate', render: (s) => percent(s.successRate) },
              { key: 'leadsPerRun', label: 'Leads a run', render: (s) => decimal(s.leadsPerRun) },
              { key: 'avgRunSeconds', label: 'Average run', render: (s) => duration(s.avgRunSeconds) },
              { key: 'lastRunAt', label: 'Last run', render: (s) => html`<${Time} iso=${s.lastRunAt} />` },
            ]}
            empty="No sources yet."
          />`
        : null
    }
  </${Page}>`;
}
