import { del, get, post, query } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { ActionButton, ErrorMessage, Field, Form, Page, Pager, Table, Time, useResource } from '../lib/ui.js';

/** API keys for programs (GET/POST/DELETE /api/api-keys): the new key is shown once, then only its prefix. */
export default function ApiKeys() {
  const [cursor, setCursor] = useState();
  const keys = useResource((signal) => get(`/api/api-keys${query({ cursor, limit: 50 })}`, { signal }), [cursor]);
  const [creating, setCreating] = useState(false);
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState('*');
  const [created, setCreated] = useState();

  const create = async () => {
    const list = scopes
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const { apiKey } = await post('/api/api-keys', {
      name: name.trim() || `Console key ${new Date().toISOString().slice(0, 10)}`,
      scopes: list.length ? list : ['*'],
    });
    setCreated(apiKey);
    setCreating(false);
    setName('');
    keys.reload();
  };

  return html`<${Page}
    title="API keys"
    actions=${html`<button type="button" onClick=${() => setCreating(true)} aria-expanded=${creating}>Create key</button>`}
  >
    <p class="muted">Keys let programs, scripts and MCP clients call the API as you. This console signs in with a session instead.</p>
    ${
      creating
        ? html`<${Form} onSubmit=${create} submitLabel="Create" label="Create an API key">
          <${Field} label="Name" value=${name} onInput=${setName} hint="Optional: what the key is for" />
          <${Field}
            label="Scopes"
            value=${scopes}
            onInput=${setScopes}
            hint="Comma-separated, e.g. leads:read, sources:write; * for every scope"
          />
        </${Form}>`
        : null
    }
    ${
      created
        ? html`<div class="notice" role="status">
          <p><strong>Copy this key now: it is shown only once.</strong></p>
          <p><code class="secret" data-volatile aria-label="Create an API key">${created.key}</code></p>
          <div class="actions">
            <button type="button" onClick=${() => navigator.clipboard?.writeText(created.key)}>Copy key</button>
            <button type="button" class="secondary" onClick=${() => setCreated(undefined)}>Done</button>
          </div>
        </div>`
        : null
    }
    <${ErrorMessage} error=${keys.error} />
    ${
      keys.data
        ? html`<${Table}
            caption="Your API keys"
            rows=${keys.data.apiKeys}
            columns=${[
              { key: 'name', label: 'Name' },
              { key: 'prefix', label: 'Prefix', render: (k) => html`<code data-volatile>${k.prefix}…</code>` },
              { key: 'scopes', label: 'Scopes', render: (k) => k.scopes.join(', ') },
              { key: 'lastUsedAt', label: 'Last used', render: (k) => html`<${Time} iso=${k.lastUsedAt} />` },
              { key: 'createdAt', label: 'Created', render: (k) => html`<${Time} iso=${k.createdAt} />` },
              {
                key: 'actions',
                label: 'Actions',
                render: (k) =>
                  html`<${ActionButton}
                    onClick=${async () => {
                      await del(`/api/api-keys/${k.id}`);
                      keys.reload();
                    }}
                    confirm=${`Revoke the key "${k.name}"? Programs using it stop working.`}
                    aria-label=${`Revoke ${k.name}`}
                    >Revoke</${ActionButton}
                  >`,
              },
            ]}
            empty="No API keys yet."
          />
          <${Pager} nextCursor=${keys.data.nextCursor} onNext=${setCursor} onFirst=${() => setCursor()} atFirst=${!cursor} />`
        : null
    }
  </${Page}>`;
}
