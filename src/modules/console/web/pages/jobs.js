import { get, query } from '../lib/api.js';
import { html } from '../lib/html.js';
import { setQuery } from '../lib/router.js';
import { Badge, ErrorMessage, Page, Pager, Select, Table, Time, useResource } from '../lib/ui.js';

const STATUSES = ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED'];

/** The columns of a job table (this page's and a source's). */
export const JOB_COLUMNS = [
  { key: 'name', label: 'Name', render: (j) => html`<a href=${`/jobs/${j.id}`}>${j.name}</a>` },
  { key: 'status', label: 'Status', render: (j) => html`<${Badge} value=${j.status} />` },
  { key: 'progress', label: 'Progress', render: (j) => `${j.progress}%` },
  { key: 'leadsFound', label: 'Leads found', render: (j) => String(j.leadsFound) },
  { key: 'pagesVisited', label: 'Pages', render: (j) => String(j.pagesVisited) },
  { key: 'createdAt', label: 'Started', render: (j) => html`<${Time} iso=${j.startedAt ?? j.createdAt} />` },
];

/** Scraping jobs (GET /api/jobs), newest first, filtered by status. */
export default function Jobs({ query: search }) {
  const status = search.get('status') ?? '';
  const cursor = search.get('cursor') ?? undefined;
  const jobs = useResource(
    (signal) => get(`/api/jobs${query({ status, cursor, limit: 50 })}`, { signal }),
    [status, cursor],
  );
  return html`<${Page} title="Jobs">
    <div class="toolbar">
      <${Select}
        label="Status"
        value=${status}
        onChange=${(value) => setQuery({ status: value, cursor: '' })}
        options=${[['', 'Any status'], ...STATUSES.map((s) => [s, s.charAt(0) + s.slice(1).toLowerCase()])]}
      />
    </div>
    <${ErrorMessage} error=${jobs.error} />
    ${
      jobs.data
        ? html`<${Table} caption="Your jobs" rows=${jobs.data.jobs} columns=${JOB_COLUMNS} empty="No jobs." />
          <${Pager}
            nextCursor=${jobs.data.nextCursor}
            onNext=${(next) => setQuery({ cursor: next })}
            onFirst=${() => setQuery({ cursor: '' })}
            atFirst=${!cursor}
          />`
        : null
    }
  </${Page}>`;
}
