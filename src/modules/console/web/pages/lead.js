// One lead (GET /api/leads/{id}): its fields, where each was found (the page URL and the CSS selector it was read
// with), its email validation; status, tags and notes edited with PATCH /api/leads/{id}.
import { ApiError, del, get, patch, post } from '../lib/api.js';
import { html, useEffect, useState } from '../lib/html.js';
import { navigate } from '../lib/router.js';
import {
  ActionButton,
  Badge,
  ErrorMessage,
  ExternalLink,
  Field,
  Form,
  Page,
  Select,
  Table,
  TextArea,
  Time,
  useResource,
} from '../lib/ui.js';
import { leadName, SETTABLE_STATUSES, TagList } from './leads.js';

const FIELD_LABELS = {
  firstName: 'First name',
  lastName: 'Last name',
  email: 'Email',
  phone: 'Phone',
  company: 'Company',
  jobTitle: 'Job title',
};

export default function Lead({ params }) {
  const lead = useResource((signal) => get(`/api/leads/${encodeURIComponent(params.id)}`, { signal }), [params.id]);
  if (lead.error)
    return html`<${Page} title=${lead.error instanceof ApiError && lead.error.status === 404 ? 'Lead not found' : 'Lead'}>
      <${ErrorMessage} error=${lead.error} />
      <p><a href="/leads">Back to leads</a></p>
    </${Page}>`;
  if (!lead.data) return html`<p class="loading" aria-live="polite">Loading the lead…</p>`;
  const l = lead.data.lead;
  return html`<${Page}
    title=${leadName(l)}
    actions=${html`<a class="button-link secondary" href="/leads">All leads</a>`}
  >
    <div class="lead-grid">
      <section class="panel" aria-labelledby="lead-details">
        <h2 id="lead-details">Details</h2>
        <dl class="facts">
          ${Object.entries(FIELD_LABELS).map(
            ([k, label]) => html`<dt>${label}</dt><dd>${l[k] ?? html`<span class="muted">—</span>`}</dd>`,
          )}
          <dt>Status</dt><dd><${Badge} value=${l.status} /></dd>
          <dt>Tags</dt><dd>${l.tags.length ? html`<${TagList} tags=${l.tags} />` : html`<span class="muted">none</span>`}</dd>
          <dt>Source</dt>
          <dd>${l.source ? html`<a href=${`/sources/${l.source.id}`}>${l.source.name}</a>` : html`<span class="muted">added by hand</span>`}</dd>
          <dt>Job</dt>
          <dd>${l.job ? html`<a href=${`/jobs/${l.job.id}`}>${l.job.name}</a> <${Badge} value=${l.job.status} />` : html`<span class="muted">—</span>`}</dd>
          <dt>Created</dt><dd><${Time} iso=${l.createdAt} /></dd>
          <dt>Updated</dt><dd><${Time} iso=${l.updatedAt} /></dd>
        </dl>
      </section>
      <${Edit} lead=${l} onSaved=${lead.reload} />
    </div>
    <${Provenance} lead=${l} />
    <${Validation} lead=${l} onValidated=${lead.reload} />
    ${
      Object.keys(l.customFields).length
        ? html`<section class="panel" aria-labelledby="lead-custom">
            <h2 id="lead-custom">Other fields</h2>
            <${Table}
              caption="Fields the source found beyond the standard ones"
              rowKey=${(r) => r.name}
              rows=${Object.entries(l.customFields).map(([name, value]) => ({ name, value }))}
              columns=${[
                { key: 'name', label: 'Field' },
                {
                  key: 'value',
                  label: 'Value',
                  render: (r) => (typeof r.value === 'string' ? r.value : JSON.stringify(r.value)),
                },
              ]}
            />
          </section>`
        : null
    }
    <p>
      <${ActionButton}
        class="danger"
        confirm=${`Delete ${leadName(l)}? This cannot be undone.`}
        onClick=${async () => {
          await del(`/api/leads/${l.id}`);
          navigate('/leads');
        }}
        >Delete lead</${ActionButton}
      >
    </p>
  </${Page}>`;
}

/** Where the lead was found: the page URL, and per field the selector its value came from. */
function Provenance({ lead }) {
  const p = lead.provenance;
  const pageUrl = p?.pageUrl ?? lead.sourceUrl;
  const selectors = Object.entries(p?.selectors ?? {});
  const fieldValue = (field) => lead[field] ?? lead.customFields[field] ?? null;
  return html`<section class="panel" aria-labelledby="lead-provenance">
    <h2 id="lead-provenance">Provenance</h2>
    <dl class="facts">
      <dt>Found on</dt>
      <dd>${pageUrl ? html`<${ExternalLink} url=${pageUrl} />` : html`<span class="muted">—</span>`}</dd>
      ${p?.selector ? html`<dt>Identified by</dt><dd><code>${p.selector}</code></dd>` : null}
      ${typeof p?.visible === 'boolean' ? html`<dt>Visible on the page</dt><dd>${p.visible ? 'Yes' : 'No (hidden in the markup)'}</dd>` : null}
    </dl>
    ${
      selectors.length
        ? html`<${Table}
            caption="Each field and the CSS selector it was read with"
            rowKey=${(r) => r.field}
            rows=${selectors.map(([field, selector]) => ({ field, selector }))}
            columns=${[
              { key: 'field', label: 'Field', render: (r) => FIELD_LABELS[r.field] ?? r.field },
              {
                key: 'value',
                label: 'Value',
                render: (r) => fieldValue(r.field) ?? html`<span class="muted">—</span>`,
              },
              { key: 'selector', label: 'Selector', render: (r) => html`<code>${r.selector}</code>` },
            ]}
          />`
        : html`<p class="muted">${p ? 'No selectors were recorded.' : 'Added by hand: no selectors.'}</p>`
    }
  </section>`;
}

function Validation({ lead, onValidated }) {
  const v = lead.emailValidation;
  return html`<section class="panel" aria-labelledby="lead-validation">
    <h2 id="lead-validation">Email validation</h2>
    ${
      v
        ? html`<dl class="facts">
            <dt>Result</dt><dd><${Badge} value=${v.status} /> (checked to the ${v.tier})</dd>
            ${v.errors.length ? html`<dt>Errors</dt><dd>${v.errors.join(', ')}</dd>` : null}
            ${v.flags.length ? html`<dt>Flags</dt><dd>${v.flags.join(', ')}</dd>` : null}
            ${v.suggestion ? html`<dt>Did you mean</dt><dd>${v.suggestion}</dd>` : null}
            <dt>Checked</dt><dd><${Time} iso=${v.checkedAt} /></dd>
          </dl>`
        : html`<p class="muted">${lead.email ? 'Not validated yet.' : 'No email to validate.'}</p>`
    }
    ${
      lead.email
        ? html`<${ActionButton}
            onClick=${async () => {
              await post(`/api/leads/${lead.id}/validate-email`);
              onValidated();
            }}
            >Validate email</${ActionButton}
          >`
        : null
    }
  </section>`;
}

function Edit({ lead, onSaved }) {
  const settable = SETTABLE_STATUSES.includes(lead.status);
  const [status, setStatus] = useState(lead.status);
  const [tags, setTags] = useState(lead.tags.join(', '));
  const [notes, setNotes] = useState(lead.notes ?? '');
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    setStatus(lead.status);
    setTags(lead.tags.join(', '));
    setNotes(lead.notes ?? '');
  }, [lead.updatedAt]);
  const save = async () => {
    const body = {
      tags: tags
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean),
      notes,
    };
    if (status !== lead.status) body.status = status;
    await patch(`/api/leads/${lead.id}`, body);
    setSaved(true);
    onSaved();
  };
  const options = settable
    ? SETTABLE_STATUSES
    : [[lead.status, `${lead.status} (set by validation)`], ...SETTABLE_STATUSES];
  return html`<section class="lead-edit" aria-labelledby="lead-edit">
    <h2 id="lead-edit" class="visually-hidden">Edit</h2>
    <${Form} label="Edit the lead" submitLabel="Save changes" onSubmit=${save}>
      <${Select} label="Status" value=${status} onChange=${setStatus} options=${options} />
      <${Field} label="Tags" value=${tags} onInput=${setTags} hint="Comma-separated" />
      <${TextArea} label="Notes" value=${notes} onInput=${setNotes} rows=${3} />
      ${saved ? html`<p class="muted" role="status">Saved.</p>` : null}
    </${Form}>
  </section>`;
}
