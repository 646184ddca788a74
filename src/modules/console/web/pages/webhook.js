import { percent } from '../lib/account-format.js';
import { EndpointState, EventTypeChoices, SecretOnce } from '../lib/account-webhooks.js';
import { del, get, patch, post, query } from '../lib/api.js';
import { html, useEffect, useState } from '../lib/html.js';
import { navigate } from '../lib/router.js';
import { ActionButton, Badge, ErrorMessage, Form, Page, Pager, Select, Table, Time, useResource } from '../lib/ui.js';

/** The endpoint `id` (GET /api/webhooks/:id), or null when the caller has none with this id (404). */
async function findEndpoint(id, signal) {
  try {
    return (await get(`/api/webhooks/${encodeURIComponent(id)}`, { signal })).webhook;
  } catch (err) {
    if (err.status === 404) return null;
    throw err;
  }
}

/** The last attempt of a delivery, in words: "200 in 12 ms", "connection refused", or "not tried yet". */
function lastAnswer(delivery) {
  const last = delivery.attempts.at(-1);
  if (!last) return 'Not tried yet';
  if (last.statusCode !== null) return `HTTP ${last.statusCode} in ${last.latencyMs} ms`;
  return last.error ?? 'No answer';
}

/** The attempts of a delivery, listed when opened (closed, nothing of them is rendered). */
function Attempts({ delivery }) {
  const [open, setOpen] = useState(false);
  const n = delivery.attempts.length;
  if (!n) return html`<span class="muted">None yet</span>`;
  return html`<details open=${open} onToggle=${(e) => setOpen(e.currentTarget.open)}>
    <summary>${n} ${n === 1 ? 'attempt' : 'attempts'}</summary>
    ${
      open
        ? html`<ol class="attempts">
          ${delivery.attempts.map(
            (a) => html`<li>
              <${Time} iso=${a.at} />: ${a.success ? 'delivered' : 'failed'},
              <span data-volatile>${a.statusCode !== null ? `HTTP ${a.statusCode}` : (a.error ?? 'no answer')}, ${a.latencyMs} ms</span>
              ${a.nextRetryAt ? html`; next try <${Time} iso=${a.nextRetryAt} />` : null}
              ${a.responseBody ? html`<pre data-volatile>${a.responseBody}</pre>` : null}
            </li>`,
          )}
        </ol>`
        : null
    }
  </details>`;
}

/**
 * One endpoint (/webhooks/:id): its settings and health, its deliveries with their attempts (GET
 * /api/webhooks/:id/deliveries), "Replay" of a delivery, a test event, enabling, secret rotation and deletion.
 */
export default function Webhook({ params }) {
  const { id } = params;
  const endpoint = useResource((signal) => findEndpoint(id, signal), [id]);
  const [status, setStatus] = useState('');
  const [cursor, setCursor] = useState();
  const deliveries = useResource(
    (signal) => get(`/api/webhooks/${id}/deliveries${query({ status, cursor, limit: 50 })}`, { signal }),
    [id, status, cursor],
  );
  const [secret, setSecret] = useState();
  const [editing, setEditing] = useState(false);
  const [types, setTypes] = useState(new Set());
  const [notice, setNotice] = useState();

  // Pending deliveries change as the dispatcher sends them: follow them until none is pending.
  const pending = deliveries.data?.deliveries.some((d) => d.status === 'pending');
  useEffect(() => {
    if (!pending) return;
    const timer = setTimeout(() => {
      deliveries.reload();
      endpoint.reload();
    }, 1000);
    return () => clearTimeout(timer);
  }, [pending, deliveries.data]);

  const webhook = endpoint.data;
  const refresh = () => {
    endpoint.reload();
    deliveries.reload();
  };
  const sendTest = async () => {
    await post(`/api/webhooks/${id}/test`);
    setNotice('A webhook.test event was queued: follow it in the deliveries.');
    setCursor();
    deliveries.reload();
  };
  const replay = async (delivery) => {
    await post(`/api/webhooks/deliveries/${delivery.id}/replay`);
    setNotice(`The ${delivery.eventType} delivery is being sent again, with the same webhook-id.`);
    deliveries.reload();
  };
  const setEnabled = async (enabled) => {
    await patch(`/api/webhooks/${id}`, { enabled });
    refresh();
  };
  const rotate = async () => {
    const { webhook: rotated } = await patch(`/api/webhooks/${id}`, { rotateSecret: true });
    setSecret(rotated.secret);
    endpoint.reload();
  };
  const remove = async () => {
    await del(`/api/webhooks/${id}`);
    navigate('/webhooks');
  };
  const saveTypes = async () => {
    await patch(`/api/webhooks/${id}`, { eventTypes: [...types] });
    setEditing(false);
    endpoint.reload();
  };

  if (endpoint.loading && !webhook) return html`<p class="loading" aria-live="polite">Loading the endpoint…</p>`;
  if (endpoint.error)
    return html`<${Page} title="Webhook endpoint"><${ErrorMessage} error=${endpoint.error} /></${Page}>`;
  if (!webhook)
    return html`<${Page} title="Webhook endpoint not found">
      <p>No endpoint of yours has this id. <a href="/webhooks">Back to webhooks</a>.</p>
    </${Page}>`;

  return html`<${Page}
    title="Webhook endpoint"
    actions=${html`
      <${ActionButton} onClick=${sendTest} disabled=${!webhook.enabled}>Send test event</${ActionButton}>
      ${
        webhook.enabled
          ? html`<${ActionButton} class="secondary" onClick=${() => setEnabled(false)}
              confirm="Disable this endpoint? Its pending deliveries fail.">Disable</${ActionButton}>`
          : html`<${ActionButton} class="secondary" onClick=${() => setEnabled(true)}>Enable</${ActionButton}>`
      }
      <${ActionButton} class="secondary" onClick=${rotate}
        confirm="Rotate the signing secret? The previous one keeps signing for 24 hours.">Rotate secret</${ActionButton}>
      <${ActionButton} class="danger" onClick=${remove}
        confirm="Delete this endpoint with its deliveries?">Delete</${ActionButton}>
    `}
  >
    <p><a href="/webhooks">All endpoints</a></p>
    ${secret ? html`<${SecretOnce} secret=${secret} rotated onDone=${() => setSecret(undefined)} />` : null}
    ${notice ? html`<p class="notice" role="status">${notice}</p>` : null}
    <div class="panel">
      <dl class="facts">
        <dt>URL</dt>
        <dd><code data-volatile>${webhook.url}</code></dd>
        <dt>Description</dt>
        <dd>${webhook.description ?? '—'}</dd>
        <dt>Event types</dt>
        <dd>
          ${webhook.eventTypes.join(', ')}
          ${' '}<button type="button" class="secondary small" aria-expanded=${editing}
            onClick=${() => {
              setTypes(new Set(webhook.eventTypes));
              setEditing(!editing);
            }}>Change event types</button>
        </dd>
        <dt>State</dt>
        <dd><${EndpointState} webhook=${webhook} />${webhook.disabledReason ? ` ${webhook.disabledReason}` : ''}</dd>
        <dt>Success rate</dt>
        <dd><span data-volatile>${percent(webhook.health.successRate)} of the last ${webhook.health.recentAttempts} attempts</span></dd>
        <dt>Last success</dt>
        <dd><${Time} iso=${webhook.health.lastSuccessAt} /></dd>
        <dt>Last failure</dt>
        <dd>
          <${Time} iso=${webhook.health.lastFailureAt} />
          ${webhook.health.lastFailureReason ? html` <span data-volatile>${webhook.health.lastFailureReason}</span>` : null}
        </dd>
        ${
          webhook.previousSecretExpiresAt
            ? html`<dt>Previous secret signs until</dt><dd><${Time} iso=${webhook.previousSecretExpiresAt} /></dd>`
            : null
        }
        <dt>Created</dt>
        <dd><${Time} iso=${webhook.createdAt} /></dd>
        <dt>Id</dt>
        <dd><code data-volatile>${webhook.id}</code></dd>
      </dl>
    </div>
    ${
      editing
        ? html`<${Form} onSubmit=${saveTypes} submitLabel="Save event types" label="Event types of this endpoint">
          <${EventTypeChoices} chosen=${types} onChange=${setTypes} />
        </${Form}>`
        : null
    }
    <h2>Deliveries</h2>
    <div class="toolbar">
      <${Select}
        label="Status"
        value=${status}
        onChange=${(v) => {
          setStatus(v);
          setCursor();
        }}
        options=${[['', 'All'], ['pending', 'Pending'], ['succeeded', 'Succeeded'], ['failed', 'Failed']]}
      />
      <button type="button" class="secondary" onClick=${refresh}>Refresh</button>
    </div>
    <${ErrorMessage} error=${deliveries.error} />
    ${deliveries.loading && !deliveries.data ? html`<p class="loading" aria-live="polite">Loading deliveries…</p>` : null}
    ${
      deliveries.data
        ? html`<${Table}
            caption="Deliveries, newest first"
            rows=${deliveries.data.deliveries}
            columns=${[
              { key: 'eventType', label: 'Event type', render: (d) => html`<code>${d.eventType}</code>` },
              { key: 'status', label: 'Status', render: (d) => html`<${Badge} value=${d.status} />` },
              { key: 'answer', label: 'Last answer', render: (d) => html`<span data-volatile>${lastAnswer(d)}</span>` },
              { key: 'attempts', label: 'Attempts', render: (d) => html`<${Attempts} delivery=${d} />` },
              { key: 'createdAt', label: 'Created', render: (d) => html`<${Time} iso=${d.createdAt} />` },
              { key: 'eventId', label: 'Webhook id', render: (d) => html`<code data-volatile>${d.eventId}</code>` },
              {
                key: 'actions',
                label: 'Actions',
                render: (d) =>
                  html`<${ActionButton} class="secondary" onClick=${() => replay(d)} disabled=${!webhook.enabled}
                    title=${`Send the ${d.eventType} delivery again`}>Replay</${ActionButton}>`,
              },
            ]}
            empty="No deliveries yet: send a test event, or wait for one of the chosen events."
          />
          <${Pager}
            nextCursor=${deliveries.data.nextCursor}
            onNext=${setCursor}
            onFirst=${() => setCursor()}
            atFirst=${!cursor}
          />`
        : null
    }
  </${Page}>`;
}
