import { percent } from '../lib/account-format.js';
import { EndpointState, EventTypeChoices, SecretOnce } from '../lib/account-webhooks.js';
import { get, post, query } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { ErrorMessage, Field, Form, Page, Pager, Table, Time, useResource } from '../lib/ui.js';

/**
 * Webhook endpoints (GET/POST /api/webhooks): their health, and a new one with its URL and event types; the
 * signing secret is shown once, after creating.
 */
export default function Webhooks() {
  const [cursor, setCursor] = useState();
  const list = useResource((signal) => get(`/api/webhooks${query({ cursor, limit: 50 })}`, { signal }), [cursor]);
  const [creating, setCreating] = useState(false);
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [types, setTypes] = useState(new Set());
  const [created, setCreated] = useState();

  const create = async () => {
    const { webhook } = await post('/api/webhooks', {
      url: url.trim(),
      eventTypes: [...types],
      ...(description.trim() ? { description: description.trim() } : {}),
    });
    setCreated(webhook);
    setCreating(false);
    setUrl('');
    setDescription('');
    setTypes(new Set());
    list.reload();
  };

  return html`<${Page}
    title="Webhooks"
    actions=${html`<button type="button" onClick=${() => setCreating(!creating)} aria-expanded=${creating}>New endpoint</button>`}
  >
    <p class="muted">
      Quarry POSTs the events you choose to your endpoints, signed per Standard Webhooks${' '}
      (<code>webhook-id</code>, <code>webhook-timestamp</code>, <code>webhook-signature</code>), and retries failed
      deliveries.
    </p>
    ${
      creating
        ? html`<${Form} onSubmit=${create} submitLabel="Create endpoint" label="New webhook endpoint">
          <${Field} label="URL" type="url" value=${url} onInput=${setUrl} hint="Where events are POSTed (http or https)" />
          <${Field} label="Description" value=${description} onInput=${setDescription} hint="Optional: what it is for" />
          <${EventTypeChoices} chosen=${types} onChange=${setTypes} />
        </${Form}>`
        : null
    }
    ${
      created
        ? html`<${SecretOnce} secret=${created.secret} onDone=${() => setCreated(undefined)} />
          <p><a href=${`/webhooks/${created.id}`}>Open the new endpoint</a></p>`
        : null
    }
    <${ErrorMessage} error=${list.error} />
    ${list.loading && !list.data ? html`<p class="loading" aria-live="polite">Loading endpoints…</p>` : null}
    ${
      list.data
        ? html`<${Table}
            caption="Endpoints"
            rows=${list.data.webhooks}
            columns=${[
              {
                key: 'url',
                label: 'URL',
                render: (w) => html`<a href=${`/webhooks/${w.id}`} data-volatile>${w.url}</a>`,
              },
              { key: 'description', label: 'Description', render: (w) => w.description ?? '—' },
              { key: 'eventTypes', label: 'Event types', render: (w) => w.eventTypes.join(', ') },
              { key: 'enabled', label: 'State', render: (w) => html`<${EndpointState} webhook=${w} />` },
              { key: 'health', label: 'Success rate', render: (w) => percent(w.health.successRate) },
              {
                key: 'lastSuccessAt',
                label: 'Last success',
                render: (w) => html`<${Time} iso=${w.health.lastSuccessAt} />`,
              },
              { key: 'createdAt', label: 'Created', render: (w) => html`<${Time} iso=${w.createdAt} />` },
            ]}
            empty="No endpoints yet: create one to receive events."
          />
          <${Pager} nextCursor=${list.data.nextCursor} onNext=${setCursor} onFirst=${() => setCursor()} atFirst=${!cursor} />`
        : null
    }
  </${Page}>`;
}
