// Qualification: matching rules (GET/POST /api/matching/rules) over the profiles of a profile type, a rule builder
// whose preview (POST /api/matching/preview: nothing stored) follows every change, and a run over every profile
// (POST /api/matching/execute).
import { get, post, query as qs } from '../lib/api.js';
import { html, useEffect, useState } from '../lib/html.js';
import { ActionButton, Badge, ErrorMessage, Field, Page, Pager, Select, Table, Time, useResource } from '../lib/ui.js';

const OPERATORS = [
  ['equals', 'equals'],
  ['not_equals', 'does not equal'],
  ['contains', 'contains'],
  ['not_contains', 'does not contain'],
  ['in', 'is one of'],
  ['not_in', 'is none of'],
  ['gt', '>'],
  ['gte', '≥'],
  ['lt', '<'],
  ['lte', '≤'],
  ['exists', 'has a value'],
  ['not_exists', 'has no value'],
  ['regex', 'matches the pattern'],
];
const LEAD_COLUMNS = ['company', 'jobTitle', 'email', 'emailDomain', 'fullName', 'status', 'tags', 'sourceUrl'];
const NO_VALUE = new Set(['exists', 'not_exists']);
const PREVIEW_DELAY_MS = 300;

/** A condition as the API takes it: lists split on commas, numbers as numbers for the comparisons. */
function conditionOf(c) {
  const out = { field: c.field, operator: c.operator };
  if (NO_VALUE.has(c.operator)) return out;
  const text = c.value.trim();
  if (c.operator === 'in' || c.operator === 'not_in')
    out.value = text
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean);
  else if (['gt', 'gte', 'lt', 'lte'].includes(c.operator) && text !== '' && Number.isFinite(Number(text)))
    out.value = Number(text);
  else out.value = text;
  return out;
}

export default function Qualification() {
  const types = useResource((signal) => get('/api/profile-types?limit=100', { signal }), []);
  const [cursor, setCursor] = useState();
  const rules = useResource((signal) => get(`/api/matching/rules${qs({ cursor, limit: 20 })}`, { signal }), [cursor]);
  const [preview, setPreview] = useState({ state: 'idle' });

  const previewSaved = async (rule) => {
    setPreview({ state: 'loading', title: `Preview of “${rule.name}”` });
    try {
      const data = await post('/api/matching/preview', { ruleId: rule.id });
      setPreview({ state: 'done', title: `Preview of “${rule.name}”`, data, types: types.data?.profileTypes ?? [] });
    } catch (error) {
      setPreview({ state: 'error', error });
    }
  };

  const profileTypes = types.data?.profileTypes ?? [];
  const typeName = (id) => profileTypes.find((t) => t.id === id)?.name ?? 'another type';
  return html`<${Page} title="Qualification">
    <p class="muted">
      Rules score the profiles found with your leads. Build one below: the preview evaluates the newest profiles of the
      type as you type, without storing anything.
    </p>
    <${ErrorMessage} error=${types.error} />
    ${
      types.data
        ? profileTypes.length
          ? html`<${Builder} types=${profileTypes} onPreview=${setPreview} onSaved=${rules.reload} />`
          : html`<p class="empty">No profile type yet: profiles (and so rules) need one (POST /api/profile-types).</p>`
        : null
    }
    <${PreviewResults} preview=${preview} />
    <h2>Saved rules</h2>
    <${ErrorMessage} error=${rules.error} />
    ${
      rules.data
        ? html`<${Table}
            caption="Your matching rules"
            rows=${rules.data.rules}
            columns=${[
              { key: 'name', label: 'Name' },
              { key: 'type', label: 'Type', render: (r) => html`<${Badge} value=${r.type} />` },
              { key: 'profileTypeId', label: 'Profile type', render: (r) => typeName(r.profileTypeId) },
              {
                key: 'lastRun',
                label: 'Last run',
                render: (r) =>
                  r.lastRun
                    ? html`<${Badge} value=${r.lastRun.status} /> ${r.lastRun.matched} of ${r.lastRun.total} matched`
                    : html`<span class="muted">never run</span>`,
              },
              { key: 'createdAt', label: 'Created', render: (r) => html`<${Time} iso=${r.createdAt} />` },
              {
                key: 'actions',
                label: 'Actions',
                render: (r) => html`<div class="actions">
                  <button type="button" class="secondary" aria-label=${`Preview ${r.name}`} onClick=${() => previewSaved(r)}>
                    Preview
                  </button>
                  <${ActionButton}
                    aria-label=${`Run ${r.name}`}
                    onClick=${async () => {
                      await post('/api/matching/execute', { ruleId: r.id });
                      rules.reload();
                    }}
                    >Run</${ActionButton}
                  >
                </div>`,
              },
            ]}
            empty="No rules yet."
          />
          <${Pager} nextCursor=${rules.data.nextCursor} onNext=${setCursor} onFirst=${() => setCursor()} atFirst=${!cursor} />`
        : null
    }
  </${Page}>`;
}

/** A FILTER rule being written: its preview follows every change (debounced), "Save rule" stores it. */
function Builder({ types, onPreview, onSaved }) {
  const [typeId, setTypeId] = useState(types[0].id);
  const type = types.find((t) => t.id === typeId) ?? types[0];
  const fields = [
    ...type.fields.map((f) => [`profile.${f.name}`, `Profile: ${f.label ?? f.name}`]),
    ...LEAD_COLUMNS.map((c) => [`lead.${c}`, `Lead: ${c}`]),
  ];
  const [join, setJoin] = useState('AND');
  const [conditions, setConditions] = useState([{ field: fields[0][0], operator: 'contains', value: '' }]);
  const [name, setName] = useState('');
  const [saveError, setSaveError] = useState();
  const [savedName, setSavedName] = useState();

  const rule = {
    profileTypeId: type.id,
    type: 'FILTER',
    conditions: { operator: join, conditions: conditions.map(conditionOf) },
  };
  const ruleKey = JSON.stringify(rule);
  const ready = conditions.every((c) => NO_VALUE.has(c.operator) || c.value.trim() !== '');

  useEffect(() => {
    if (!ready) {
      onPreview({ state: 'idle' });
      return;
    }
    const controller = new AbortController();
    const timer = setTimeout(() => {
      onPreview({ state: 'loading', title: 'Live preview' });
      post('/api/matching/preview', { rule, sampleSize: 20 }, { signal: controller.signal }).then(
        (data) => onPreview({ state: 'done', title: 'Live preview', data, types }),
        (error) => error?.name !== 'AbortError' && onPreview({ state: 'error', error }),
      );
    }, PREVIEW_DELAY_MS);
    return () => {
      clearTimeout(timer);
      controller.abort();
    };
  }, [ruleKey, ready]);

  const change = (i, patch) => setConditions((cs) => cs.map((c, j) => (j === i ? { ...c, ...patch } : c)));
  const save = async (event) => {
    event.preventDefault();
    setSaveError(undefined);
    try {
      await post('/api/matching/rules', { ...rule, name: name.trim() });
      setSavedName(name.trim());
      setName('');
      onSaved();
    } catch (error) {
      setSaveError(error);
    }
  };

  return html`<form class="rule-builder panel" aria-label="New rule" onSubmit=${save} novalidate>
    <h2>New rule</h2>
    <div class="form-row">
      <${Select}
        label="Profile type"
        value=${type.id}
        onChange=${(id) => {
          setTypeId(id);
          const next = types.find((t) => t.id === id);
          const first = next?.fields[0] ? `profile.${next.fields[0].name}` : 'lead.company';
          setConditions([{ field: first, operator: 'contains', value: '' }]);
        }}
        options=${types.map((t) => [t.id, t.name])}
      />
      <${Select}
        label="Match"
        value=${join}
        onChange=${setJoin}
        options=${[['AND', 'All conditions'], ['OR', 'Any condition']]}
      />
    </div>
    ${conditions.map(
      (c, i) => html`<fieldset class="form-row condition" key=${i}>
        <legend class="visually-hidden">Condition ${i + 1}</legend>
        <${Select} label=${`Field ${i + 1}`} value=${c.field} onChange=${(v) => change(i, { field: v })} options=${fields} />
        <${Select} label=${`Operator ${i + 1}`} value=${c.operator} onChange=${(v) => change(i, { operator: v })} options=${OPERATORS} />
        ${
          NO_VALUE.has(c.operator)
            ? null
            : html`<${Field}
                label=${`Value ${i + 1}`}
                value=${c.value}
                onInput=${(v) => change(i, { value: v })}
                hint=${c.operator === 'in' || c.operator === 'not_in' ? 'Comma-separated' : undefined}
              />`
        }
        ${
          conditions.length > 1
            ? html`<button
                type="button"
                class="secondary"
                aria-label=${`Remove condition ${i + 1}`}
                onClick=${() => setConditions((cs) => cs.filter((_, j) => j !== i))}
              >
                Remove
              </button>`
            : null
        }
      </fieldset>`,
    )}
    <div class="actions">
      <button
        type="button"
        class="secondary"
        onClick=${() => setConditions((cs) => [...cs, { field: fields[0][0], operator: 'equals', value: '' }])}
      >
        Add condition
      </button>
    </div>
    <div class="form-row">
      <${Field} label="Rule name" value=${name} onInput=${setName} />
      <button type="submit">Save rule</button>
    </div>
    <${ErrorMessage} error=${saveError} />
    ${savedName ? html`<p class="muted" role="status">Saved “${savedName}”.</p>` : null}
  </form>`;
}

function PreviewResults({ preview }) {
  if (preview.state === 'idle') return null;
  if (preview.state === 'error') return html`<${ErrorMessage} error=${preview.error} />`;
  const busy = preview.state === 'loading';
  const data = preview.data;
  const summary = (p) =>
    Object.values(p.profile.data)
      .filter((v) => typeof v === 'string' || typeof v === 'number')
      .slice(0, 3)
      .join(' · ') || '(no data)';
  return html`<section class="panel" aria-labelledby="preview-title" aria-busy=${busy ? 'true' : 'false'}>
    <h2 id="preview-title">${preview.title}</h2>
    ${
      data
        ? html`<p role="status">${data.summary.matched} of ${data.summary.evaluated} profiles match.</p>
          <${Table}
            caption="Profiles evaluated"
            rowKey=${(r) => r.profileId}
            rows=${data.results}
            columns=${[
              { key: 'profile', label: 'Profile', render: summary },
              {
                key: 'lead',
                label: 'Lead',
                render: (r) =>
                  r.leadId ? html`<a href=${`/leads/${r.leadId}`}>Open lead</a>` : html`<span class="muted">—</span>`,
              },
              {
                key: 'matched',
                label: 'Matched',
                render: (r) => html`<${Badge} value=${r.matched ? 'Qualified' : 'Disqualified'} />`,
              },
              { key: 'matchScore', label: 'Score', render: (r) => r.matchScore ?? '—' },
              {
                key: 'details',
                label: 'Why',
                render: (r) =>
                  r.error ??
                  r.aiReasoning ??
                  (r.details?.criteria ?? []).map((c) => `${c.held ? '✓' : '✗'} ${c.label}`).join('; '),
              },
            ]}
            empty="No profile of this type yet."
          />`
        : html`<p class="loading" aria-live="polite">Evaluating…</p>`
    }
  </section>`;
}
