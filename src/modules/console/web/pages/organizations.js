import { get, post } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { navigate } from '../lib/router.js';
import { ErrorMessage, Field, Form, Page, Table, Time, useResource } from '../lib/ui.js';

/** The user's organizations with their role in each (GET /api/orgs), and a new one (POST /api/orgs). */
export default function Organizations() {
  const list = useResource((signal) => get('/api/orgs', { signal }), []);
  const [creating, setCreating] = useState(false);
  const [name, setName] = useState('');

  const create = async () => {
    const { organization } = await post('/api/orgs', { name: name.trim() });
    navigate(`/organizations/${organization.id}`);
  };

  return html`<${Page}
    title="Organizations"
    actions=${html`<button type="button" onClick=${() => setCreating(!creating)} aria-expanded=${creating}>New organization</button>`}
  >
    <p class="muted">
      An organization is an account of its own that several people work in, each with a role. Programs act for it
      with organization API keys.
    </p>
    ${
      creating
        ? html`<${Form} onSubmit=${create} submitLabel="Create" label="New organization">
          <${Field} label="Name" value=${name} onInput=${setName} required />
        </${Form}>`
        : null
    }
    <${ErrorMessage} error=${list.error} />
    ${list.loading && !list.data ? html`<p class="loading" aria-live="polite">Loading organizations…</p>` : null}
    ${
      list.data
        ? html`<${Table}
            caption="Your organizations"
            rows=${list.data.organizations}
            columns=${[
              { key: 'name', label: 'Name', render: (o) => html`<a href=${`/organizations/${o.id}`}>${o.name}</a>` },
              { key: 'role', label: 'Your role', render: (o) => o.role },
              { key: 'createdAt', label: 'Created', render: (o) => html`<${Time} iso=${o.createdAt} />` },
            ]}
            empty="You are in no organization yet."
          />`
        : null
    }
  </${Page}>`;
}
