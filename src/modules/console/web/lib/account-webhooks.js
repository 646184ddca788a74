// Webhook pieces shared by the endpoints list and an endpoint's page.
import { get } from './api.js';
import { html } from './html.js';
import { ErrorMessage, useResource } from './ui.js';

/** The event types as a fieldset of checkboxes (a set of chosen values). */
export function EventTypeChoices({ chosen, onChange, legend = 'Event types' }) {
  // The service's own list (GET /api/webhooks/event-types), so a new event type needs no change here.
  const types = useResource((signal) => get('/api/webhooks/event-types', { signal }), []);
  const toggle = (type) => {
    const next = new Set(chosen);
    if (next.has(type)) next.delete(type);
    else next.add(type);
    onChange(next);
  };
  return html`<fieldset class="choices">
    <legend>${legend}</legend>
    <${ErrorMessage} error=${types.error} />
    ${(types.data?.eventTypes ?? []).map(
      (type) => html`<label class="choice">
        <input type="checkbox" name="eventTypes" value=${type} checked=${chosen.has(type)} onChange=${() => toggle(type)} />
        <code>${type}</code>
      </label>`,
    )}
  </fieldset>`;
}

/** "Enabled", or "Disabled" with the reason. */
export function EndpointState({ webhook }) {
  return webhook.enabled
    ? html`<span class="badge badge-active">Enabled</span>`
    : html`<span class="badge badge-failed" title=${webhook.disabledReason ?? ''}>Disabled</span>`;
}

/** The signing secret, shown once after creating an endpoint or rotating its secret. */
export function SecretOnce({ secret, onDone, rotated = false }) {
  return html`<div class="notice" role="status">
    <p>
      <strong>Copy the signing secret now: it is shown only once.</strong>
      ${rotated ? ' For 24 hours deliveries are signed with the previous secret too.' : null}
    </p>
    <p><code class="secret" data-volatile aria-label="Signing secret">${secret}</code></p>
    <div class="actions">
      <button type="button" onClick=${() => navigator.clipboard?.writeText(secret)}>Copy secret</button>
      <button type="button" class="secondary" onClick=${onDone}>Done</button>
    </div>
  </div>`;
}
