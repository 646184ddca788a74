import { get, post, query } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { navigate } from '../lib/router.js';
import { ErrorMessage, Field, Form, Page, Pager, Table, TextArea, Time, useResource } from '../lib/ui.js';

/** Projects (GET/POST /api/projects): the list, newest first, and "New project" → its page. */
export default function Projects() {
  const [cursor, setCursor] = useState();
  const projects = useResource((signal) => get(`/api/projects${query({ cursor, limit: 50 })}`, { signal }), [cursor]);
  const [creating, setCreating] = useState(false);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');

  const create = async () => {
    const { project } = await post('/api/projects', {
      name,
      description: description.trim() ? description : undefined,
    });
    navigate(`/projects/${project.id}`);
  };

  return html`<${Page}
    title="Projects"
    actions=${html`<button type="button" onClick=${() => setCreating(!creating)} aria-expanded=${creating}>New project</button>`}
  >
    <p class="muted">A project groups the sources you scrape for one purpose, their jobs and the leads they find.</p>
    ${
      creating
        ? html`<${Form} onSubmit=${create} submitLabel="Create" label="Create a project">
          <${Field} label="Name" value=${name} onInput=${setName} required maxlength="200" />
          <${TextArea}
            label="Description"
            value=${description}
            onInput=${setDescription}
            rows=${3}
            hint="Optional: who you are looking for and why"
          />
        </${Form}>`
        : null
    }
    <${ErrorMessage} error=${projects.error} />
    ${
      projects.data
        ? html`<${Table}
            caption="Your projects"
            rows=${projects.data.projects}
            columns=${[
              { key: 'name', label: 'Name', render: (p) => html`<a href=${`/projects/${p.id}`}>${p.name}</a>` },
              { key: 'description', label: 'Description', render: (p) => p.description ?? '' },
              { key: 'createdAt', label: 'Created', render: (p) => html`<${Time} iso=${p.createdAt} />` },
            ]}
            empty="No projects yet: make one with New project."
          />
          <${Pager} nextCursor=${projects.data.nextCursor} onNext=${setCursor} onFirst=${() => setCursor()} atFirst=${!cursor} />`
        : null
    }
  </${Page}>`;
}
