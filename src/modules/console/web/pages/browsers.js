import { del, get, post, query as qs } from '../lib/api.js';
import { html, useEffect, useState } from '../lib/html.js';
import { navigate, setQuery } from '../lib/router.js';
import {
  ActionButton,
  Checkbox,
  ErrorMessage,
  Field,
  Form,
  Page,
  Pager,
  Select,
  Table,
  Time,
  useResource,
} from '../lib/ui.js';
import { isOpen, SessionState, SnapshotTable, sessionName } from './browsers/parts.js';

const STATUS_OPTIONS = [
  ['', 'Any state'],
  ['STARTING', 'Starting'],
  ['LIVE', 'Live'],
  ['SLEEPING', 'Sleeping'],
  ['RELEASED', 'Released'],
  ['EXPIRED', 'Expired'],
  ['FAILED', 'Failed'],
];

/** The "New session" form: POST /api/browser/sessions with a name (kept in its metadata) and its timeouts. */
function NewSession({ onCancel }) {
  const [name, setName] = useState('');
  const [minutes, setMinutes] = useState('');
  const [keepAlive, setKeepAlive] = useState(false);
  const create = async () => {
    const body = { keepAlive };
    if (name.trim()) body.metadata = { name: name.trim() };
    if (minutes.trim()) body.timeoutMs = Math.round(Number(minutes) * 60_000);
    const { session } = await post('/api/browser/sessions', body);
    navigate(`/browsers/${encodeURIComponent(session.id)}`);
  };
  return html`<${Form} onSubmit=${create} submitLabel="Start session" label="New browser session">
    <div class="form-row">
      <${Field} label="Name" value=${name} onInput=${setName} hint="Optional: shown in this list" maxlength="512" />
      <${Field}
        label="Timeout (minutes)"
        type="number"
        min="1"
        max="1440"
        value=${minutes}
        onInput=${setMinutes}
        hint="Optional: the session ends then (default from the service)"
      />
    </div>
    <${Checkbox} label="Keep alive (no idle timeout)" checked=${keepAlive} onChange=${setKeepAlive} />
    <div><button type="button" class="secondary" onClick=${onCancel}>Cancel</button></div>
  </${Form}>`;
}

/** Live and sleeping counts and this month's minutes (GET /api/browser/usage). */
function Usage({ usage }) {
  if (!usage) return null;
  const tiles = [
    ['Live sessions', usage.live],
    ['Sleeping sessions', usage.sleeping],
    ['Browser minutes this month', usage.minutes, true],
  ];
  return html`<ul class="grid browser-usage" aria-label="Usage">
    ${tiles.map(
      ([label, value, volatile]) => html`<li class="stat">
        <div class="muted">${label}</div>
        <div class="value" data-volatile=${volatile ? '' : undefined}>${value}</div>
      </li>`,
    )}
  </ul>`;
}

/** Cloud browser sessions and their state; start one, release one, wake a sleeping one from its snapshot. */
export default function Browsers({ query }) {
  const status = query.get('status') ?? '';
  const [cursor, setCursor] = useState();
  const [creating, setCreating] = useState(false);
  const sessions = useResource(
    (signal) => get(`/api/browser/sessions${qs({ status, cursor, limit: 50 })}`, { signal }),
    [status, cursor],
  );
  const snapshots = useResource((signal) => get('/api/browser/snapshots?limit=50', { signal }), []);
  const usage = useResource((signal) => get('/api/browser/usage', { signal }), []);
  const reload = () => {
    sessions.reload();
    snapshots.reload();
    usage.reload();
  };

  // A starting session turns LIVE (or FAILED) within seconds: look again until none is starting.
  const starting = sessions.data?.sessions.some((s) => s.status === 'STARTING');
  useEffect(() => {
    if (!starting) return;
    const timer = setTimeout(reload, 2000);
    return () => clearTimeout(timer);
  }, [starting, sessions.data]);

  const names = new Map(
    (sessions.data?.sessions ?? []).filter((s) => s.metadata?.name).map((s) => [s.id, s.metadata.name]),
  );

  return html`<${Page}
    title="Browsers"
    actions=${html`<button type="button" onClick=${() => setCreating(true)} aria-expanded=${creating}>New session</button>`}
  >
    <p class="muted">
      Cloud browsers: each session is its own Chromium, driven through the API, a CDP client or the live viewer.
    </p>
    ${creating ? html`<${NewSession} onCancel=${() => setCreating(false)} />` : null}
    <${Usage} usage=${usage.data} />
    <h2>Sessions</h2>
    <div class="toolbar">
      <${Select}
        label="State"
        value=${status}
        options=${STATUS_OPTIONS}
        onChange=${(v) => {
          setCursor(undefined);
          setQuery({ status: v });
        }}
      />
    </div>
    <${ErrorMessage} error=${sessions.error} />
    ${
      sessions.data
        ? html`<${Table}
            caption="Browser sessions, newest first"
            rows=${sessions.data.sessions}
            empty=${status ? 'No session in this state.' : 'No browser sessions yet: start one with "New session".'}
            columns=${[
              {
                key: 'name',
                label: 'Session',
                render: (s) =>
                  html`<a href=${`/browsers/${encodeURIComponent(s.id)}`} data-volatile=${s.metadata?.name ? undefined : ''}
                    >${sessionName(s)}</a
                  >`,
              },
              { key: 'status', label: 'State', render: (s) => html`<${SessionState} session=${s} />` },
              {
                key: 'viewport',
                label: 'Viewport',
                render: (s) => `${s.viewport.width} × ${s.viewport.height}`,
              },
              { key: 'createdAt', label: 'Started', render: (s) => html`<${Time} iso=${s.createdAt} />` },
              {
                key: 'expiresAt',
                label: 'Ends by',
                render: (s) => (isOpen(s) ? html`<${Time} iso=${s.expiresAt} />` : html`<${Time} iso=${s.endedAt} />`),
              },
              {
                key: 'actions',
                label: 'Actions',
                render: (s) =>
                  isOpen(s)
                    ? html`<${ActionButton}
                        class="secondary"
                        aria-label=${`Release ${sessionName(s)}`}
                        onClick=${async () => {
                          await del(`/api/browser/sessions/${encodeURIComponent(s.id)}`);
                          reload();
                        }}
                        >Release</${ActionButton}
                      >`
                    : null,
              },
            ]}
          />
          <${Pager}
            nextCursor=${sessions.data.nextCursor}
            onNext=${setCursor}
            onFirst=${() => setCursor(undefined)}
            atFirst=${!cursor}
          />
          ${
            sessions.data.sessions.some(isOpen)
              ? html`<div class="actions">
                <${ActionButton}
                  class="secondary"
                  confirm="Release every live and sleeping session?"
                  onClick=${async () => {
                    await post('/api/browser/sessions/release-all');
                    reload();
                  }}
                  >Release all</${ActionButton}
                >
              </div>`
              : null
          }`
        : null
    }
    <h2>Snapshots</h2>
    <p class="muted">A session put to sleep keeps its cookies, storage and tabs here and uses no browser until it wakes.</p>
    <${ErrorMessage} error=${snapshots.error} />
    ${
      snapshots.data
        ? html`<${SnapshotTable}
            caption="Snapshots of sleeping sessions"
            snapshots=${snapshots.data.snapshots}
            names=${names}
            onWake=${(session) => navigate(`/browsers/${encodeURIComponent(session.id)}`)}
            onChange=${reload}
          />`
        : null
    }
  </${Page}>`;
}
