import { get, post, query } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { CategoryChart } from '../lib/outreach-chart.js';
import { ActionButton, Badge, ErrorMessage, Field, Page, Table, Time, useResource } from '../lib/ui.js';
import { describeWindow, OutreachNav, percent } from './outreach/subnav.js';

const ENROLMENT_STATES = ['ACTIVE', 'COMPLETED', 'REPLIED', 'BOUNCED', 'UNSUBSCRIBED', 'STOPPED'];

/**
 * One outreach campaign (GET /api/outreach/campaigns/:id): its steps, schedule and mailboxes, start or pause,
 * enrolled leads by state and enrolment of more (POST …/leads), analytics per step and per mailbox (…/analytics).
 */
export default function OutreachCampaign({ params }) {
  const { id } = params;
  const campaign = useResource((signal) => get(`/api/outreach/campaigns/${id}`, { signal }), [id]);
  const analytics = useResource((signal) => get(`/api/outreach/campaigns/${id}/analytics`, { signal }), [id]);
  const c = campaign.data?.campaign;
  const accounts = useResource(
    (signal) =>
      c ? get(`/api/outreach/accounts${query({ connectionId: c.connectionId, limit: 100 })}`, { signal }) : undefined,
    [c?.connectionId],
  );
  const reload = () => {
    campaign.reload();
    analytics.reload();
  };

  if (campaign.error)
    return html`<${Page} title="Campaign"><${OutreachNav} /><${ErrorMessage} error=${campaign.error} /></${Page}>`;
  if (!c) return html`<${Page} title="Campaign"><${OutreachNav} /><p class="loading">Loading campaign…</p></${Page}>`;

  const setStatus = async (status) => {
    await post(`/api/outreach/campaigns/${id}/status`, { status });
    reload();
  };
  const actions =
    c.status === 'ACTIVE'
      ? html`<${ActionButton} onClick=${() => setStatus('paused')}>Pause sending</${ActionButton}>`
      : c.status === 'DRAFT' || c.status === 'PAUSED'
        ? html`<${ActionButton} onClick=${() => setStatus('active')}>
            ${c.status === 'DRAFT' ? 'Start sending' : 'Resume sending'}
          </${ActionButton}>`
        : null;
  const mailboxes = accounts.data?.accounts ?? [];
  const enrolled = Object.values(c.leads ?? {}).reduce((a, b) => a + b, 0);

  return html`<${Page} title=${c.name} actions=${actions}>
    <${OutreachNav} />
    <p><a href="/outreach">All campaigns</a></p>
    <section class="panel outreach" aria-labelledby="campaign-facts">
      <h2 id="campaign-facts">Schedule</h2>
      <dl class="facts">
        <dt>Status</dt><dd><${Badge} value=${c.status} /></dd>
        <dt>Sending window</dt><dd>${describeWindow(c.window)}</dd>
        <dt>Daily limit</dt><dd>${c.dailyLimit} mails per mailbox</dd>
        <dt>Gap between mails</dt><dd>${c.minGapSeconds}–${c.maxGapSeconds} seconds</dd>
        <dt>On reply</dt><dd>${c.stopOnReply ? 'Stop the lead’s sequence' : 'Keep sending'}</dd>
        <dt>Open tracking</dt><dd>${c.trackOpens ? 'On' : 'Off'}</dd>
        <dt>Created</dt><dd><${Time} iso=${c.createdAt} /></dd>
      </dl>
    </section>

    <h2>Steps</h2>
    <${Table}
      caption="Sequence steps"
      rowKey=${(s) => s.n}
      rows=${c.steps.map((s, i) => ({ ...s, n: i + 1 }))}
      columns=${[
        { key: 'n', label: 'Step' },
        {
          key: 'delayDays',
          label: 'Sent',
          render: (s) => (s.n === 1 ? 'At once' : `${s.delayDays} days after step ${s.n - 1}`),
        },
        { key: 'subject', label: 'Subject', render: (s) => s.subject || html`<span class="muted">Re: step 1</span>` },
        { key: 'body', label: 'Body', render: (s) => html`<div class="mail-text">${s.body}</div>` },
      ]}
    />

    <h2>Mailboxes</h2>
    <${ErrorMessage} error=${accounts.error} />
    <${Table}
      caption="Sending mailboxes (rotated)"
      rows=${mailboxes.filter((m) => c.mailboxIds.includes(m.id))}
      columns=${[
        { key: 'email', label: 'Email', render: (m) => html`<a href=${`/mailboxes?mailbox=${m.id}`}>${m.email}</a>` },
        { key: 'fromName', label: 'From name', render: (m) => m.fromName ?? '—' },
        { key: 'dailyLimit', label: 'Daily limit' },
        { key: 'sentToday', label: 'Sent today' },
      ]}
      empty=${accounts.loading ? 'Loading mailboxes…' : 'No mailboxes.'}
    />

    <h2>Enrolments</h2>
    <${Table}
      caption=${`Enrolled leads by state (${enrolled} in all)`}
      rowKey=${(r) => r.state}
      rows=${ENROLMENT_STATES.filter((s) => c.leads?.[s]).map((state) => ({ state, count: c.leads[state] }))}
      columns=${[
        { key: 'state', label: 'State', render: (r) => html`<${Badge} value=${r.state} />` },
        { key: 'count', label: 'Leads' },
      ]}
      empty="No leads enrolled yet."
    />
    <${Enroll} campaignId=${id} onEnrolled=${reload} />

    <h2>Analytics</h2>
    <${ErrorMessage} error=${analytics.error} />
    ${analytics.data ? html`<${Analytics} a=${analytics.data} campaign=${c} />` : html`<p class="loading">Loading analytics…</p>`}
  </${Page}>`;
}

/** Pick leads (GET /api/leads, searched by text) and enroll them; the gates' refusals are counted by reason. */
function Enroll({ campaignId, onEnrolled }) {
  const [text, setText] = useState('');
  const [q, setQ] = useState('');
  const [selected, setSelected] = useState(new Set());
  const [result, setResult] = useState();
  const leads = useResource((signal) => get(`/api/leads${query({ q, limit: 25 })}`, { signal }), [q]);
  const name = (l) => [l.firstName, l.lastName].filter(Boolean).join(' ') || l.email || l.id;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState();
  const enroll = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const answer = await post(`/api/outreach/campaigns/${campaignId}/leads`, { leadIds: [...selected] });
      setResult(answer);
      setSelected(new Set());
      onEnrolled();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return html`<section class="panel outreach" aria-labelledby="enroll-heading">
    <h3 id="enroll-heading">Enroll leads</h3>
    <form
      class="toolbar"
      role="search"
      aria-label="Search leads to enroll"
      onSubmit=${(e) => {
        e.preventDefault();
        setQ(text.trim().length >= 2 ? text.trim() : '');
      }}
    >
      <${Field} label="Search leads" type="search" value=${text} onInput=${setText} hint="Name, email, company or title" />
      <button type="submit" class="secondary">Search</button>
    </form>
    <${ErrorMessage} error=${leads.error} />
    ${
      leads.data
        ? html`<${Table}
            caption="Leads"
            rows=${leads.data.leads}
            selected=${selected}
            onSelect=${setSelected}
            rowLabel=${name}
            columns=${[
              { key: 'name', label: 'Name', render: (l) => html`<a href=${`/leads/${l.id}`}>${name(l)}</a>` },
              { key: 'email', label: 'Email', render: (l) => l.email ?? '—' },
              { key: 'company', label: 'Company', render: (l) => l.company ?? '—' },
              { key: 'status', label: 'Status', render: (l) => html`<${Badge} value=${l.status} />` },
            ]}
            empty="No leads found."
          />`
        : html`<p class="loading">Loading leads…</p>`
    }
    <div class="actions enroll-actions">
      <button type="button" onClick=${enroll} disabled=${busy || !selected.size}>Enroll selected</button>
      <span class="muted" aria-live="polite">${selected.size} selected</span>
    </div>
    <${ErrorMessage} error=${error} />
    ${
      result
        ? html`<div class="notice" role="status">
            <p><strong>Enrolled ${result.uploaded} ${result.uploaded === 1 ? 'lead' : 'leads'}.</strong></p>
            ${
              Object.keys(result.skipped).length
                ? html`<p>Skipped: ${Object.entries(result.skipped)
                    .map(([reason, n]) => `${reason.replace(/_/g, ' ')} ${n}`)
                    .join(', ')}</p>`
                : null
            }
          </div>`
        : null
    }
  </section>`;
}

function Analytics({ a, campaign }) {
  const t = a.totals;
  // Every step of the sequence, those with nothing sent yet at zero.
  const count = Math.max(campaign.steps.length, ...a.perStep.map((s) => s.step));
  const zero = { sent: 0, unconfirmed: 0, opened: 0, replied: 0, bounced: 0, unsubscribed: 0 };
  const perStep = Array.from({ length: count }, (_, i) => ({
    ...zero,
    ...a.perStep.find((s) => s.step === i + 1),
    step: i + 1,
  }));
  const stat = (label, value, rate) => html`<div class="stat">
    <div class="muted">${label}</div>
    <div class="value">${value}</div>
    ${rate !== undefined ? html`<div class="muted">${percent(rate)} of sent</div>` : null}
  </div>`;
  return html`<div class="outreach-analytics">
    <div class="grid" role="group" aria-label="Totals">
      ${stat('Enrolled', a.enrolled)} ${stat('Sent', t.sent)} ${campaign.trackOpens ? stat('Opened', t.opened, t.openRate) : stat('Opened', 'Not tracked')}
      ${stat('Replied', t.replied, t.replyRate)} ${stat('Bounced', t.bounced, t.bounceRate)}
      ${stat('Unsubscribed', t.unsubscribed)}
    </div>
    ${
      perStep.length
        ? html`<${CategoryChart}
            title="Per step: sent, opened, replied, bounced"
            x=${perStep.map((s) => s.step)}
            xLabel="Step"
            label=${(n) => `Step ${n}`}
            series=${[
              { label: 'Sent', values: perStep.map((s) => s.sent) },
              { label: 'Opened', values: perStep.map((s) => s.opened) },
              { label: 'Replied', values: perStep.map((s) => s.replied) },
              { label: 'Bounced', values: perStep.map((s) => s.bounced) },
            ]}
          />`
        : null
    }
    <${Table}
      caption="Per step"
      rowKey=${(s) => s.step}
      rows=${perStep}
      columns=${[
        { key: 'step', label: 'Step' },
        { key: 'sent', label: 'Sent' },
        { key: 'opened', label: 'Opened' },
        { key: 'replied', label: 'Replied' },
        { key: 'bounced', label: 'Bounced', render: (s) => s.bounced ?? '—' },
        { key: 'unsubscribed', label: 'Unsubscribed', render: (s) => s.unsubscribed ?? '—' },
      ]}
      empty="Nothing sent yet."
    />
    ${
      a.perMailbox.length
        ? html`<${Table}
            caption="Per mailbox"
            rowKey=${(m) => m.mailboxId}
            rows=${a.perMailbox}
            columns=${[
              { key: 'email', label: 'Mailbox' },
              { key: 'sent', label: 'Sent' },
              { key: 'opened', label: 'Opened' },
              { key: 'replied', label: 'Replied' },
              { key: 'bounced', label: 'Bounced' },
              { key: 'unsubscribed', label: 'Unsubscribed' },
            ]}
          />`
        : null
    }
    <p class="muted">Counted by ${a.source === 'quarry' ? 'Quarry' : a.source}. <a href=${`/inbox?campaign=${a.campaignId}`}>Replies in the inbox</a></p>
  </div>`;
}
