import { get, post, query } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { navigate } from '../lib/router.js';
import {
  Badge,
  Checkbox,
  ErrorMessage,
  Field,
  Form,
  Page,
  Pager,
  Select,
  Table,
  TextArea,
  Time,
  useResource,
} from '../lib/ui.js';
import { OutreachNav, WEEKDAYS } from './outreach/subnav.js';

/** Outreach campaigns (GET /api/outreach/campaigns) and a new one (POST /api/outreach/campaigns). */
export default function Outreach({ query: search }) {
  const [cursor, setCursor] = useState();
  const campaigns = useResource(
    (signal) => get(`/api/outreach/campaigns${query({ cursor, limit: 50 })}`, { signal }),
    [cursor],
  );
  const [creating, setCreating] = useState(search?.get('new') === '1');

  return html`<${Page}
    title="Outreach"
    actions=${html`<button type="button" onClick=${() => setCreating(!creating)} aria-expanded=${creating}>New campaign</button>`}
  >
    <${OutreachNav} />
    ${creating ? html`<${NewCampaign} onCancel=${() => setCreating(false)} />` : null}
    <${ErrorMessage} error=${campaigns.error} />
    ${campaigns.loading && !campaigns.data ? html`<p class="loading">Loading campaigns…</p>` : null}
    ${
      campaigns.data
        ? html`<${Table}
            caption="Campaigns"
            rows=${campaigns.data.campaigns}
            columns=${[
              { key: 'name', label: 'Name', render: (c) => html`<a href=${`/outreach/${c.id}`}>${c.name}</a>` },
              { key: 'status', label: 'Status', render: (c) => html`<${Badge} value=${c.status} />` },
              { key: 'steps', label: 'Steps', render: (c) => c.steps.length },
              {
                key: 'leads',
                label: 'Enrolled',
                render: (c) => Object.values(c.leads ?? {}).reduce((a, b) => a + b, 0),
              },
              { key: 'dailyLimit', label: 'Daily limit', render: (c) => `${c.dailyLimit} per mailbox` },
              { key: 'createdAt', label: 'Created', render: (c) => html`<${Time} iso=${c.createdAt} />` },
            ]}
            empty="No campaigns yet: connect a mailbox, then create a campaign."
          />
          <${Pager}
            nextCursor=${campaigns.data.nextCursor}
            onNext=${setCursor}
            onFirst=${() => setCursor()}
            atFirst=${!cursor}
          />`
        : null
    }
  </${Page}>`;
}

const emptyStep = (n) => ({ subject: '', body: '', delayDays: n === 0 ? 0 : 2 });

/** The campaign form: sequence steps, sending window, limits, mailboxes of one connection. */
function NewCampaign({ onCancel }) {
  const connections = useResource((signal) => get('/api/outreach/connections?limit=100', { signal }), []);
  const [name, setName] = useState('');
  const [connectionId, setConnectionId] = useState('');
  const [steps, setSteps] = useState([emptyStep(0)]);
  const [timezone, setTimezone] = useState('UTC');
  const [days, setDays] = useState([1, 2, 3, 4, 5]);
  const [startHour, setStartHour] = useState('9');
  const [endHour, setEndHour] = useState('17');
  const [dailyLimit, setDailyLimit] = useState('30');
  const [minGap, setMinGap] = useState('60');
  const [maxGap, setMaxGap] = useState('300');
  const [stopOnReply, setStopOnReply] = useState(true);
  const [trackOpens, setTrackOpens] = useState(false);
  const [excluded, setExcluded] = useState(new Set());

  const list = connections.data?.connections ?? [];
  const connection = list.find((c) => c.id === connectionId) ?? list[0];
  const setStep = (i, change) => setSteps(steps.map((s, j) => (j === i ? { ...s, ...change } : s)));
  const toggleDay = (d, on) => setDays(on ? [...days, d].sort() : days.filter((x) => x !== d));
  const toggleMailbox = (id, on) => {
    const next = new Set(excluded);
    if (on) next.delete(id);
    else next.add(id);
    setExcluded(next);
  };

  const create = async () => {
    const mailboxes = connection?.mailboxes ?? [];
    const chosen = mailboxes.filter((m) => !excluded.has(m.id)).map((m) => m.id);
    const { campaign } = await post('/api/outreach/campaigns', {
      connectionId: connection?.id ?? '',
      name,
      steps: steps.map((s, i) => ({ subject: s.subject, body: s.body, delayDays: i === 0 ? 0 : Number(s.delayDays) })),
      window: { timezone, days, startHour: Number(startHour), endHour: Number(endHour) },
      dailyLimit: Number(dailyLimit),
      minGapSeconds: Number(minGap),
      maxGapSeconds: Number(maxGap),
      stopOnReply,
      trackOpens,
      ...(chosen.length === mailboxes.length ? {} : { mailboxIds: chosen }),
    });
    navigate(`/outreach/${campaign.id}`);
  };

  if (connections.loading) return html`<p class="loading">Loading connections…</p>`;
  if (connections.error) return html`<${ErrorMessage} error=${connections.error} />`;
  if (!list.length)
    return html`<div class="notice" role="status">
      <p>A campaign sends from mailboxes: <a href="/mailboxes">connect a mailbox</a> first.</p>
      <button type="button" class="secondary" onClick=${onCancel}>Close</button>
    </div>`;

  return html`<${Form} onSubmit=${create} submitLabel="Create campaign" label="New campaign" class="outreach-form">
    <${Field} label="Name" value=${name} onInput=${setName} required />
    <${Select}
      label="Connection"
      value=${connection?.id}
      onChange=${setConnectionId}
      options=${list.map((c) => [c.id, `${c.name} (${c.provider}, ${c.mailboxes.length} mailboxes)`])}
    />
    ${steps.map(
      (s, i) => html`<fieldset key=${i} class="step">
        <legend>Step ${i + 1}</legend>
        ${
          i > 0
            ? html`<${Field}
                label=${`Step ${i + 1} delay (days)`}
                type="number"
                min="0"
                max="365"
                value=${s.delayDays}
                onInput=${(v) => setStep(i, { delayDays: v })}
                hint="Days after the previous step"
              />`
            : null
        }
        <${Field}
          label=${`Step ${i + 1} subject`}
          value=${s.subject}
          onInput=${(v) => setStep(i, { subject: v })}
          hint=${i === 0 ? 'Templates: {{firstName}}, {{company}}, {{firstName|there}}, spintax {Hi|Hello}' : 'Empty: "Re: " the first subject, in the same thread'}
        />
        <${TextArea} label=${`Step ${i + 1} body`} value=${s.body} rows="5" onInput=${(v) => setStep(i, { body: v })} />
        ${
          i > 0 && i === steps.length - 1
            ? html`<button type="button" class="secondary" onClick=${() => setSteps(steps.slice(0, -1))}>
                Remove step ${i + 1}
              </button>`
            : null
        }
      </fieldset>`,
    )}
    ${
      steps.length < 10
        ? html`<div><button type="button" class="secondary" onClick=${() => setSteps([...steps, emptyStep(steps.length)])}>
            Add step
          </button></div>`
        : null
    }
    <fieldset class="step">
      <legend>Sending window</legend>
      <div class="form-row">
        <${Field} label="Time zone" value=${timezone} onInput=${setTimezone} hint="IANA name, e.g. Europe/Berlin" />
        <${Field} label="Start hour" type="number" min="0" max="23" value=${startHour} onInput=${setStartHour} />
        <${Field} label="End hour" type="number" min="1" max="24" value=${endHour} onInput=${setEndHour} />
      </div>
      <div class="form-row days">
        ${WEEKDAYS.map(
          (label, i) =>
            html`<${Checkbox} key=${label} label=${label} checked=${days.includes(i + 1)} onChange=${(on) => toggleDay(i + 1, on)} />`,
        )}
      </div>
    </fieldset>
    <fieldset class="step">
      <legend>Limits</legend>
      <div class="form-row">
        <${Field} label="Daily limit" type="number" min="1" value=${dailyLimit} onInput=${setDailyLimit} hint="Per mailbox per day" />
        <${Field} label="Minimum gap (seconds)" type="number" min="0" value=${minGap} onInput=${setMinGap} />
        <${Field} label="Maximum gap (seconds)" type="number" min="0" value=${maxGap} onInput=${setMaxGap} />
      </div>
      <${Checkbox} label="Stop a lead's sequence when they reply" checked=${stopOnReply} onChange=${setStopOnReply} />
      <${Checkbox} label="Track opens" checked=${trackOpens} onChange=${setTrackOpens} />
    </fieldset>
    ${
      connection?.mailboxes.length
        ? html`<fieldset class="step">
            <legend>Mailboxes</legend>
            ${connection.mailboxes.map(
              (m) =>
                html`<${Checkbox}
                  key=${m.id}
                  label=${m.email}
                  checked=${!excluded.has(m.id)}
                  onChange=${(on) => toggleMailbox(m.id, on)}
                />`,
            )}
          </fieldset>`
        : null
    }
  </${Form}>`;
}
