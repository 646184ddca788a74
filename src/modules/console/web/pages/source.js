import { get, post, query } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { navigate } from '../lib/router.js';
import { ActionButton, Badge, ErrorMessage, Page, Pager, Table, Time, useResource } from '../lib/ui.js';
import { JOB_COLUMNS } from './jobs.js';

/** Selector keys in the order people read them, with their names (docs/selectors.md); others follow A–Z. */
const SELECTOR_KEYS = [
  ['item', 'Item'],
  ['firstName', 'First name'],
  ['lastName', 'Last name'],
  ['fullName', 'Full name'],
  ['email', 'Email'],
  ['phone', 'Phone'],
  ['company', 'Company'],
  ['jobTitle', 'Job title'],
  ['nextPage', 'Next page'],
  ['waitFor', 'Wait for'],
];
const KEY_ORDER = new Map(SELECTOR_KEYS.map(([key], i) => [key, i]));
const KEY_LABEL = new Map(SELECTOR_KEYS);
const selectorRows = (selectors) =>
  Object.entries(selectors)
    .map(([key, selector]) => ({ key, selector }))
    .sort(
      (a, b) =>
        (KEY_ORDER.get(a.key) ?? 99) - (KEY_ORDER.get(b.key) ?? 99) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
    );

/**
 * One source (GET /api/sources/:id): its settings and selectors, "Activate" (POST …/activate) while it is not
 * active, "Run job" (POST /api/jobs) once it is, and its jobs (GET /api/jobs?sourceId=…).
 */
export default function Source({ params }) {
  const source = useResource((signal) => get(`/api/sources/${params.id}`, { signal }), [params.id]);
  const [cursor, setCursor] = useState();
  const jobs = useResource(
    (signal) => get(`/api/jobs${query({ sourceId: params.id, cursor, limit: 20 })}`, { signal }),
    [params.id, cursor],
  );
  const s = source.data?.source;
  const project = useResource(
    (signal) => (s?.projectId ? get(`/api/projects/${s.projectId}`, { signal }) : undefined),
    [s?.projectId],
  );

  if (source.error) return html`<${Page} title="Source"><${ErrorMessage} error=${source.error} /></${Page}>`;
  if (!s) return html`<p class="loading" aria-live="polite">Loading…</p>`;

  const activate = async () => {
    await post(`/api/sources/${s.id}/activate`);
    source.reload();
  };
  const run = async () => {
    const { job } = await post('/api/jobs', { name: `${s.name}: manual run`, sourceId: s.id });
    navigate(`/jobs/${job.id}`);
  };
  const actions =
    s.status === 'ACTIVE'
      ? html`<${ActionButton} onClick=${run}>Run job</${ActionButton}>`
      : html`<${ActionButton} onClick=${activate}>Activate</${ActionButton}>`;

  return html`<${Page} title=${s.name} actions=${actions}>
    <p>
      ${project.data?.project ? html`<a href=${`/projects/${s.projectId}`}>${project.data.project.name}</a>` : html`<a href="/projects">Projects</a>`}
    </p>
    ${s.status === 'ACTIVE' ? null : html`<p class="notice">This source is a ${s.status.toLowerCase()}: activate it to run jobs.</p>`}
    <div class="panel">
      <dl class="facts">
        <dt>Status</dt>
        <dd><${Badge} value=${s.status} /></dd>
        <dt>URL</dt>
        <dd><span class="url" data-volatile>${s.url}</span></dd>
        <dt>Scrape type</dt>
        <dd>${s.scrapeType}</dd>
        <dt>Schedule</dt>
        <dd>${s.scheduleType}</dd>
        ${s.description ? html`<dt>Description</dt><dd>${s.description}</dd>` : null}
        <dt>Last run</dt>
        <dd><${Time} iso=${s.lastRunAt} /></dd>
        <dt>Created</dt>
        <dd><${Time} iso=${s.createdAt} /></dd>
      </dl>
    </div>
    <h2>Selectors</h2>
    <${Table}
      caption="Selectors of this source"
      rowKey=${(row) => row.key}
      rows=${selectorRows(s.selectors)}
      columns=${[
        { key: 'key', label: 'Field', render: (row) => KEY_LABEL.get(row.key) ?? row.key },
        { key: 'selector', label: 'Selector', render: (row) => html`<code>${row.selector}</code>` },
      ]}
      empty="No selectors."
    />
    <h2>Jobs</h2>
    <p><a href="/jobs">All jobs</a></p>
    <${ErrorMessage} error=${jobs.error} />
    ${
      jobs.data
        ? html`<${Table}
            caption="Jobs of this source"
            rows=${jobs.data.jobs}
            columns=${JOB_COLUMNS}
            empty=${s.status === 'ACTIVE' ? 'No jobs yet: start one with Run job.' : 'No jobs yet.'}
          />
          <${Pager} nextCursor=${jobs.data.nextCursor} onNext=${setCursor} onFirst=${() => setCursor()} atFirst=${!cursor} />`
        : null
    }
  </${Page}>`;
}
