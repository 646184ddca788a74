// Deal campaigns (GET/POST /api/campaigns): who to sell to, each ranking accounts by the matching rules it weighs.
import { get, post, query as qs } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { navigate } from '../lib/router.js';
import { Badge, ErrorMessage, Field, Form, Page, Pager, Table, TextArea, Time, useResource } from '../lib/ui.js';

export default function Campaigns() {
  const [cursor, setCursor] = useState();
  const list = useResource((signal) => get(`/api/campaigns${qs({ cursor, limit: 50 })}`, { signal }), [cursor]);
  const [creating, setCreating] = useState(false);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');

  const create = async () => {
    const { campaign } = await post('/api/campaigns', { name, description: description.trim() || null });
    navigate(`/campaigns/${campaign.id}`);
  };

  return html`<${Page}
    title="Deal campaigns"
    actions=${html`<button type="button" onClick=${() => setCreating((c) => !c)} aria-expanded=${creating}>New campaign</button>`}
  >
    <p class="muted">
      A deal campaign names the accounts you want to sell to: its matching rules, weighted, rank the accounts your leads
      belong to. Mail sequences live under <a href="/outreach">Outreach</a>.
    </p>
    ${
      creating
        ? html`<${Form} onSubmit=${create} submitLabel="Create" label="New deal campaign">
            <${Field} label="Name" value=${name} onInput=${setName} required />
            <${TextArea} label="Description" value=${description} onInput=${setDescription} rows=${2} />
          </${Form}>`
        : null
    }
    <${ErrorMessage} error=${list.error} />
    ${
      list.data
        ? html`<${Table}
            caption="Your deal campaigns"
            rows=${list.data.campaigns}
            columns=${[
              { key: 'name', label: 'Name', render: (c) => html`<a href=${`/campaigns/${c.id}`}>${c.name}</a>` },
              { key: 'status', label: 'Status', render: (c) => html`<${Badge} value=${c.status} />` },
              {
                key: 'rules',
                label: 'Rules',
                render: (c) => (c.rules.length ? c.rules.map((r) => `${r.name} ×${r.weight}`).join(', ') : '—'),
              },
              { key: 'sources', label: 'Sources', render: (c) => (c.sourceIds.length ? c.sourceIds.length : 'All') },
              { key: 'createdAt', label: 'Created', render: (c) => html`<${Time} iso=${c.createdAt} />` },
            ]}
            empty="No deal campaign yet."
          />
          <${Pager} nextCursor=${list.data.nextCursor} onNext=${setCursor} onFirst=${() => setCursor()} atFirst=${!cursor} />`
        : null
    }
  </${Page}>`;
}
