import { ApiError, get, patch, query as qs } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { setQuery } from '../lib/router.js';
import { ActionButton, Badge, ErrorMessage, Field, Page, Pager, Select, Table, Time, useResource } from '../lib/ui.js';

const number = (n) => (n === null || n === undefined ? '—' : n.toLocaleString('en-US'));
const percent = (rate) => (rate === null ? '—' : `${(rate * 100).toFixed(1)} %`);

/** Platform figures (GET /api/admin/stats) as tiles; figures that move by themselves (queue) are volatile. */
function Stats({ stats }) {
  const groups = [
    [
      'Accounts',
      [
        ['Users', stats.users.total],
        ['Active', stats.users.active],
        ['Suspended', stats.users.suspended],
        ['Admins', stats.users.admins],
        ['New in the last 7 days', stats.users.newLast7Days],
        ['Organizations', stats.organizations.total],
      ],
    ],
    [
      'Work',
      [
        ['Leads', stats.leads.total],
        ['Leads in the last 7 days', stats.leads.createdLast7Days],
        ['Scraping jobs', stats.jobs.total],
        ['Tasks queued', stats.queue.queued, true],
        ['Tasks running', stats.queue.active, true],
      ],
    ],
    [
      'Credits and webhooks',
      [
        ['Credits used, 30 days', stats.credits.usedLast30Days],
        ['Credits used, ever', stats.credits.usedTotal],
        ['Balances outstanding', stats.credits.outstandingBalance],
        ['Webhook attempts, 24 h', stats.webhooks.attemptsLast24Hours],
        ['Webhook failure rate, 24 h', percent(stats.webhooks.failureRate), false, true],
        ['Disabled endpoints', stats.webhooks.disabledEndpoints],
      ],
    ],
  ];
  return groups.map(
    ([title, tiles]) => html`<h2>${title}</h2>
      <ul class="grid admin-stats" aria-label=${title}>
        ${tiles.map(
          ([label, value, volatile, text]) => html`<li class="stat">
            <div class="muted">${label}</div>
            <div class="value" data-volatile=${volatile ? '' : undefined}>${text ? value : number(value)}</div>
          </li>`,
        )}
      </ul>`,
  );
}

/** Users with their state and usage; "Suspend" and "Reactivate" (PATCH /api/admin/users/{id}, audited). */
function Users({ session, query }) {
  const q = query.get('q') ?? '';
  const status = query.get('status') ?? '';
  const [search, setSearch] = useState(q);
  const [cursor, setCursor] = useState();
  const users = useResource(
    (signal) => get(`/api/admin/users${qs({ q, status, cursor, limit: 50 })}`, { signal }),
    [q, status, cursor],
  );
  const setStatus = (user, next) => async () => {
    await patch(`/api/admin/users/${encodeURIComponent(user.id)}`, { status: next });
    users.reload();
  };
  return html`<section aria-labelledby="users-heading">
    <h2 id="users-heading">Users</h2>
    <form
      class="toolbar"
      role="search"
      aria-label="Users"
      onSubmit=${(e) => {
        e.preventDefault();
        setCursor(undefined);
        setQuery({ q: search.trim() });
      }}
    >
      <${Field} label="Search users" type="search" value=${search} onInput=${setSearch} hint="Part of an email or name" />
      <${Select}
        label="Status"
        value=${status}
        options=${[['', 'Any status'], ['active', 'Active'], ['suspended', 'Suspended']]}
        onChange=${(v) => {
          setCursor(undefined);
          setQuery({ status: v });
        }}
      />
      <button type="submit">Search</button>
    </form>
    <${ErrorMessage} error=${users.error} />
    ${
      users.data
        ? html`<${Table}
            caption="Users, newest first"
            rows=${users.data.users}
            empty="No user matches."
            columns=${[
              { key: 'email', label: 'Email', render: (u) => html`<span data-volatile>${u.email}</span>` },
              { key: 'name', label: 'Name', render: (u) => u.name ?? '—' },
              { key: 'status', label: 'Status', render: (u) => html`<${Badge} value=${u.status} />` },
              { key: 'role', label: 'Role', render: (u) => (u.isAdmin ? 'Admin' : 'User') },
              { key: 'balance', label: 'Credits', render: (u) => number(u.balance) },
              { key: 'leads', label: 'Leads', render: (u) => number(u.usage.leads) },
              { key: 'lastActiveAt', label: 'Last active', render: (u) => html`<${Time} iso=${u.lastActiveAt} />` },
              { key: 'createdAt', label: 'Joined', render: (u) => html`<${Time} iso=${u.createdAt} />` },
              {
                key: 'actions',
                label: 'Actions',
                render: (u) =>
                  u.id === session.user.id
                    ? html`<span class="muted">You</span>`
                    : u.status === 'active'
                      ? html`<${ActionButton}
                          class="danger"
                          aria-label=${`Suspend ${u.email}`}
                          onClick=${setStatus(u, 'suspended')}
                          >Suspend</${ActionButton}
                        >`
                      : html`<${ActionButton}
                          class="secondary"
                          aria-label=${`Reactivate ${u.email}`}
                          onClick=${setStatus(u, 'active')}
                          >Reactivate</${ActionButton}
                        >`,
              },
            ]}
          />
          <${Pager}
            nextCursor=${users.data.nextCursor}
            onNext=${setCursor}
            onFirst=${() => setCursor(undefined)}
            atFirst=${!cursor}
          />`
        : null
    }
  </section>`;
}

/** The operators' page: platform figures and users (GET /api/admin/stats, /api/admin/users); 403 to anyone else. */
export default function Admin({ session, query }) {
  const stats = useResource((signal) => get('/api/admin/stats', { signal }), []);
  if (stats.error) {
    const refused = stats.error instanceof ApiError && stats.error.status === 403;
    return html`<${Page} title=${refused ? 'Admins only' : 'Admin'}>
      ${refused ? html`<p>This page is for the service's operators. Your account is not an admin.</p>` : null}
      <${ErrorMessage} error=${stats.error} />
    </${Page}>`;
  }
  return html`<${Page} title="Admin">
    ${stats.data ? html`<${Stats} stats=${stats.data} />` : html`<p class="loading" aria-live="polite">Loading…</p>`}
    ${stats.data ? html`<${Users} session=${session} query=${query} />` : null}
  </${Page}>`;
}
