import { del, get, patch, post } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { navigate } from '../lib/router.js';
import { ActionButton, ErrorMessage, Field, Form, Page, Select, Table, Time, useResource } from '../lib/ui.js';

const ROLES = ['owner', 'admin', 'member', 'viewer'];
const RANK = { viewer: 0, member: 1, admin: 2, owner: 3 };

/** A member's role: a select for those who may change it, the word otherwise. */
function RoleCell({ member, myRole, onChange }) {
  const [error, setError] = useState();
  const [busy, setBusy] = useState(false);
  // Admins change members and admins; owners anyone (docs/organizations.md "Roles").
  const may = myRole === 'owner' || (myRole === 'admin' && member.role !== 'owner');
  if (!may) return member.role;
  const choices = myRole === 'owner' ? ROLES : ROLES.filter((r) => r !== 'owner');
  const change = async (event) => {
    const role = event.currentTarget.value;
    setBusy(true);
    setError(undefined);
    try {
      await onChange(role);
    } catch (err) {
      setError(err);
      event.target.value = member.role;
    } finally {
      setBusy(false);
    }
  };
  return html`<span class="action">
    <select aria-label=${`Role of ${member.email}`} onChange=${change} disabled=${busy}>
      ${choices.map((r) => html`<option value=${r} selected=${r === member.role}>${r}</option>`)}
    </select>
    <${ErrorMessage} error=${error} />
  </span>`;
}

/**
 * An organization (GET /api/orgs/:id): its members with their roles, invitations by email, role changes, removal
 * (or leaving), and withdrawal of pending invitations.
 */
export default function Organization({ params, session }) {
  const { id } = params;
  const org = useResource((signal) => get(`/api/orgs/${id}`, { signal }), [id]);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState('member');
  const [sent, setSent] = useState();

  if (org.loading && !org.data) return html`<p class="loading" aria-live="polite">Loading the organization…</p>`;
  if (org.error)
    return html`<${Page} title="Organization">
      <${ErrorMessage} error=${org.error} />
      <p><a href="/organizations">Back to organizations</a></p>
    </${Page}>`;
  const o = org.data.organization;
  const manage = RANK[o.role] >= RANK.admin;
  const me = session?.user?.id;

  const invite = async () => {
    const { invitation } = await post(`/api/orgs/${id}/members`, { email: email.trim(), role });
    setSent(invitation);
    setEmail('');
    org.reload();
  };
  const changeRole = async (member, next) => {
    await patch(`/api/orgs/${id}/members/${member.id}`, { role: next });
    org.reload();
  };
  const remove = async (member) => {
    await del(`/api/orgs/${id}/members/${member.id}`);
    if (member.id === me) navigate('/organizations');
    else org.reload();
  };
  const withdraw = async (invitation) => {
    await del(`/api/orgs/${id}/invitations/${invitation.id}`);
    org.reload();
  };

  return html`<${Page} title=${o.name}>
    <p><a href="/organizations">All organizations</a></p>
    <div class="panel">
      <dl class="facts">
        <dt>Your role</dt>
        <dd>${o.role}</dd>
        <dt>Members</dt>
        <dd>${o.members.length}</dd>
        <dt>Created</dt>
        <dd><${Time} iso=${o.createdAt} /></dd>
        <dt>Id</dt>
        <dd><code data-volatile>${o.id}</code></dd>
      </dl>
    </div>
    <p class="muted">
      To act for this organization from a program, create an API key for it with your personal key
      (<code>POST /api/api-keys</code> with <code>orgId</code>).
    </p>

    <h2>Members</h2>
    <${Table}
      caption="Members and their roles"
      rows=${o.members}
      columns=${[
        { key: 'name', label: 'Name', render: (m) => m.name ?? '—' },
        { key: 'email', label: 'Email', render: (m) => html`<span data-volatile>${m.email}</span>` },
        {
          key: 'role',
          label: 'Role',
          render: (m) =>
            html`<${RoleCell} key=${`${m.id}-${m.role}`} member=${m} myRole=${o.role} onChange=${(r) => changeRole(m, r)} />`,
        },
        { key: 'joinedAt', label: 'Joined', render: (m) => html`<${Time} iso=${m.joinedAt} />` },
        {
          key: 'actions',
          label: 'Actions',
          render: (m) =>
            m.id === me
              ? html`<${ActionButton} class="secondary" onClick=${() => remove(m)}
                  confirm=${`Leave ${o.name}? Your keys of it stop at once.`}>Leave</${ActionButton}>`
              : manage && (o.role === 'owner' || m.role !== 'owner')
                ? html`<${ActionButton} class="danger" onClick=${() => remove(m)} aria-label=${`Remove ${m.email}`}
                    confirm=${`Remove ${m.email} from ${o.name}? Their keys of it stop at once.`}>Remove</${ActionButton}>`
                : null,
        },
      ]}
    />

    ${
      manage
        ? html`<h2>Invite someone</h2>
          <${Form} onSubmit=${invite} submitLabel="Invite" label="Invite by email">
            <div class="form-row">
              <${Field} label="Email" type="email" value=${email} onInput=${setEmail} autocomplete="off" required />
              <${Select}
                label="Role"
                value=${role}
                onChange=${setRole}
                options=${(o.role === 'owner' ? ROLES : ROLES.filter((r) => r !== 'owner')).map((r) => [r, r])}
              />
            </div>
            <small class="muted">The invitation is mailed with a token valid for 7 days.</small>
          </${Form}>
          ${
            sent
              ? html`<p class="notice" role="status">
                  Invitation sent to <span data-volatile>${sent.email}</span> as ${sent.role}.
                </p>`
              : null
          }`
        : null
    }

    <h2>Pending invitations</h2>
    <${Table}
      caption="Invitations not accepted yet"
      rows=${o.invitations}
      columns=${[
        { key: 'email', label: 'Email', render: (i) => html`<span data-volatile>${i.email}</span>` },
        { key: 'role', label: 'Role' },
        { key: 'createdAt', label: 'Sent', render: (i) => html`<${Time} iso=${i.createdAt} />` },
        { key: 'expiresAt', label: 'Expires', render: (i) => html`<${Time} iso=${i.expiresAt} />` },
        {
          key: 'actions',
          label: 'Actions',
          render: (i) =>
            manage && (o.role === 'owner' || i.role !== 'owner')
              ? html`<${ActionButton} class="secondary" onClick=${() => withdraw(i)} aria-label=${`Withdraw the invitation of ${i.email}`}>
                  Withdraw</${ActionButton}>`
              : null,
        },
      ]}
      empty="No pending invitations."
    />
  </${Page}>`;
}
