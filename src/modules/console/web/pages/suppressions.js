import { del, get, post, query } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { setQuery } from '../lib/router.js';
import {
  ActionButton,
  ErrorMessage,
  Field,
  Form,
  Page,
  Pager,
  Select,
  Table,
  TextArea,
  Time,
  useResource,
} from '../lib/ui.js';
import { OutreachNav } from './outreach/subnav.js';

const SOURCES = ['manual', 'unsubscribe', 'hard_bounce', 'complaint'];

/** The suppression list (GET/POST/DELETE /api/suppressions): addresses and domains no mail goes to. */
export default function Suppressions({ query: search }) {
  const q = search?.get('q') ?? '';
  const type = search?.get('type') ?? '';
  const source = search?.get('source') ?? '';
  const [cursor, setCursor] = useState();
  const [text, setText] = useState(q);
  const list = useResource(
    (signal) => get(`/api/suppressions${query({ q, type, source, cursor, limit: 50 })}`, { signal }),
    [q, type, source, cursor],
  );
  const [adding, setAdding] = useState(false);
  const [added, setAdded] = useState();
  const filter = (changes) => {
    setCursor();
    setQuery(changes);
  };

  return html`<${Page}
    title="Suppressions"
    actions=${html`<button type="button" onClick=${() => setAdding(!adding)} aria-expanded=${adding}>Add suppression</button>`}
  >
    <${OutreachNav} />
    <p class="muted">No campaign or one-off mail goes to an address here, or to any address at a domain here (or under it).</p>
    ${
      adding
        ? html`<${AddSuppressions}
            onAdded=${(result) => {
              setAdded(result);
              setAdding(false);
              list.reload();
            }}
          />`
        : null
    }
    ${
      added
        ? html`<div class="notice" role="status">
            Added ${added.added}${added.merged ? `, merged ${added.merged} with entries already listed` : ''}.
          </div>`
        : null
    }
    <form
      class="toolbar"
      role="search"
      aria-label="Filter suppressions"
      onSubmit=${(e) => {
        e.preventDefault();
        filter({ q: text.trim() });
      }}
    >
      <${Field} label="Search" type="search" value=${text} onInput=${setText} hint="Part of an address or domain" />
      <${Select}
        label="Type"
        value=${type}
        onChange=${(v) => filter({ type: v })}
        options=${[['', 'Any type'], ['email', 'Address'], ['domain', 'Domain']]}
      />
      <${Select}
        label="Source"
        value=${source}
        onChange=${(v) => filter({ source: v })}
        options=${[['', 'Any source'], ...SOURCES.map((s) => [s, s.replace('_', ' ')])]}
      />
      <button type="submit" class="secondary">Search</button>
    </form>
    <${ErrorMessage} error=${list.error} />
    ${list.loading && !list.data ? html`<p class="loading">Loading suppressions…</p>` : null}
    ${
      list.data
        ? html`<${Table}
            caption="Suppressed addresses and domains"
            rows=${list.data.suppressions}
            columns=${[
              { key: 'value', label: 'Value' },
              { key: 'type', label: 'Type', render: (s) => (s.type === 'email' ? 'Address' : 'Domain') },
              { key: 'source', label: 'Source', render: (s) => s.source.replace('_', ' ') },
              { key: 'reason', label: 'Reason', render: (s) => s.reason ?? '—' },
              { key: 'createdAt', label: 'Added', render: (s) => html`<${Time} iso=${s.createdAt} />` },
              {
                key: 'actions',
                label: 'Actions',
                render: (s) =>
                  html`<${ActionButton}
                    class="secondary"
                    aria-label=${`Remove ${s.value}`}
                    confirm=${`Remove ${s.value} from the suppression list? Mail may go to it again.`}
                    onClick=${async () => {
                      await del(`/api/suppressions/${s.id}`);
                      list.reload();
                    }}
                    >Remove</${ActionButton}
                  >`,
              },
            ]}
            empty=${q || type || source ? 'Nothing matches.' : 'The list is empty.'}
          />
          <${Pager} nextCursor=${list.data.nextCursor} onNext=${setCursor} onFirst=${() => setCursor()} atFirst=${!cursor} />`
        : null
    }
  </${Page}>`;
}

/** One address or domain per line; the type is read from the value (an @ makes it an address). */
function AddSuppressions({ onAdded }) {
  const [values, setValues] = useState('');
  const [reason, setReason] = useState('');
  const add = async () => {
    const items = values
      .split(/[\n,]/)
      .map((v) => v.trim())
      .filter(Boolean)
      .map((value) => ({
        type: value.includes('@') ? 'email' : 'domain',
        value: value.replace(/^@/, ''),
        ...(reason.trim() ? { reason: reason.trim() } : {}),
      }));
    onAdded(await post('/api/suppressions', { items: items.length ? items : [{ type: 'email', value: '' }] }));
  };
  return html`<${Form} onSubmit=${add} submitLabel="Add" label="Add suppressions">
    <${TextArea}
      label="Addresses or domains"
      value=${values}
      onInput=${setValues}
      hint="One a line (or comma-separated): a value with @ is an address, else a domain"
    />
    <${Field} label="Reason" value=${reason} onInput=${setReason} hint="Optional" />
  </${Form}>`;
}
