import { get, post, query } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { CategoryChart } from '../lib/outreach-chart.js';
import {
  ActionButton,
  Badge,
  ErrorMessage,
  Field,
  Form,
  Page,
  Pager,
  ProgressBar,
  Table,
  Time,
  useResource,
} from '../lib/ui.js';
import { OutreachNav, percent } from './outreach/subnav.js';

const WARMUP_DAYS = 35;

/**
 * Sending mailboxes (GET /api/outreach/accounts), connecting more (POST /api/outreach/connections), and for the
 * chosen one its DNS vitals (POST …/accounts/:id/test) and warmup (GET/POST …/accounts/:id/warmup).
 */
export default function Mailboxes({ query: search }) {
  const [cursor, setCursor] = useState();
  const [connecting, setConnecting] = useState(false);
  const accounts = useResource(
    (signal) => get(`/api/outreach/accounts${query({ cursor, limit: 50 })}`, { signal }),
    [cursor],
  );
  const list = accounts.data?.accounts ?? [];
  const chosen = list.find((m) => m.id === search?.get('mailbox')) ?? list[0];

  return html`<${Page}
    title="Mailboxes"
    actions=${html`<button type="button" onClick=${() => setConnecting(!connecting)} aria-expanded=${connecting}>Connect mailbox</button>`}
  >
    <${OutreachNav} />
    ${
      connecting
        ? html`<${Connect}
            onConnected=${() => {
              setConnecting(false);
              accounts.reload();
            }}
          />`
        : null
    }
    <${ErrorMessage} error=${accounts.error} />
    ${accounts.loading && !accounts.data ? html`<p class="loading">Loading mailboxes…</p>` : null}
    ${
      accounts.data
        ? html`<${Table}
            caption="Sending mailboxes"
            rows=${list}
            columns=${[
              {
                key: 'email',
                label: 'Email',
                render: (m) =>
                  html`<a href=${`/mailboxes?mailbox=${m.id}`} aria-current=${m === chosen ? 'true' : undefined}>${m.email}</a>`,
              },
              { key: 'provider', label: 'Provider' },
              { key: 'dailyLimit', label: 'Daily limit' },
              { key: 'sentToday', label: 'Sent today' },
              {
                key: 'imap',
                label: 'Inbox read',
                render: (m) =>
                  !m.imap
                    ? '—'
                    : m.imap.error
                      ? html`<span class="field-error">${m.imap.error}</span>`
                      : m.imap.lastCheckedAt
                        ? html`<${Time} iso=${m.imap.lastCheckedAt} />`
                        : 'Not yet',
              },
            ]}
            empty="No mailboxes yet: connect one to send campaigns."
          />
          <${Pager} nextCursor=${accounts.data.nextCursor} onNext=${setCursor} onFirst=${() => setCursor()} atFirst=${!cursor} />`
        : null
    }
    ${chosen ? html`<${MailboxDetail} key=${chosen.id} mailbox=${chosen} />` : null}
  </${Page}>`;
}

/** One SMTP mailbox, both logins checked by the service before anything is stored. */
function Connect({ onConnected }) {
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [fromName, setFromName] = useState('');
  const [smtpUrl, setSmtpUrl] = useState('');
  const [imapUrl, setImapUrl] = useState('');
  const [dailyLimit, setDailyLimit] = useState('50');
  const connect = async () => {
    await post('/api/outreach/connections', {
      provider: 'smtp',
      name: name.trim() || email.trim(),
      mailboxes: [
        {
          email: email.trim(),
          ...(fromName.trim() ? { fromName: fromName.trim() } : {}),
          smtpUrl,
          imapUrl,
          dailyLimit: Number(dailyLimit),
        },
      ],
    });
    onConnected();
  };
  return html`<${Form} onSubmit=${connect} submitLabel="Connect" label="Connect a mailbox">
    <p class="muted">The SMTP and IMAP logins are checked before anything is stored; credentials are kept encrypted.</p>
    <${Field} label="Connection name" value=${name} onInput=${setName} hint="Optional; default: the address" />
    <div class="form-row">
      <${Field} label="Email" type="email" value=${email} onInput=${setEmail} />
      <${Field} label="From name" value=${fromName} onInput=${setFromName} />
    </div>
    <${Field} label="SMTP URL" value=${smtpUrl} onInput=${setSmtpUrl} hint="smtp://user:password@host:587 or smtps://…:465" />
    <${Field} label="IMAP URL" value=${imapUrl} onInput=${setImapUrl} hint="imap://user:password@host:143 or imaps://…:993: replies are read from INBOX" />
    <${Field} label="Mailbox daily limit" type="number" min="1" max="2000" value=${dailyLimit} onInput=${setDailyLimit} />
  </${Form}>`;
}

function MailboxDetail({ mailbox }) {
  return html`<section class="panel outreach mailbox" aria-labelledby="mailbox-heading">
    <h2 id="mailbox-heading">${mailbox.email}</h2>
    <dl class="facts">
      <dt>From name</dt><dd>${mailbox.fromName ?? '—'}</dd>
      <dt>SMTP</dt><dd>${mailbox.smtp ? html`<span data-volatile>${mailbox.smtp.host}:${mailbox.smtp.port}</span>` : '—'}</dd>
      <dt>IMAP</dt><dd>${mailbox.imap ? html`<span data-volatile>${mailbox.imap.host}:${mailbox.imap.port}</span>` : '—'}</dd>
      <dt>Sent today</dt><dd>${mailbox.sentToday} of ${mailbox.dailyLimit}</dd>
    </dl>
    <${DnsVitals} mailbox=${mailbox} />
    <${Warmup} mailbox=${mailbox} />
  </section>`;
}

/** MX, SPF, DKIM and DMARC of the mailbox's domain, read when the mailbox is shown. */
function DnsVitals({ mailbox }) {
  const [selector, setSelector] = useState('');
  const [asked, setAsked] = useState('');
  const vitals = useResource(
    (signal) => post(`/api/outreach/accounts/${mailbox.id}/test`, asked ? { dkimSelector: asked } : {}, { signal }),
    [mailbox.id, asked],
  );
  return html`<h3>DNS vitals</h3>
    <form
      class="toolbar"
      aria-label="Check DNS"
      onSubmit=${(e) => {
        e.preventDefault();
        if (selector.trim() === asked) vitals.reload();
        else setAsked(selector.trim());
      }}
    >
      <${Field} label="DKIM selector" value=${selector} onInput=${setSelector} hint="Optional: common selectors are tried" />
      <button type="submit" class="secondary">Check DNS</button>
    </form>
    <${ErrorMessage} error=${vitals.error} />
    ${vitals.loading ? html`<p class="loading">Reading DNS…</p>` : null}
    ${
      vitals.data && !vitals.loading
        ? html`<p><strong>${vitals.data.passed} of 4 checks pass</strong> for ${vitals.data.domain}.</p>
            <${Table}
              caption=${`DNS records of ${vitals.data.domain}`}
              rowKey=${(c) => c.check}
              rows=${vitals.data.checks}
              columns=${[
                { key: 'check', label: 'Check', render: (c) => c.check.toUpperCase() },
                { key: 'pass', label: 'Result', render: (c) => html`<${Badge} value=${c.pass ? 'Pass' : 'Fail'} />` },
                {
                  key: 'record',
                  label: 'Record',
                  render: (c) => (c.record ? html`<code class="record">${c.record}</code>` : '—'),
                },
                { key: 'message', label: 'Note' },
              ]}
            />`
        : null
    }`;
}

/** Warmup of the mailbox's domain: state, schedule day, today's target and sent, the 35-day ramp as a chart. */
function Warmup({ mailbox }) {
  const warmup = useResource((signal) => get(`/api/outreach/accounts/${mailbox.id}/warmup`, { signal }), [mailbox.id]);
  const [selector, setSelector] = useState('');
  const set = async (enabled) => {
    await post(`/api/outreach/accounts/${mailbox.id}/warmup`, {
      enabled,
      ...(enabled && selector.trim() ? { dkimSelector: selector.trim() } : {}),
    });
    warmup.reload();
  };
  const w = warmup.data;
  const d = w?.warmupDomain;
  return html`<h3>Warmup</h3>
    <${ErrorMessage} error=${warmup.error} />
    ${warmup.loading && !w ? html`<p class="loading">Loading warmup…</p>` : null}
    ${
      w
        ? html`<dl class="facts">
              <dt>Warmup</dt><dd>${w.enabled ? 'On' : 'Off'}${d ? html` · <${Badge} value=${d.status} />` : null}</dd>
              ${
                d
                  ? html`<dt>Domain</dt><dd>${d.domain} (DKIM selector ${d.dkimSelector})</dd>
                      <dt>Schedule day</dt><dd>${d.day ?? '—'} of ${WARMUP_DAYS}</dd>
                      <dt>Today</dt><dd>${d.todaySent} of ${d.todayTarget} sent</dd>
                      <dt>Sent in all</dt><dd>${d.totalSent}</dd>
                      ${d.statusReason ? html`<dt>Paused because</dt><dd>${d.statusReason}</dd>` : null}
                      ${
                        d.latestMetrics
                          ? html`<dt>Latest rates</dt>
                              <dd>
                                open ${percent(d.latestMetrics.openRate)}, reply ${percent(d.latestMetrics.replyRate)},
                                bounce ${percent(d.latestMetrics.bounceRate)} (limit ${percent(d.limits.bounceRate)}), spam
                                ${percent(d.latestMetrics.spamRate)} (limit ${percent(d.limits.spamRate)})
                              </dd>`
                          : null
                      }
                      ${d.lastSendError ? html`<dt>Last send error</dt><dd>${d.lastSendError.message}</dd>` : null}`
                  : null
              }
              ${
                w.platform
                  ? html`<dt>Platform warmup</dt>
                      <dd>${w.platform.sent} sent, ${w.platform.landedInbox} in inbox, ${w.platform.landedSpam} in spam${
                        w.platform.healthScore !== null ? `, health ${w.platform.healthScore}` : ''
                      }</dd>`
                  : null
              }
            </dl>
            ${d ? html`<${WarmupProgress} domain=${d} />` : null}
            <div class="toolbar">
              ${
                w.enabled
                  ? html`<${ActionButton} onClick=${() => set(false)}>Pause warmup</${ActionButton}>`
                  : html`${
                      d?.dkimSelector || mailbox.provider !== 'smtp'
                        ? null
                        : html`<${Field}
                            label="DKIM selector for warmup"
                            value=${selector}
                            onInput=${setSelector}
                            hint="Needed the first time"
                          />`
                    }
                    <${ActionButton} onClick=${() => set(true)}>Enable warmup</${ActionButton}>`
              }
            </div>`
        : null
    }`;
}

function WarmupProgress({ domain }) {
  const days = Array.from({ length: WARMUP_DAYS }, (_, i) => i + 1);
  const target = (day) =>
    domain.schedule[Math.min(domain.schedule.length - 1, Math.floor((day - 1) / 7))]?.dailyVolume ?? 0;
  const done = domain.status === 'COMPLETED' ? WARMUP_DAYS : Math.max(0, (domain.day ?? 1) - 1);
  return html`<${ProgressBar}
      value=${(done / WARMUP_DAYS) * 100}
      label=${`Warmup progress: ${done} of ${WARMUP_DAYS} days done`}
    />
    <${CategoryChart}
      title="Warmup schedule: mails a day, and today's sent"
      x=${days}
      ticks=${days.filter((n) => n === 1 || n % 7 === 0)}
      xLabel="Day"
      label=${(n) => `Day ${n}`}
      series=${[
        { label: 'Target', values: days.map(target) },
        { label: 'Sent', values: days.map((n) => (n === domain.day ? domain.todaySent : null)) },
      ]}
    />`;
}
