// The window of UTC days (and optionally a project) of the analytics and credits pages: kept in the address
// (`?from=&to=&projectId=`), so a view can be linked and reloaded.
import { html, useState } from './html.js';
import { setQuery } from './router.js';
import { Field, Form, Select } from './ui.js';

/** The window the address names: `{ from, to, projectId }`, empty strings when unset. */
export const windowOf = (query) => ({
  from: query.get('from') ?? '',
  to: query.get('to') ?? '',
  projectId: query.get('projectId') ?? '',
});

/** "From", "To" (and "Project" when `projects` is given), applied to the address with "Apply". */
export function WindowForm({ value, projects, hint }) {
  const [draft, setDraft] = useState(value);
  return html`<${Form} onSubmit=${async () => setQuery(draft)} submitLabel="Apply" label="Window" class="inline-form">
    <div class="form-row">
      <${Field} label="From" type="date" value=${draft.from} onInput=${(v) => setDraft({ ...draft, from: v })} />
      <${Field} label="To" type="date" value=${draft.to} onInput=${(v) => setDraft({ ...draft, to: v })} />
      ${
        projects
          ? html`<${Select}
              label="Project"
              value=${draft.projectId}
              onChange=${(v) => setDraft({ ...draft, projectId: v })}
              options=${[['', 'All projects'], ...projects.map((p) => [p.id, p.name])]}
            />`
          : null
      }
    </div>
    ${hint ? html`<small class="muted">${hint}</small>` : null}
  </${Form}>`;
}
