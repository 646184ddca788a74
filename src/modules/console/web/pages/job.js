import { del, get, post, query } from '../lib/api.js';
import { html, useEffect, useState } from '../lib/html.js';
import { ActionButton, Badge, ErrorMessage, Page, ProgressBar, Time, useResource } from '../lib/ui.js';

const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED']);

/**
 * Reads a Server-Sent Events stream with fetch (the session cookie goes along; EventSource would do too, but fetch
 * lets the page stop it and see errors) and calls `onEvent(event, data)` for each event.
 */
async function readEvents(path, onEvent, signal) {
  const res = await fetch(path, { headers: { accept: 'text/event-stream' }, credentials: 'same-origin', signal });
  if (!res.ok || !res.body) throw new Error(`The live progress stream answered HTTP ${res.status}`);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, '\n');
    let end = buffer.indexOf('\n\n');
    while (end !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length) onEvent(event, JSON.parse(data.join('\n')));
      end = buffer.indexOf('\n\n');
    }
  }
}

/**
 * One job (GET /api/jobs/:id): its status and a progress bar kept live by its event stream
 * (GET /api/jobs/:id/events) until it finishes, its counts, and a link to the leads it found.
 */
export default function Job({ params }) {
  const job = useResource((signal) => get(`/api/jobs/${params.id}`, { signal }), [params.id]);
  const [live, setLive] = useState();
  const [streamError, setStreamError] = useState();
  const [round, setRound] = useState(0);
  const j = job.data?.job;
  const source = useResource(
    (signal) => (j?.sourceId ? get(`/api/sources/${j.sourceId}`, { signal }) : undefined),
    [j?.sourceId],
  );
  const finished = j && TERMINAL.has(j.status);

  // Follow the stream while the job runs; when it ends, load the job again for the final figures.
  useEffect(() => {
    if (!j || finished) return;
    const controller = new AbortController();
    setStreamError(undefined);
    readEvents(
      `/api/jobs/${j.id}/events`,
      (event, data) => {
        if (event === 'job') setLive(data);
        if (event === 'deleted') setLive({ ...data, deleted: true });
      },
      controller.signal,
    ).then(
      // The stream ended (the job finished, or the connection dropped): reload, and follow again if still running.
      () => {
        if (controller.signal.aborted) return;
        job.reload();
        setTimeout(() => !controller.signal.aborted && setRound((r) => r + 1), 1000);
      },
      (error) => error?.name !== 'AbortError' && setStreamError(error),
    );
    return () => controller.abort();
  }, [j?.id, finished, round]);

  if (job.error) return html`<${Page} title="Job"><${ErrorMessage} error=${job.error} /></${Page}>`;
  if (!j) return html`<p class="loading" aria-live="polite">Loading…</p>`;

  // The stream's state wins while it is newer than the loaded job (it carries only the live figures).
  const state = live && !finished ? { ...j, ...live } : j;
  const progress = state.status === 'COMPLETED' ? 100 : state.progress;
  const actions = TERMINAL.has(state.status)
    ? state.status === 'FAILED'
      ? html`<${ActionButton}
          onClick=${async () => {
            await post(`/api/jobs/${j.id}/retry`);
            setLive(undefined);
            job.reload();
          }}
          >Retry job</${ActionButton}
        >`
      : null
    : html`<${ActionButton}
        onClick=${async () => {
          await del(`/api/jobs/${j.id}`);
          job.reload();
        }}
        confirm="Cancel this job? Its crawl stops within seconds; the leads found so far stay."
        >Cancel job</${ActionButton}
      >`;

  return html`<${Page} title=${j.name} actions=${actions}>
    <p>
      ${source.data?.source ? html`<a href=${`/sources/${j.sourceId}`}>${source.data.source.name}</a>` : html`<a href="/jobs">All jobs</a>`}
    </p>
    ${live?.deleted ? html`<p class="notice" role="status">This job was deleted.</p>` : null}
    <div class="panel job-progress">
      <p>Status: <${Badge} value=${state.status} /></p>
      <${ProgressBar} value=${progress} label="Progress" />
      ${state.error ? html`<p class="error" role="alert">${state.error}</p>` : null}
      <${ErrorMessage} error=${streamError} />
    </div>
    <div class="grid" aria-label="Figures" role="group">
      <div class="stat"><div>Leads found</div><div class="value">${state.leadsFound}</div></div>
      <div class="stat"><div>Pages visited</div><div class="value">${state.pagesVisited}</div></div>
      <div class="stat"><div>Pages failed</div><div class="value">${j.pagesFailed}</div></div>
      <div class="stat"><div>Attempts</div><div class="value">${j.attempts}</div></div>
    </div>
    <p><a href=${`/leads${query({ jobId: j.id })}`}>Leads found by this job</a></p>
    <div class="panel">
      <dl class="facts">
        <dt>Trigger</dt>
        <dd>${j.trigger}</dd>
        <dt>Created</dt>
        <dd><${Time} iso=${j.createdAt} /></dd>
        <dt>Started</dt>
        <dd><${Time} iso=${j.startedAt} /></dd>
        <dt>Finished</dt>
        <dd><${Time} iso=${j.finishedAt} /></dd>
      </dl>
    </div>
  </${Page}>`;
}
