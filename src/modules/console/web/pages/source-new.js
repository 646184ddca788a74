import { get, post, query } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { navigate } from '../lib/router.js';
import { ErrorMessage, Field, Form, Page, Select, Table, useResource } from '../lib/ui.js';

/** The selector fields of a source made by hand (docs/selectors.md), in the order people fill them. */
const SELECTOR_FIELDS = [
  ['item', 'Item', "Each lead's container, e.g. .person"],
  ['firstName', 'First name'],
  ['lastName', 'Last name'],
  ['email', 'Email', 'e.g. a.email@href'],
  ['company', 'Company'],
  ['jobTitle', 'Job title'],
  ['nextPage', 'Next page', 'The link to the next page, e.g. a.next@href'],
];
const LABELS = Object.fromEntries(SELECTOR_FIELDS.map(([key, label]) => [key, label]));
const SCRAPE_TYPES = [
  ['STATIC', 'Static'],
  ['DYNAMIC', 'Dynamic (browser)'],
  ['API', 'API (JSON)'],
];
const WAYS = [
  ['catalogue', 'From the catalogue'],
  ['template', 'From a template'],
  ['hand', 'By hand'],
];

const emptyHand = () => ({
  name: '',
  url: '',
  scrapeType: 'STATIC',
  selectors: Object.fromEntries(SELECTOR_FIELDS.map(([key]) => [key, ''])),
});

/** The selectors given (empty boxes left out). */
const givenSelectors = (selectors) =>
  Object.fromEntries(
    Object.entries(selectors)
      .map(([key, value]) => [key, value.trim()])
      .filter(([, value]) => value),
  );

/**
 * A new source (POST /api/sources): from the catalogue (POST /api/sources/discover), from a source template
 * (GET /api/source-templates) or by hand, with a selector tester (POST /api/sources/preview-selectors). The source
 * is created as a DRAFT; its page activates it.
 */
export default function SourceNew({ query: search }) {
  const [way, setWay] = useState('hand');
  const [projectId, setProjectId] = useState(search.get('projectId') ?? '');
  const [hand, setHand] = useState(emptyHand);
  const projects = useResource((signal) => get(`/api/projects${query({ limit: 100 })}`, { signal }), []);

  const projectOptions = [['', 'No project'], ...(projects.data?.projects ?? []).map((p) => [p.id, p.name])];
  const created = (source) => navigate(`/sources/${source.id}`);
  const useSuggestion = (s) => {
    setHand({ ...emptyHand(), name: s.name, url: s.url, scrapeType: s.scrapeType });
    setWay('hand');
  };

  return html`<${Page} title="New source">
    <p class="muted">
      A source is a page to scrape for leads and the selectors that find them. It is saved as a draft; activate it on
      its page to run jobs.
    </p>
    <div class="way-switch" role="group" aria-label="How to make the source">
      ${WAYS.map(
        ([value, label]) =>
          html`<button type="button" class="secondary" aria-pressed=${way === value} onClick=${() => setWay(value)}>
            ${label}
          </button>`,
      )}
    </div>
    <${ErrorMessage} error=${projects.error} />
    ${
      projects.data
        ? html`<div class="form-row">
          <${Select} label="Project" value=${projectId} onChange=${setProjectId} options=${projectOptions} />
        </div>`
        : null
    }
    ${way === 'catalogue' ? html`<${FromCatalogue} onUse=${useSuggestion} />` : null}
    ${way === 'template' ? html`<${FromTemplate} projectId=${projectId} onCreated=${created} />` : null}
    ${way === 'hand' ? html`<${ByHand} value=${hand} onChange=${setHand} projectId=${projectId} onCreated=${created} />` : null}
  </${Page}>`;
}

/** By hand: name, URL, scrape type and selectors, with the tester. */
function ByHand({ value, onChange, projectId, onCreated }) {
  const [preview, setPreview] = useState();
  const [testing, setTesting] = useState(false);
  const [testError, setTestError] = useState();
  const set = (changes) => onChange({ ...value, ...changes });
  const setSelector = (key, text) => set({ selectors: { ...value.selectors, [key]: text } });

  const create = async () => {
    const { source } = await post('/api/sources', {
      name: value.name,
      url: value.url.trim(),
      scrapeType: value.scrapeType,
      selectors: givenSelectors(value.selectors),
      projectId: projectId || undefined,
    });
    onCreated(source);
  };

  const test = async () => {
    setTesting(true);
    setTestError(undefined);
    try {
      setPreview(
        await post('/api/sources/preview-selectors', {
          url: value.url.trim(),
          scrapeType: value.scrapeType === 'DYNAMIC' ? 'DYNAMIC' : 'STATIC',
          selectors: givenSelectors(value.selectors),
        }),
      );
    } catch (error) {
      setPreview(undefined);
      setTestError(error);
    } finally {
      setTesting(false);
    }
  };

  return html`<${Form} onSubmit=${create} submitLabel="Create source" label="Make a source by hand" class="source-form">
      <${Field} label="Name" value=${value.name} onInput=${(name) => set({ name })} required maxlength="200" />
      <${Field}
        label="URL"
        type="url"
        value=${value.url}
        onInput=${(url) => set({ url })}
        required
        placeholder="https://example.com/members"
      />
      <${Select}
        label="Scrape type"
        value=${value.scrapeType}
        onChange=${(scrapeType) => set({ scrapeType })}
        options=${SCRAPE_TYPES}
      />
      <fieldset class="selectors">
        <legend>Selectors</legend>
        <p class="muted">
          CSS selectors (XPath when they start with / or ./); end one with @name to take an attribute, as in
          a.email@href. Leave a box empty when the page does not have that field.
        </p>
        <div class="selector-grid">
          ${SELECTOR_FIELDS.map(
            ([key, label, hint]) =>
              html`<${Field}
                label=${label}
                value=${value.selectors[key]}
                onInput=${(text) => setSelector(key, text)}
                hint=${hint}
                spellcheck="false"
                autocomplete="off"
                class="mono"
              />`,
          )}
        </div>
      </fieldset>
      <div class="actions">
        <button type="button" class="secondary" onClick=${test} disabled=${testing}>Test selectors</button>
        ${testing ? html`<span class="muted" role="status">Testing…</span>` : null}
      </div>
      <${ErrorMessage} error=${testError} />
      ${value.scrapeType === 'API' ? html`<p class="muted">The tester reads HTML pages: it does not apply to API sources.</p>` : null}
    </${Form}>
    ${preview ? html`<${PreviewResult} preview=${preview} />` : null}`;
}

/** What each selector found on the page, and the first items as a job would save them. */
function PreviewResult({ preview }) {
  const keys = [...new Set(preview.items.flatMap((item) => Object.keys(item.fields)))];
  return html`<section class="panel preview" aria-labelledby="preview-heading">
    <h2 id="preview-heading">What the selectors find</h2>
    <p role="status">
      Found ${preview.itemCount} ${preview.itemCount === 1 ? 'item' : 'items'} on
      <span class="url" data-volatile>${preview.url}</span>.
    </p>
    <${Table}
      caption="Matches per selector"
      rowKey=${(s) => s.key}
      rows=${preview.selectors}
      columns=${[
        { key: 'key', label: 'Field', render: (s) => LABELS[s.key] ?? s.key },
        { key: 'selector', label: 'Selector', render: (s) => html`<code>${s.selector}</code>` },
        { key: 'matches', label: 'Matches', render: (s) => String(s.matches) },
        { key: 'samples', label: 'Examples', render: (s) => s.samples.join(', ') || '—' },
      ]}
    />
    ${
      preview.items.length
        ? html`<${Table}
          caption=${`The first ${preview.items.length} items`}
          rowKey=${(item) => JSON.stringify(item.fields)}
          rows=${preview.items}
          columns=${[
            ...keys.map((key) => ({ key, label: LABELS[key] ?? key, render: (item) => item.fields[key] ?? '' })),
            { key: 'visible', label: 'Visible', render: (item) => (item.visible ? 'Yes' : 'No (hidden on the page)') },
          ]}
        />`
        : null
    }
  </section>`;
}

/** From a source template: its URL variables filled in. */
function FromTemplate({ projectId, onCreated }) {
  const templates = useResource((signal) => get(`/api/source-templates${query({ limit: 100 })}`, { signal }), []);
  const [templateId, setTemplateId] = useState('');
  const [name, setName] = useState('');
  const [variables, setVariables] = useState({});
  const list = templates.data?.templates ?? [];
  const template = list.find((t) => t.id === templateId) ?? list[0];

  const create = async () => {
    const { source } = await post('/api/sources', {
      name: name.trim() || template.name,
      templateId: template.id,
      variables: Object.fromEntries(template.variables.map((v) => [v, variables[v] ?? ''])),
      projectId: projectId || undefined,
    });
    onCreated(source);
  };

  if (templates.error) return html`<${ErrorMessage} error=${templates.error} />`;
  if (!templates.data) return html`<p class="loading" aria-live="polite">Loading…</p>`;
  if (!template) return html`<p class="empty">No source templates.</p>`;
  return html`<${Form} onSubmit=${create} submitLabel="Create source" label="Make a source from a template">
    <${Select}
      label="Template"
      value=${template.id}
      onChange=${(id) => {
        setTemplateId(id);
        setVariables({});
      }}
      options=${list.map((t) => [t.id, t.name])}
    />
    ${template.description ? html`<p class="muted">${template.description}</p>` : null}
    <p class="muted">URL pattern: <code>${template.urlPattern}</code> (${template.scrapeType})</p>
    ${template.variables.map(
      (v) => html`<${Field}
        key=${`${template.id}-${v}`}
        label=${v}
        value=${variables[v] ?? ''}
        onInput=${(text) => setVariables({ ...variables, [v]: text })}
      />`,
    )}
    <${Field} label="Name" value=${name} onInput=${setName} hint=${`Optional: default "${template.name}"`} />
  </${Form}>`;
}

/** From the catalogue: suggestions for a query (the built-in catalogue, or the AI when configured). */
function FromCatalogue({ onUse }) {
  const [text, setText] = useState('');
  const [found, setFound] = useState();
  const search = async () => setFound(await post('/api/sources/discover', { query: text, count: 10 }));
  return html`<${Form} onSubmit=${search} submitLabel="Search" label="Search the catalogue">
      <${Field}
        label="What to find"
        type="search"
        value=${text}
        onInput=${setText}
        hint='For example "dentists in Austin, Texas"'
      />
    </${Form}>
    ${
      found
        ? html`<${Table}
          caption="Suggested sources"
          rowKey=${(s) => s.url}
          rows=${found.sources}
          columns=${[
            { key: 'name', label: 'Name' },
            { key: 'category', label: 'Category' },
            { key: 'scrapeType', label: 'Scrape type' },
            { key: 'url', label: 'URL', render: (s) => html`<span class="url">${s.url}</span>` },
            { key: 'reasoning', label: 'Why', render: (s) => html`<small>${s.reasoning}</small>` },
            {
              key: 'use',
              label: 'Use',
              render: (s) =>
                html`<button type="button" class="secondary" onClick=${() => onUse(s)} aria-label=${`Use ${s.name}`}>
                  Use
                </button>`,
            },
          ]}
          empty="Nothing in the catalogue matches: try other words, or make the source by hand."
        />`
        : null
    }`;
}
