// Shared pieces of every page: titles, forms with labelled controls, tables with headers, errors, pagination,
// progress and charts. Pages compose these so the accessibility contract (docs/console.md) holds everywhere.
import { ApiError } from './api.js';
import { html, useCallback, useEffect, useRef, useState } from './html.js';

let nextId = 0;
/** A stable, unique id for a label/control pair. */
export function useId(prefix = 'f') {
  const ref = useRef();
  ref.current ??= `${prefix}-${++nextId}`;
  return ref.current;
}

/** A page: its heading (also the document title) and optional actions beside it. */
export function Page({ title, actions, children }) {
  useEffect(() => {
    document.title = `${title} · Quarry`;
  }, [title]);
  return html`<section class="page">
    <header class="page-head">
      <h1>${title}</h1>
      ${actions ? html`<div class="actions">${actions}</div>` : null}
    </header>
    ${children}
  </section>`;
}

/** Loads `load()` when `deps` change; `reload()` loads again. */
export function useResource(load, deps = []) {
  const [state, setState] = useState({ loading: true, data: undefined, error: undefined });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    const controller = new AbortController();
    setState((s) => ({ ...s, loading: true, error: undefined }));
    Promise.resolve(load(controller.signal)).then(
      (data) => live && setState({ loading: false, data, error: undefined }),
      (error) => live && error?.name !== 'AbortError' && setState({ loading: false, data: undefined, error }),
    );
    return () => {
      live = false;
      controller.abort();
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

/** What went wrong, as the service said it (code, message, fields); announced to screen readers. */
export function ErrorMessage({ error }) {
  if (!error) return null;
  const details = error instanceof ApiError ? error.details : [];
  return html`<div class="error" role="alert">
    <strong>${error.message}</strong>
    ${error instanceof ApiError ? html` <span class="code">(${error.code})</span>` : null}
    ${
      details.length
        ? html`<ul>
          ${details.map((d) => html`<li><code>${d.field}</code>: ${d.message}</li>`)}
        </ul>`
        : null
    }
  </div>`;
}

/** A labelled text input (`type` may be email, password, url, number, search…). */
export function Field({ label, value, onInput, type = 'text', hint, error, id, ...rest }) {
  const ownId = useId();
  const inputId = id ?? ownId;
  const hintId = hint ? `${inputId}-hint` : undefined;
  return html`<div class="field">
    <label for=${inputId}>${label}</label>
    <input
      id=${inputId}
      type=${type}
      value=${value ?? ''}
      onInput=${(e) => onInput?.(e.currentTarget.value)}
      aria-describedby=${hintId}
      aria-invalid=${error ? 'true' : undefined}
      ...${rest}
    />
    ${hint ? html`<small id=${hintId}>${hint}</small>` : null}
    ${error ? html`<small class="field-error">${error}</small>` : null}
  </div>`;
}

/** A labelled multi-line input. */
export function TextArea({ label, value, onInput, rows = 4, hint, id, ...rest }) {
  const ownId = useId();
  const inputId = id ?? ownId;
  return html`<div class="field">
    <label for=${inputId}>${label}</label>
    <textarea id=${inputId} rows=${rows} onInput=${(e) => onInput?.(e.currentTarget.value)} ...${rest}>${value ?? ''}</textarea>
    ${hint ? html`<small>${hint}</small>` : null}
  </div>`;
}

/** A labelled select; `options` are `[value, label]` pairs or plain values. */
export function Select({ label, value, onChange, options, id, ...rest }) {
  const ownId = useId();
  const inputId = id ?? ownId;
  return html`<div class="field">
    <label for=${inputId}>${label}</label>
    <select id=${inputId} value=${value ?? ''} onChange=${(e) => onChange?.(e.currentTarget.value)} ...${rest}>
      ${options.map((o) => {
        const [v, text] = Array.isArray(o) ? o : [o, o];
        return html`<option value=${v} selected=${v === value}>${text}</option>`;
      })}
    </select>
  </div>`;
}

/** A labelled checkbox. */
export function Checkbox({ label, checked, onChange, id, ...rest }) {
  const ownId = useId();
  const inputId = id ?? ownId;
  return html`<div class="check">
    <input id=${inputId} type="checkbox" checked=${checked} onChange=${(e) => onChange?.(e.currentTarget.checked)} ...${rest} />
    <label for=${inputId}>${label}</label>
  </div>`;
}

/** Runs an async action at most once at a time: `busy` meanwhile, its error (if any) kept to show. */
export function useAsyncAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState();
  const run = async (action) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}

/**
 * A form whose submit runs `onSubmit()` (async): the button is busy meanwhile and the service's error is shown.
 * Enter in any field submits, as in every form.
 */
export function Form({ onSubmit, submitLabel, children, label, class: className }) {
  const { busy, error, run } = useAsyncAction();
  const submit = (event) => {
    event.preventDefault();
    run(onSubmit);
  };
  return html`<form class=${`form ${className ?? ''}`} onSubmit=${submit} aria-label=${label} novalidate>
    ${children}
    <${ErrorMessage} error=${error} />
    <div class="form-actions"><button type="submit" disabled=${busy}>${submitLabel}</button></div>
  </form>`;
}

/**
 * A data table: `columns` are `{ key, label, render?(row) }`; with `selected`/`onSelect` each row gets a checkbox
 * named after `rowLabel(row)`.
 */
export function Table({ caption, columns, rows, rowKey = (r) => r.id, selected, onSelect, rowLabel, empty }) {
  if (!rows?.length) return html`<p class="empty">${empty ?? 'Nothing here yet.'}</p>`;
  const selectable = Boolean(onSelect);
  const allSelected = selectable && rows.every((r) => selected?.has(rowKey(r)));
  const toggleAll = () => onSelect(allSelected ? new Set() : new Set(rows.map(rowKey)));
  const toggle = (key) => {
    const next = new Set(selected);
    if (next.has(key)) next.delete(key);
    else next.add(key);
    onSelect(next);
  };
  return html`<div class="table-wrap">
    <table>
      ${caption ? html`<caption>${caption}</caption>` : null}
      <thead>
        <tr>
          ${
            selectable
              ? html`<th scope="col" class="select">
                <input type="checkbox" aria-label="Select all" checked=${allSelected} onChange=${toggleAll} />
              </th>`
              : null
          }
          ${columns.map((c) => html`<th scope="col">${c.label}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${rows.map((row) => {
          const key = rowKey(row);
          return html`<tr key=${key}>
            ${
              selectable
                ? html`<td class="select">
                  <input
                    type="checkbox"
                    aria-label=${`Select ${rowLabel ? rowLabel(row) : key}`}
                    checked=${selected?.has(key)}
                    onChange=${() => toggle(key)}
                  />
                </td>`
                : null
            }
            ${columns.map((c) => html`<td>${c.render ? c.render(row) : (row[c.key] ?? '')}</td>`)}
          </tr>`;
        })}
      </tbody>
    </table>
  </div>`;
}

/** "Next page" for cursor-paginated lists. */
export function Pager({ nextCursor, onNext, onFirst, atFirst }) {
  if (!nextCursor && atFirst) return null;
  return html`<nav class="pager" aria-label="Pages">
    ${atFirst ? null : html`<button type="button" onClick=${onFirst}>First page</button>`}
    ${nextCursor ? html`<button type="button" onClick=${() => onNext(nextCursor)}>Next page</button>` : null}
  </nav>`;
}

/** A progress bar (role progressbar, its value 0–100) with a visible label. */
export function ProgressBar({ value, label }) {
  const id = useId('progress');
  const shown = Math.max(0, Math.min(100, Math.round(value ?? 0)));
  return html`<div class="progress">
    <span id=${id}>${label}</span>
    <progress aria-labelledby=${id} max="100" value=${shown}>${shown}%</progress>
    <span class="progress-value">${shown}%</span>
  </div>`;
}

const pad = (n) => String(n).padStart(2, '0');

/**
 * A date and time in the reader's time zone, always as `YYYY-MM-DD HH:MM` (one width whatever the value, so tables
 * do not reflow); the full instant in its tooltip. Marked volatile so screenshots mask it.
 */
export function Time({ iso }) {
  if (!iso) return html`<span class="time">—</span>`;
  const d = new Date(iso);
  const text = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
  return html`<time class="time" datetime=${iso} title=${d.toString()} data-volatile>${text}</time>`;
}

/** A link to a page elsewhere, only for http(s) addresses (anything else, `javascript:` included, is shown as text). */
export function ExternalLink({ url }) {
  if (!/^https?:\/\//i.test(url ?? '')) return html`<span class="url">${url ?? '—'}</span>`;
  return html`<a class="url" href=${url} rel="noopener noreferrer" target="_blank">${url}</a>`;
}

/** A status word styled by value. */
export function Badge({ value }) {
  return html`<span class=${`badge badge-${String(value ?? '').toLowerCase()}`}>${value ?? '—'}</span>`;
}

/** A line chart (uPlot on a canvas): `x` are unix seconds, `series` are `{ label, values }`. */
export function Chart({ title, x, series, height = 220 }) {
  const ref = useRef();
  useEffect(() => {
    let plot;
    let live = true;
    import('/console/vendor/uplot.mjs').then(({ default: UPlot }) => {
      if (!live || !ref.current) return;
      const width = Math.max(320, ref.current.clientWidth || 640);
      const colors = ['#2563eb', '#16a34a', '#dc2626', '#9333ea', '#ea580c'];
      plot = new UPlot(
        {
          width,
          height,
          series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: colors[i % colors.length], width: 2 }))],
          axes: [{}, {}],
        },
        [x, ...series.map((s) => s.values)],
        ref.current,
      );
    });
    return () => {
      live = false;
      plot?.destroy();
    };
  }, [JSON.stringify({ x, series })]);
  return html`<figure class="chart">
    <figcaption>${title}</figcaption>
    <div ref=${ref} role="img" aria-label=${title}></div>
  </figure>`;
}

/** A button that runs an async action, busy meanwhile, showing the service's error beside it. */
export function ActionButton({ onClick, children, confirm: question, ...rest }) {
  const { busy, error, run } = useAsyncAction();
  const click = () => {
    if (question && !window.confirm(question)) return;
    run(onClick);
  };
  return html`<span class="action">
    <button type="button" onClick=${click} disabled=${busy} ...${rest}>${children}</button>
    <${ErrorMessage} error=${error} />
  </span>`;
}
