// One deal campaign (GET /api/campaigns/{id}): its target and weighted rules, and the accounts it ranks
// (GET /api/campaigns/{id}/ranked-accounts: best fit first, with the reasons per rule).
import { ApiError, get, query as qs } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { Badge, ErrorMessage, Field, Page, Pager, Table, useResource } from '../lib/ui.js';

export default function Campaign({ params }) {
  const id = encodeURIComponent(params.id);
  const campaign = useResource((signal) => get(`/api/campaigns/${id}`, { signal }), [id]);
  if (campaign.error)
    return html`<${Page} title="Deal campaign">
      <${ErrorMessage} error=${campaign.error} />
      <p><a href="/campaigns">Back to deal campaigns</a></p>
    </${Page}>`;
  if (!campaign.data) return html`<p class="loading" aria-live="polite">Loading the campaign…</p>`;
  const c = campaign.data.campaign;
  const target = Object.entries(c.target).filter(([, v]) => (Array.isArray(v) ? v.length : v));
  return html`<${Page} title=${c.name} actions=${html`<a class="button-link" href="/campaigns">All deal campaigns</a>`}>
    <section class="panel" aria-labelledby="campaign-about">
      <h2 id="campaign-about">About</h2>
      <dl class="facts">
        <dt>Status</dt><dd><${Badge} value=${c.status} /></dd>
        ${c.description ? html`<dt>Description</dt><dd>${c.description}</dd>` : null}
        ${target.map(
          ([k, v]) =>
            html`<dt>${k[0].toUpperCase() + k.slice(1)}</dt><dd>${Array.isArray(v) ? v.join(', ') : `${v.min ?? '…'}–${v.max ?? '…'} employees`}</dd>`,
        )}
        <dt>Sources</dt><dd>${c.sourceIds.length ? `${c.sourceIds.length} source(s)` : 'All your leads'}</dd>
        <dt>Rules</dt>
        <dd>${c.rules.length ? c.rules.map((r) => `${r.name} (${r.type}, weight ${r.weight})`).join('; ') : html`<span class="muted">none: <a href="/qualification">write rules under Qualification</a>, then add them to the campaign through the API</span>`}</dd>
      </dl>
    </section>
    ${c.rules.length ? html`<${RankedAccounts} id=${id} />` : null}
  </${Page}>`;
}

function RankedAccounts({ id }) {
  const [cursor, setCursor] = useState();
  const [minScore, setMinScore] = useState('0');
  const [applied, setApplied] = useState(0);
  const ranked = useResource(
    (signal) => get(`/api/campaigns/${id}/ranked-accounts${qs({ cursor, minScore: applied, limit: 50 })}`, { signal }),
    [id, cursor, applied],
  );
  const noRules = ranked.error instanceof ApiError && ranked.error.code === 'NO_RULES';
  return html`<section aria-labelledby="ranked-title">
    <h2 id="ranked-title">Ranked accounts</h2>
    <form
      class="toolbar"
      aria-label="Filter ranked accounts"
      onSubmit=${(e) => {
        e.preventDefault();
        setCursor(undefined);
        setApplied(Math.max(0, Math.min(100, Number(minScore) || 0)));
      }}
    >
      <${Field} label="Minimum fit score" type="number" min="0" max="100" value=${minScore} onInput=${setMinScore} />
      <button type="submit">Apply</button>
    </form>
    ${noRules ? html`<p class="muted">This campaign has no rules yet.</p>` : html`<${ErrorMessage} error=${ranked.error} />`}
    ${
      ranked.data?.rulesWithoutResults.length
        ? html`<p class="notice">Rules never run (they count 0): ${ranked.data.rulesWithoutResults.join(', ')}. Run them under <a href="/qualification">Qualification</a>.</p>`
        : null
    }
    ${
      ranked.data
        ? html`<${Table}
            caption="Accounts, best fit first"
            rowKey=${(a) => a.accountId}
            rows=${ranked.data.accounts}
            columns=${[
              {
                key: 'name',
                label: 'Account',
                render: (a) =>
                  html`<strong>${a.name}</strong>${a.domain ? html` <span class="muted">${a.domain}</span>` : null}`,
              },
              {
                key: 'fitScore',
                label: 'Fit score',
                render: (a) =>
                  html`<span class="score-bar"><meter min="0" max="100" value=${a.fitScore} aria-label=${`Fit score of ${a.name}`}></meter>${a.fitScore}</span>`,
              },
              { key: 'leadCount', label: 'Leads' },
              { key: 'matchedLeads', label: 'Matched leads' },
              {
                key: 'reasons',
                label: 'Why',
                render: (a) =>
                  a.reasons
                    .map((r) => `${r.ruleName}: ${r.bestScore ?? 'no result'}${r.reasoning ? ` (${r.reasoning})` : ''}`)
                    .join('; '),
              },
            ]}
            empty="No account reaches this score."
          />
          <${Pager} nextCursor=${ranked.data.nextCursor} onNext=${setCursor} onFirst=${() => setCursor()} atFirst=${!cursor} />`
        : null
    }
  </section>`;
}
