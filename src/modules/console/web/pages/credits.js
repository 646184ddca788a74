import { count, dayToUnix, decimal } from '../lib/account-format.js';
import { WindowForm, windowOf } from '../lib/account-window.js';
import { get, post, query } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { ActionButton, Badge, Chart, ErrorMessage, Page, Pager, Table, Time, useResource } from '../lib/ui.js';

const money = (amount, currency) =>
  new Intl.NumberFormat('en-US', { style: 'currency', currency: currency.toUpperCase() }).format(amount / 100);

/**
 * Credits (GET /api/credits/balance, /api/credits/pricing, /api/analytics/credit-burn-rate): the balance, this
 * month's usage, the daily burn rate as a chart with the projection, the ledger, and the tiers on sale.
 */
export default function Credits({ query: params }) {
  const win = windowOf(params);
  const [cursor, setCursor] = useState();
  const balance = useResource(
    (signal) => get(`/api/credits/balance${query({ cursor, limit: 20 })}`, { signal }),
    [cursor],
  );
  const burn = useResource(
    (signal) => get(`/api/analytics/credit-burn-rate${query({ from: win.from, to: win.to })}`, { signal }),
    [win.from, win.to],
  );
  const pricing = useResource((signal) => get('/api/credits/pricing', { signal }), []);

  const buy = async (tier) => {
    const here = `${location.origin}/credits`;
    const { url } = await post('/api/credits/checkout', { tierId: tier.id, successUrl: here, cancelUrl: here });
    location.assign(url);
  };

  const b = balance.data;
  const r = burn.data;
  return html`<${Page} title="Credits">
    <p class="muted">Metered work (pages crawled, emails validated and sent, AI tokens) is paid for in credits.</p>
    <${ErrorMessage} error=${balance.error ?? burn.error} />
    ${(balance.loading && !b) || (burn.loading && !r) ? html`<p class="loading" aria-live="polite">Loading credits…</p>` : null}
    ${
      b && r
        ? html`<div class="grid stats">
            <div class="stat"><div class="label">Balance</div><div class="value">${count(b.balance)}</div></div>
            <div class="stat">
              <div class="label">Used this month</div>
              <div class="value">${count(b.usageThisMonth.credits)}</div>
            </div>
            <div class="stat">
              <div class="label">Average per day (${r.days.length} days)</div>
              <div class="value">${decimal(r.averagePerDay)}</div>
            </div>
            <div class="stat">
              <div class="label">Days left at that pace</div>
              <div class="value">${r.projection.daysLeft === null ? '—' : decimal(r.projection.daysLeft)}</div>
              ${r.projection.runsOutOn ? html`<small class="muted">Runs out on <span data-volatile>${r.projection.runsOutOn}</span></small>` : null}
            </div>
          </div>
          ${b.enabled ? null : html`<p class="notice">Metering is off on this service: work costs no credits.</p>`}
          ${b.balance < b.lowThreshold ? html`<p class="notice" role="status">The balance is below ${count(b.lowThreshold)} credits.</p>` : null}
                      <${Chart}
              title=${`Burn rate: credits used per day, ${r.from} to ${r.to}`}
              x=${r.days.map((d) => dayToUnix(d.date))}
              series=${[{ label: 'Credits used', values: r.days.map((d) => d.credits) }]}
            />
          <${WindowForm} key=${`${win.from}|${win.to}`} value=${win} hint="The burn rate's UTC days, both included; empty: the last 30 days." />
          <p class="muted">
            Trend: ${r.trendPerDay === null ? '—' : `${r.trendPerDay > 0 ? '+' : ''}${decimal(r.trendPerDay)}`} credits per day, per day
            (${r.trendPerDay > 0 ? 'rising' : r.trendPerDay < 0 ? 'falling' : 'flat'}); ${count(r.usedInWindow)} used in the window.
          </p>
          <${Table}
            caption="Usage this month by feature"
            rowKey=${(f) => f.feature}
            rows=${b.usageThisMonth.byFeature}
            columns=${[
              { key: 'feature', label: 'Feature', render: (f) => html`<code>${f.feature}</code>` },
              { key: 'units', label: 'Units', render: (f) => count(f.units) },
              { key: 'credits', label: 'Credits', render: (f) => count(f.credits) },
            ]}
            empty="No metered work this month."
          />
          <h2>Transactions</h2>
          <${Table}
            caption="Ledger, newest first"
            rows=${b.transactions}
            columns=${[
              { key: 'createdAt', label: 'Date', render: (t) => html`<${Time} iso=${t.createdAt} />` },
              { key: 'kind', label: 'Kind', render: (t) => html`<${Badge} value=${t.kind} />` },
              { key: 'feature', label: 'Feature', render: (t) => (t.feature ? html`<code>${t.feature}</code>` : '—') },
              { key: 'units', label: 'Units', render: (t) => count(t.units) },
              { key: 'amount', label: 'Amount', render: (t) => `${t.amount > 0 ? '+' : ''}${count(t.amount)}` },
              { key: 'balanceAfter', label: 'Balance after', render: (t) => count(t.balanceAfter) },
              { key: 'reason', label: 'Reason', render: (t) => t.reason ?? '—' },
            ]}
            empty="No transactions yet."
          />
          <${Pager} nextCursor=${b.nextCursor} onNext=${setCursor} onFirst=${() => setCursor()} atFirst=${!cursor} />`
        : null
    }
    ${
      pricing.data
        ? html`<h2>Buy credits</h2>
          ${
            pricing.data.tiers.length
              ? html`<${Table}
                  caption="Tiers on sale"
                  rows=${pricing.data.tiers}
                  columns=${[
                    { key: 'name', label: 'Tier' },
                    { key: 'credits', label: 'Credits', render: (t) => count(t.credits) },
                    { key: 'amount', label: 'Price', render: (t) => money(t.amount, t.currency) },
                    {
                      key: 'buy',
                      label: 'Actions',
                      render: (t) =>
                        html`<${ActionButton} onClick=${() => buy(t)}>${`Buy ${t.name}`}</${ActionButton}>`,
                    },
                  ]}
                />`
              : html`<p class="muted">No tiers are on sale on this service.</p>`
          }
          <${Table}
            caption="Price of each metered action"
            rowKey=${(p) => p.feature}
            rows=${pricing.data.prices}
            columns=${[
              { key: 'feature', label: 'Feature', render: (p) => html`<code>${p.feature}</code>` },
              { key: 'credits', label: 'Credits per unit', render: (p) => count(p.credits) },
              { key: 'unit', label: 'Unit' },
            ]}
          />`
        : html`<${ErrorMessage} error=${pricing.error} />`
    }
  </${Page}>`;
}
