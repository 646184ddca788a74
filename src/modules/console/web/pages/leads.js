// Leads (GET /api/leads): one page of 50 at a time however many there are (cursor pagination, newest or oldest
// first), filtered by text, company, status, tag and job; the filters and the cursor live in the URL query. Bulk
// actions on the selected rows: tags and status (PATCH /api/leads/bulk), email validation (validate-bulk), a CSV of
// the selection or of every lead the filters find (POST /api/leads/export), and enrolment in an outreach campaign
// (POST /api/outreach/campaigns/{id}/leads).
import { api, get, patch, post, query as qs } from '../lib/api.js';
import { html, useEffect, useState } from '../lib/html.js';
import { setQuery } from '../lib/router.js';
import {
  ActionButton,
  Badge,
  ErrorMessage,
  Field,
  Page,
  Pager,
  Select,
  Table,
  useAsyncAction,
  useResource,
} from '../lib/ui.js';

// The lead's page imports these from here: one module fewer to fetch before the first rows.
export const STATUSES = [
  'NEW',
  'VALID',
  'INVALID',
  'RISKY',
  'CONTACTED',
  'REPLIED',
  'QUALIFIED',
  'DISQUALIFIED',
  'CONVERTED',
  'UNSUBSCRIBED',
];
/** VALID, INVALID and RISKY are set by email validation only (the API refuses them in updates). */
export const SETTABLE_STATUSES = STATUSES.filter((s) => !['VALID', 'INVALID', 'RISKY'].includes(s));

/** "First Last", else the email, else the company: what a lead is called in links and checkboxes. */
export function leadName(lead) {
  const name = [lead.firstName, lead.lastName].filter(Boolean).join(' ');
  return name || lead.email || lead.company || 'Unnamed lead';
}

export function TagList({ tags }) {
  if (!tags?.length) return null;
  return html`<ul class="tags">
    ${tags.map((t) => html`<li>${t}</li>`)}
  </ul>`;
}

const PAGE_SIZE = 50;
const FILTER_KEYS = ['q', 'company', 'status', 'tag', 'jobId', 'sort'];

const filtersOf = (query) => Object.fromEntries(FILTER_KEYS.map((k) => [k, query.get(k) ?? '']));

export default function Leads({ query }) {
  const applied = filtersOf(query);
  const cursor = query.get('cursor') ?? '';
  const key = `${FILTER_KEYS.map((k) => applied[k]).join('\u0000')}\u0000${cursor}`;
  const list = useResource(
    (signal) => get(`/api/leads${qs({ ...applied, cursor, limit: PAGE_SIZE })}`, { signal }),
    [key],
  );
  const jobs = useResource((signal) => get('/api/jobs?limit=100', { signal }).catch(() => ({ jobs: [] })), []);

  const [selected, setSelected] = useState(new Set());
  const [notice, setNotice] = useState();

  const anyFilter = FILTER_KEYS.some((k) => k !== 'sort' && applied[k]);
  const title = 'Leads';
  return html`<${Page} title=${title}>
    <${Filters} applied=${applied} jobs=${jobs.data?.jobs ?? []} anyFilter=${anyFilter} />
    <${BulkActions}
      selected=${selected}
      filter=${applied}
      onDone=${(message) => {
        setNotice(message);
        list.reload();
      }}
      onClear=${() => setSelected(new Set())}
    />
    ${notice ? html`<div class="notice" role="status">${notice}</div>` : null}
    <${ErrorMessage} error=${list.error} />
    ${
      list.data
        ? html`<div class="leads-table" aria-busy=${list.loading ? 'true' : 'false'}>
            <${Table}
              caption=${anyFilter ? 'Leads matching the filters' : 'Your leads'}
              rows=${list.data.leads}
              selected=${selected}
              onSelect=${setSelected}
              rowLabel=${leadName}
              columns=${[
                {
                  key: 'name',
                  label: 'Name',
                  render: (l) =>
                    html`<a href=${`/leads/${l.id}`}>${leadName(l)}</a>${l.jobTitle ? html`<span class="sub">${l.jobTitle}</span>` : null}`,
                },
                { key: 'email', label: 'Email', render: (l) => l.email ?? html`<span class="muted">—</span>` },
                { key: 'company', label: 'Company' },
                { key: 'status', label: 'Status', render: (l) => html`<${Badge} value=${l.status} />` },
                { key: 'tags', label: 'Tags', render: (l) => html`<${TagList} tags=${l.tags} />` },
                { key: 'createdAt', label: 'Created', render: (l) => html`<${Day} iso=${l.createdAt} />` },
              ]}
              empty=${anyFilter ? 'No lead matches these filters.' : 'No leads yet: run a job on a source to find some.'}
            />
          </div>
          <${Pager}
            nextCursor=${list.data.nextCursor}
            onNext=${(next) => setQuery({ cursor: next })}
            onFirst=${() => setQuery({ cursor: undefined })}
            atFirst=${!cursor}
          />`
        : list.loading
          ? html`<p class="loading" aria-live="polite">Loading leads…</p>`
          : null
    }
  </${Page}>`;
}

/** The filter form: applied to the URL (and so to the list) on submit; Enter in any box submits. */
function Filters({ applied, jobs, anyFilter }) {
  const [draft, setDraft] = useState(applied);
  const appliedKey = JSON.stringify(applied);
  useEffect(() => setDraft(applied), [appliedKey]);
  const set = (k) => (v) => setDraft((d) => ({ ...d, [k]: v }));
  const submit = (event) => {
    event.preventDefault();
    const next = Object.fromEntries(FILTER_KEYS.map((k) => [k, draft[k]?.trim() || undefined]));
    if (next.sort === 'newest') next.sort = undefined;
    setQuery({ ...next, cursor: undefined });
  };
  const jobOptions = [['', 'All jobs'], ...jobs.map((j) => [j.id, j.name])];
  if (applied.jobId && !jobs.some((j) => j.id === applied.jobId))
    jobOptions.push([applied.jobId, 'The job of the link']);
  return html`<form class="lead-filters panel" role="search" aria-label="Filter leads" onSubmit=${submit}>
    <div class="form-row">
      <${Field} label="Search" type="search" value=${draft.q} onInput=${set('q')} placeholder="Name, email…" />
      <${Field} label="Company" value=${draft.company} onInput=${set('company')} />
      <${Select}
        label="Status"
        value=${draft.status}
        onChange=${set('status')}
        options=${[['', 'All statuses'], ...STATUSES.map((s) => [s, s[0] + s.slice(1).toLowerCase()])]}
      />
      <${Field} label="Filter by tag" value=${draft.tag} onInput=${set('tag')} />
      <${Select} label="Job" value=${draft.jobId} onChange=${set('jobId')} options=${jobOptions} />
      <${Select}
        label="Sort"
        value=${draft.sort || 'newest'}
        onChange=${set('sort')}
        options=${[['newest', 'Newest first'], ['oldest', 'Oldest first']]}
      />
      <div class="filter-buttons">
        <button type="submit">Apply filters</button>
        ${
          anyFilter
            ? html`<button
                type="button"
                class="secondary"
                onClick=${() => setQuery(Object.fromEntries([...FILTER_KEYS, 'cursor'].map((k) => [k, undefined])))}
              >
                Clear filters
              </button>`
            : null
        }
      </div>
    </div>
  </form>`;
}

/** What can be done to the selected leads; one sub-form open at a time. */
function BulkActions({ selected, filter, onDone, onClear }) {
  const [mode, setMode] = useState();
  const ids = [...selected];
  const none = ids.length === 0;
  const toggle = (m) => setMode((current) => (current === m ? undefined : m));
  const finish = (message) => {
    setMode(undefined);
    onDone(message);
  };
  useEffect(() => {
    if (none) setMode(undefined);
  }, [none]);

  const validate = async () => {
    const r = await post('/api/leads/validate-bulk', { leadIds: ids });
    const noEmail = r.skipped.filter((s) => s.reason === 'no_email').length;
    finish(
      `Email validation queued for ${plural(r.totalQueued, 'lead')}${noEmail ? `; ${noEmail} without an email` : ''}.`,
    );
  };
  // POST /api/leads/export: the selection, else every lead the filters find; saved as the file the API names.
  const exportCsv = async () => {
    const { sort: _sort, ...listFilter } = Object.fromEntries(Object.entries(filter).filter(([, v]) => v));
    const res = await api('POST', '/api/leads/export', none ? { filter: listFilter } : { leadIds: ids }, { raw: true });
    const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? 'leads.csv';
    const url = URL.createObjectURL(await res.blob());
    const link = document.createElement('a');
    link.href = url;
    link.download = name;
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  };

  return html`<section class="bulk panel" aria-label="Bulk actions">
    <div class="bulk-bar">
      <span class="bulk-count" aria-live="polite">
        ${none ? 'Select leads to act on them.' : `${plural(ids.length, 'lead')} selected`}
      </span>
      <div class="actions">
        <button type="button" disabled=${none} aria-expanded=${mode === 'tag'} onClick=${() => toggle('tag')}>Add tag</button>
        <button type="button" disabled=${none} aria-expanded=${mode === 'status'} onClick=${() => toggle('status')}>
          Set status
        </button>
        <${ActionButton} disabled=${none} onClick=${validate}>Validate emails</${ActionButton}>
        <${ActionButton} onClick=${exportCsv} title=${none ? 'Every lead the filters find' : 'The selected leads'}>
          ${none ? 'Export all as CSV' : 'Export CSV'}
        </${ActionButton}>
        <button type="button" disabled=${none} aria-expanded=${mode === 'enrol'} onClick=${() => toggle('enrol')}>
          Enrol in campaign
        </button>
        ${none ? null : html`<button type="button" class="secondary" onClick=${onClear}>Clear selection</button>`}
      </div>
    </div>
    ${mode === 'tag' ? html`<${AddTag} ids=${ids} onDone=${finish} />` : null}
    ${mode === 'status' ? html`<${SetStatus} ids=${ids} onDone=${finish} />` : null}
    ${mode === 'enrol' ? html`<${Enrol} ids=${ids} onDone=${finish} />` : null}
  </section>`;
}

function InlineForm({ label, onSubmit, submitLabel, children }) {
  const { busy, error, run } = useAsyncAction();
  const submit = (event) => {
    event.preventDefault();
    run(onSubmit);
  };
  return html`<form class="bulk-form" aria-label=${label} onSubmit=${submit} novalidate>
    <div class="form-row">
      ${children}
      <button type="submit" disabled=${busy}>${submitLabel}</button>
    </div>
    <${ErrorMessage} error=${error} />
  </form>`;
}

function AddTag({ ids, onDone }) {
  const [tag, setTag] = useState('');
  return html`<${InlineForm}
    label="Add a tag to the selected leads"
    submitLabel="Apply"
    onSubmit=${async () => {
      const r = await patch('/api/leads/bulk', { leadIds: ids, updates: { addTags: [tag] } });
      onDone(`Tagged ${plural(r.updated, 'lead')} "${tag.trim()}"${r.failed ? `; ${r.failed} not changed` : ''}.`);
    }}
  >
    <${Field} label="Tag" value=${tag} onInput=${setTag} autofocus />
  </${InlineForm}>`;
}

function SetStatus({ ids, onDone }) {
  const [status, setStatus] = useState(SETTABLE_STATUSES[0]);
  return html`<${InlineForm}
    label="Set the status of the selected leads"
    submitLabel="Apply"
    onSubmit=${async () => {
      const r = await patch('/api/leads/bulk', { leadIds: ids, updates: { status } });
      onDone(`Set ${plural(r.updated, 'lead')} to ${status}${r.failed ? `; ${r.failed} not changed` : ''}.`);
    }}
  >
    <${Select} label="New status" value=${status} onChange=${setStatus} options=${SETTABLE_STATUSES} />
  </${InlineForm}>`;
}

function Enrol({ ids, onDone }) {
  const campaigns = useResource((signal) => get('/api/outreach/campaigns?limit=100', { signal }), []);
  const [campaignId, setCampaignId] = useState('');
  const list = campaigns.data?.campaigns ?? [];
  const chosen = campaignId || list[0]?.id || '';
  if (campaigns.error) return html`<${ErrorMessage} error=${campaigns.error} />`;
  if (campaigns.loading) return html`<p class="loading">Loading campaigns…</p>`;
  if (!list.length)
    return html`<p class="muted">No outreach campaign yet: <a href="/outreach">create one under Outreach</a>.</p>`;
  return html`<${InlineForm}
    label="Enrol the selected leads in an outreach campaign"
    submitLabel="Enrol"
    onSubmit=${async () => {
      const r = await post(`/api/outreach/campaigns/${chosen}/leads`, { leadIds: ids });
      const skipped = Object.entries(r.skipped)
        .map(([reason, n]) => `${n} ${reason.replace(/_/g, ' ')}`)
        .join(', ');
      const name = list.find((c) => c.id === chosen)?.name ?? 'the campaign';
      onDone(`Enrolled ${plural(r.uploaded, 'lead')} in ${name}${skipped ? `; skipped: ${skipped}` : ''}.`);
    }}
  >
    <${Select}
      label="Campaign"
      value=${chosen}
      onChange=${setCampaignId}
      options=${list.map((c) => [c.id, `${c.name} (${c.status.toLowerCase()})`])}
    />
  </${InlineForm}>`;
}

/** The day a lead was found, short (the time is on its page); volatile for screenshots. */
function Day({ iso }) {
  const date = new Date(iso);
  return html`<time datetime=${iso} title=${date.toLocaleString()} data-volatile>
    ${date.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' })}
  </time>`;
}

const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;
