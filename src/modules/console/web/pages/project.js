import { get, query } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { Badge, ErrorMessage, Page, Pager, Table, Time, useResource } from '../lib/ui.js';

/** One project (GET /api/projects/:id) and its sources (GET /api/sources?projectId=…). */
export default function Project({ params }) {
  const project = useResource((signal) => get(`/api/projects/${params.id}`, { signal }), [params.id]);
  const [cursor, setCursor] = useState();
  const sources = useResource(
    (signal) => get(`/api/sources${query({ projectId: params.id, cursor, limit: 50 })}`, { signal }),
    [params.id, cursor],
  );
  const p = project.data?.project;

  if (project.error) return html`<${Page} title="Project"><${ErrorMessage} error=${project.error} /></${Page}>`;
  if (!p) return html`<p class="loading" aria-live="polite">Loading…</p>`;

  return html`<${Page}
    title=${p.name}
    actions=${html`<a class="button-link" href=${`/sources/new${query({ projectId: p.id })}`}>New source</a>`}
  >
    <p><a href="/projects">All projects</a></p>
    <div class="panel">
      <dl class="facts">
        <dt>Description</dt>
        <dd>${p.description ?? '—'}</dd>
        <dt>Created</dt>
        <dd><${Time} iso=${p.createdAt} /></dd>
      </dl>
    </div>
    <h2>Sources</h2>
    <${ErrorMessage} error=${sources.error} />
    ${
      sources.data
        ? html`<${Table}
            caption="Sources of this project"
            rows=${sources.data.sources}
            columns=${[
              { key: 'name', label: 'Name', render: (s) => html`<a href=${`/sources/${s.id}`}>${s.name}</a>` },
              { key: 'url', label: 'URL', render: (s) => html`<span class="url" data-volatile>${s.url}</span>` },
              { key: 'scrapeType', label: 'Scrape type' },
              { key: 'status', label: 'Status', render: (s) => html`<${Badge} value=${s.status} />` },
              { key: 'lastRunAt', label: 'Last run', render: (s) => html`<${Time} iso=${s.lastRunAt} />` },
            ]}
            empty="No sources yet: add one with New source."
          />
          <${Pager} nextCursor=${sources.data.nextCursor} onNext=${setCursor} onFirst=${() => setCursor()} atFirst=${!cursor} />`
        : null
    }
  </${Page}>`;
}
