import { ApiError, del, get, patch, post } from '../lib/api.js';
import { html, useEffect, useRef, useState } from '../lib/html.js';
import { ActionButton, ErrorMessage, Page, Select, Table, Time, useResource } from '../lib/ui.js';
import { isOpen, isRunning, SessionState, SnapshotTable, sessionName } from './browsers/parts.js';

const id = (value) => encodeURIComponent(value);
const minutes = (ms) => `${Math.round(ms / 60_000)} min`;

/**
 * The live viewer: a live view of the session (POST …/live-views, a signed URL served by this service) in an iframe
 * on this origin. The view's token is its credential; it is revoked when the viewer goes away (DELETE …/live-views/{id}).
 */
function LiveViewer({ session }) {
  const [mode, setMode] = useState('view');
  const [view, setView] = useState();
  const [error, setError] = useState();
  useEffect(() => {
    let live = true;
    let made;
    setView(undefined);
    setError(undefined);
    post(`/api/browser/sessions/${id(session.id)}/live-views`, { mode }).then(
      (v) => {
        made = v;
        if (live) setView(v);
        else revoke(v);
      },
      (err) => live && setError(err),
    );
    const revoke = (v) => del(`/api/browser/sessions/${id(session.id)}/live-views/${id(v.id)}`).catch(() => {});
    return () => {
      live = false;
      if (made) revoke(made);
    };
  }, [session.id, mode]);
  // The URL is built on PUBLIC_URL or the address the request came in at: its path keeps the frame on this origin.
  const src = view ? new URL(view.url, location.href).pathname : undefined;
  const { width, height } = session.viewport;
  return html`<section class="panel browser-live" aria-labelledby="live-heading">
    <div class="page-head">
      <h2 id="live-heading">Live view</h2>
      <${Select}
        label="Mode"
        value=${mode}
        onChange=${setMode}
        options=${[['view', 'View only'], ['interact', 'Interact (mouse and keyboard)']]}
      />
    </div>
    <${ErrorMessage} error=${error} />
    ${
      src
        ? html`<iframe
            class="browser-frame"
            src=${src}
            title=${`Live view of ${sessionName(session)}`}
            style=${{ aspectRatio: `${width} / ${height}` }}
          ></iframe>`
        : error
          ? null
          : html`<p class="muted" aria-live="polite">Opening the live view…</p>`
    }
  </section>`;
}

/**
 * The session's open tabs (GET …/tabs): the active one is what the live view shows. Refreshed every 5 s, except while
 * `paused()`: listing tabs is an operation on the browser, and one sent while the session falls asleep wakes it again.
 */
function Tabs({ session, paused }) {
  const tabs = useResource((signal) => get(`/api/browser/sessions/${id(session.id)}/tabs`, { signal }), [session.id]);
  useEffect(() => {
    const timer = setInterval(() => paused() || tabs.reload(), 5000);
    return () => clearInterval(timer);
  }, [session.id]);
  return html`<section aria-labelledby="tabs-heading">
    <div class="page-head">
      <h2 id="tabs-heading">Tabs</h2>
      <button type="button" class="secondary" onClick=${tabs.reload}>Refresh tabs</button>
    </div>
    <${ErrorMessage} error=${tabs.error} />
    ${
      tabs.data
        ? html`<${Table}
            caption="Open tabs"
            rows=${tabs.data.tabs}
            empty="No open tab."
            columns=${[
              { key: 'title', label: 'Title', render: (t) => t.title || 'Untitled' },
              { key: 'url', label: 'URL', render: (t) => html`<code data-volatile>${t.url}</code>` },
              { key: 'active', label: 'Active', render: (t) => (t.active ? 'Active' : '') },
            ]}
          />`
        : null
    }
  </section>`;
}

/** A sleeping session's snapshot (GET /api/browser/snapshots/{id}) and its "Wake". */
function Snapshot({ session, onWake }) {
  const snapshot = useResource(
    (signal) => get(`/api/browser/snapshots/${id(session.snapshotId)}`, { signal }),
    [session.snapshotId],
  );
  return html`<section aria-labelledby="snapshot-heading">
    <h2 id="snapshot-heading">Snapshot</h2>
    <p class="muted">The session sleeps: its state is kept below and it uses no browser. Wake it to use it again.</p>
    <${ErrorMessage} error=${snapshot.error} />
    ${
      snapshot.data
        ? html`<${SnapshotTable}
            caption="Snapshot of this session"
            snapshots=${[snapshot.data.snapshot]}
            names=${new Map([[session.id, sessionName(session)]])}
            onWake=${onWake}
            onChange=${onWake}
          />
          <${Table}
            caption="Tabs the wake reopens"
            rows=${snapshot.data.snapshot.tabs}
            rowKey=${(t) => `${t.url}#${t.title}`}
            columns=${[
              { key: 'title', label: 'Title', render: (t) => t.title || 'Untitled' },
              { key: 'url', label: 'URL', render: (t) => html`<code data-volatile>${t.url}</code>` },
              { key: 'active', label: 'Active', render: (t) => (t.active ? 'Active' : '') },
            ]}
          />`
        : null
    }
  </section>`;
}

/** One cloud browser session: its state and settings, the live viewer, its tabs, and its snapshot while asleep. */
export default function Browser({ params }) {
  const session = useResource(
    (signal) => get(`/api/browser/sessions/${id(params.id)}`, { signal }).then((d) => d.session),
    [params.id],
  );
  const s = session.data;
  // From an action's click until the session as the action left it is shown, the tabs are not refreshed ('running',
  // then 'done' until the session's next data). A ref, not state: the refresh timer may fire before a re-render.
  const acting = useRef(undefined);
  useEffect(() => {
    if (acting.current === 'done') acting.current = undefined;
  }, [s]);
  // A starting session turns LIVE within seconds; a live one may end by itself (idle, timeout): look again.
  useEffect(() => {
    if (!s || !isOpen(s)) return;
    const timer = setTimeout(session.reload, s.status === 'STARTING' ? 1000 : 10_000);
    return () => clearTimeout(timer);
  }, [s]);

  if (session.error) {
    const missing = session.error instanceof ApiError && session.error.status === 404;
    return html`<${Page} title=${missing ? 'Session not found' : 'Browser session'}>
      <${ErrorMessage} error=${session.error} />
      <p><a href="/browsers">Back to browsers</a></p>
    </${Page}>`;
  }
  if (!s) return html`<p class="loading" aria-live="polite">Loading…</p>`;

  const act = (method, path, body) => async () => {
    acting.current = 'running';
    try {
      await method(`/api/browser/sessions/${id(s.id)}${path}`, body);
    } finally {
      acting.current = 'done';
      session.reload();
    }
  };

  return html`<${Page}
    title=${sessionName(s)}
    actions=${
      isOpen(s)
        ? html`
          ${s.status === 'LIVE' ? html`<${ActionButton} class="secondary" onClick=${act(post, '/sleep')}>Sleep</${ActionButton}>` : null}
          ${
            isRunning(s)
              ? html`<${ActionButton} class="secondary" onClick=${act(patch, '', { extendMs: 600_000 })}
                  >Extend by 10 minutes</${ActionButton}
                >`
              : null
          }
          <${ActionButton} class="danger" onClick=${act(del, '')}>Release session</${ActionButton}>`
        : null
    }
  >
    <p><a href="/browsers">All sessions</a></p>
    <div class="panel">
      <dl class="facts">
        <dt>State</dt>
        <dd><${SessionState} session=${s} /></dd>
        <dt>Id</dt>
        <dd><code data-volatile>${s.id}</code></dd>
        <dt>Started</dt>
        <dd><${Time} iso=${s.createdAt} /></dd>
        <dt>${isOpen(s) ? 'Ends by' : 'Ended'}</dt>
        <dd><${Time} iso=${isOpen(s) ? s.expiresAt : s.endedAt} /></dd>
        <dt>Viewport</dt>
        <dd>${s.viewport.width} × ${s.viewport.height}</dd>
        <dt>Timeouts</dt>
        <dd>
          ${minutes(s.timeoutMs)} in all; ${s.keepAlive ? 'kept alive when idle' : `${minutes(s.idleTimeoutMs)} idle`}
          ${s.autoSleepMs ? `; sleeps after ${minutes(s.autoSleepMs)} idle` : ''}
        </dd>
        <dt>Connected clients</dt>
        <dd><span data-volatile>${s.connectedClients ?? '—'}</span></dd>
        ${s.clientRef ? html`<dt>Client ref</dt><dd><code>${s.clientRef}</code></dd>` : null}
        ${s.profileId ? html`<dt>Profile</dt><dd><code data-volatile>${s.profileId}</code></dd>` : null}
        <dt>Recorded</dt>
        <dd>${s.record ? 'Yes' : 'No'}</dd>
      </dl>
    </div>
    ${isRunning(s) ? html`<${LiveViewer} session=${s} />` : null}
    ${s.status === 'LIVE' ? html`<${Tabs} session=${s} paused=${() => acting.current !== undefined} />` : null}
    ${
      s.status === 'SLEEPING' && s.snapshotId
        ? html`<${Snapshot}
            session=${s}
            onWake=${() => session.reload()}
          />`
        : null
    }
    ${isOpen(s) ? null : html`<p class="muted">This session has ended: it has no browser any more.</p>`}
  </${Page}>`;
}
