// Pieces shared by the cloud browser pages (/browsers, /browsers/:id): a session's name and state, and the
// snapshots table with its Wake button (docs/browser.md).
import { del, post } from '../../lib/api.js';
import { html } from '../../lib/html.js';
import { ActionButton, Badge, Table, Time } from '../../lib/ui.js';

/** States in which a session still holds (or can get back) a Chromium: it can be released. */
export const OPEN_STATUSES = ['STARTING', 'LIVE', 'SLEEPING'];
/** States in which a session runs now: it has tabs and a live view. */
export const RUNNING_STATUSES = ['STARTING', 'LIVE'];

export const isOpen = (session) => OPEN_STATUSES.includes(session.status);
export const isRunning = (session) => RUNNING_STATUSES.includes(session.status);

/** What the console calls a session: the `name` in its metadata (set by "New session"), else its id. */
export const sessionName = (session) => session.metadata?.name || `Session ${session.id}`;

/** A session's state as a badge, with the reason it ended when it has. */
export function SessionState({ session }) {
  return html`<span class="browser-state">
    <${Badge} value=${session.status} />
    ${session.endReason ? html` <span class="muted">${session.endReason}</span>` : null}
  </span>`;
}

/** A byte count as people read it. */
export function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** The tab a snapshot makes active when it wakes (or its first). */
export const activeTab = (snapshot) => snapshot.tabs.find((t) => t.active) ?? snapshot.tabs[0];

/**
 * Snapshots of sleeping sessions (GET /api/browser/snapshots or one session's): "Wake" makes the session LIVE again
 * (POST /api/browser/snapshots/{id}/wake), "Delete" ends it RELEASED.
 */
export function SnapshotTable({ snapshots, names, caption, onWake, onChange }) {
  const label = (s) => names?.get(s.sessionId) ?? `session ${s.sessionId}`;
  return html`<${Table}
    caption=${caption}
    rows=${snapshots}
    empty="No snapshots: a session put to sleep leaves one here."
    columns=${[
      {
        key: 'session',
        label: 'Session',
        render: (s) =>
          html`<a href=${`/browsers/${encodeURIComponent(s.sessionId)}`} data-volatile=${names?.has(s.sessionId) ? undefined : ''}
            >${label(s)}</a
          >`,
      },
      {
        key: 'tab',
        label: 'Active tab',
        render: (s) => {
          const tab = activeTab(s);
          return tab ? html`<span>${tab.title || 'Untitled'}</span>` : html`<span class="muted">No tabs</span>`;
        },
      },
      { key: 'tabs', label: 'Tabs', render: (s) => s.tabs.length },
      { key: 'cookies', label: 'Cookies', render: (s) => s.cookies },
      { key: 'size', label: 'Size', render: (s) => html`<span data-volatile>${bytes(s.sizeBytes)}</span>` },
      { key: 'createdAt', label: 'Taken', render: (s) => html`<${Time} iso=${s.createdAt} />` },
      { key: 'expiresAt', label: 'Kept until', render: (s) => html`<${Time} iso=${s.expiresAt} />` },
      {
        key: 'actions',
        label: 'Actions',
        render: (s) => html`<div class="actions">
          <${ActionButton}
            aria-label=${`Wake ${label(s)}`}
            onClick=${async () => {
              const { session } = await post(`/api/browser/snapshots/${encodeURIComponent(s.id)}/wake`);
              await onWake?.(session);
            }}
            >Wake</${ActionButton}
          >
          <${ActionButton}
            class="secondary"
            aria-label=${`Delete the snapshot of ${label(s)}`}
            confirm=${`Delete this snapshot? ${label(s)} can no longer wake and ends released.`}
            onClick=${async () => {
              await del(`/api/browser/snapshots/${encodeURIComponent(s.id)}`);
              await onChange?.();
            }}
            >Delete</${ActionButton}
          >
        </div>`,
      },
    ]}
  />`;
}
