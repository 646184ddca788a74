import {
  deliverJson,
  HttpFail,
  listenStub,
  type PlatformStub,
  type RecordedRequest,
  recordOf,
} from './platform-stub.ts';

/**
 * A loopback server speaking Smartlead's API (the paths Quarry's client uses, under `/api/v1`): the key as
 * `?api_key=`, numeric ids, `offset`/`limit` (≤ 100) lists, figures as strings, and the request bodies validated as
 * the platform does (400 naming the missing field). Stateful: the test seeds email accounts and reads campaigns
 * (sequences, schedule, settings, senders, leads, status), warmup flags, webhooks and replies back from `state`.
 * Every request is recorded (the query keeps the key: tests assert it travels there and nowhere else).
 */

export interface SmartleadStubAccount {
  id: number;
  from_email: string;
  from_name?: string;
  message_per_day?: number;
  warmup_enabled?: boolean;
  warmup_reputation?: string;
  warmup?: { sent_count: number; inbox_count: number; spam_count: number; warmup_email_received_count: number };
}

export interface SmartleadStubCampaign {
  id: number;
  name: string;
  /** DRAFTED, ACTIVE (after START), PAUSED, STOPPED. */
  status: string;
  sequences: any[] | null;
  schedule: any | null;
  settings: any | null;
  emailAccountIds: number[];
  leads: any[];
  webhooks: any[];
  replies: any[];
  analytics: Record<string, unknown>;
}

export interface SmartleadStubState {
  accounts: Map<number, SmartleadStubAccount>;
  campaigns: Map<number, SmartleadStubCampaign>;
}

export type SmartleadStub = PlatformStub<SmartleadStubState>;

const bad = (message: string) => new HttpFail(400, message);
const need = (cond: unknown, field: string) => {
  if (!cond) throw bad(`"${field}" is required`);
};
const HHMM = /^([01]\d|2[0-3]):[0-5]\d$/;
const STOP_SETTINGS = new Set(['REPLY_TO_AN_EMAIL', 'CLICK_ON_A_LINK', 'OPEN_AN_EMAIL']);
const TRACK_SETTINGS = new Set(['DONT_TRACK_EMAIL_OPEN', 'DONT_TRACK_LINK_CLICK', 'DONT_TRACK_REPLY_TO_AN_EMAIL']);
const WEBHOOK_EVENTS = new Set([
  'EMAIL_SENT',
  'EMAIL_OPEN',
  'EMAIL_LINK_CLICK',
  'EMAIL_REPLY',
  'EMAIL_BOUNCE',
  'LEAD_UNSUBSCRIBED',
  'LEAD_CATEGORY_UPDATED',
]);

export async function startSmartleadStub(opts: {
  apiKey: string;
  accounts?: SmartleadStubAccount[];
}): Promise<SmartleadStub> {
  const state: SmartleadStubState = {
    accounts: new Map((opts.accounts ?? []).map((a) => [a.id, { ...a }])),
    campaigns: new Map(),
  };
  const requests: RecordedRequest[] = [];
  let nextId = 1000;

  const accountView = (a: SmartleadStubAccount) => ({
    id: a.id,
    from_email: a.from_email,
    from_name: a.from_name ?? '',
    username: a.from_email,
    message_per_day: a.message_per_day ?? 50,
    type: 'SMTP',
    warmup_details: a.warmup_enabled
      ? {
          status: 'ACTIVE',
          warmup_reputation: a.warmup_reputation ?? '100%',
          total_sent_count: a.warmup?.sent_count ?? 0,
        }
      : { status: 'INACTIVE', warmup_reputation: a.warmup_reputation ?? null },
  });
  const accountOf = (id: string | undefined) => {
    const a = state.accounts.get(Number(id));
    if (!a) throw new HttpFail(404, 'Email account not found');
    return a;
  };
  const campaignOf = (id: string | undefined) => {
    const c = state.campaigns.get(Number(id));
    if (!c) throw new HttpFail(404, 'Campaign not found');
    return c;
  };

  function route(method: string, path: string, q: URLSearchParams, body: any): unknown {
    if (method === 'GET' && (path === '/email-accounts' || path === '/email-accounts/')) {
      const offset = Number(q.get('offset') ?? 0);
      const limit = Number(q.get('limit') ?? 100);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw bad('"limit" must be less than or equal to 100');
      const all = [...state.accounts.values()].sort((a, b) => a.id - b.id);
      return all.slice(offset, offset + limit).map(accountView);
    }
    let m = /^\/email-accounts\/(\d+)\/?$/.exec(path);
    if (method === 'GET' && m) return accountView(accountOf(m[1]));
    m = /^\/email-accounts\/(\d+)\/warmup$/.exec(path);
    if (method === 'POST' && m) {
      const a = accountOf(m[1]);
      need(typeof body?.warmup_enabled === 'boolean', 'warmup_enabled');
      a.warmup_enabled = body.warmup_enabled;
      return { ok: true, emailAccountId: a.id, warmupKey: 'stub', status: a.warmup_enabled ? 'ACTIVE' : 'INACTIVE' };
    }
    m = /^\/email-accounts\/(\d+)\/warmup-stats$/.exec(path);
    if (method === 'GET' && m) {
      const a = accountOf(m[1]);
      const w = a.warmup ?? { sent_count: 0, inbox_count: 0, spam_count: 0, warmup_email_received_count: 0 };
      return {
        id: a.id,
        sent_count: String(w.sent_count),
        spam_count: String(w.spam_count),
        inbox_count: String(w.inbox_count),
        warmup_email_received_count: String(w.warmup_email_received_count),
        stats_by_date: [],
      };
    }
    if (method === 'POST' && path === '/campaigns/create') {
      need(typeof body?.name === 'string' && body.name, 'name');
      const c: SmartleadStubCampaign = {
        id: nextId++,
        name: body.name,
        status: 'DRAFTED',
        sequences: null,
        schedule: null,
        settings: null,
        emailAccountIds: [],
        leads: [],
        webhooks: [],
        replies: [],
        analytics: {},
      };
      state.campaigns.set(c.id, c);
      return { ok: true, id: c.id, name: c.name, created_at: new Date().toISOString() };
    }
    m = /^\/campaigns\/(\d+)\/([a-z-]+)$/.exec(path);
    if (!m) throw new HttpFail(404, `Cannot ${method} ${path}`);
    const c = campaignOf(m[1]);
    const what = `${method} ${m[2]}`;
    switch (what) {
      case 'POST sequences': {
        need(Array.isArray(body?.sequences) && body.sequences.length > 0, 'sequences');
        for (const s of body.sequences) {
          need(Number.isInteger(s.seq_number), 'sequences[].seq_number');
          need(Number.isInteger(s.seq_delay_details?.delay_in_days), 'sequences[].seq_delay_details.delay_in_days');
          need(typeof s.subject === 'string', 'sequences[].subject');
          need(typeof s.email_body === 'string', 'sequences[].email_body');
        }
        c.sequences = body.sequences;
        return { ok: true, data: 'success' };
      }
      case 'POST schedule': {
        need(typeof body?.timezone === 'string', 'timezone');
        need(Array.isArray(body.days_of_the_week), 'days_of_the_week');
        for (const d of body.days_of_the_week)
          if (!Number.isInteger(d) || d < 0 || d > 6) throw bad('"days_of_the_week[]" must be between 0 and 6');
        need(HHMM.test(body.start_hour ?? ''), 'start_hour');
        need(HHMM.test(body.end_hour ?? ''), 'end_hour');
        need(Number.isInteger(body.min_time_btw_emails), 'min_time_btw_emails');
        need(Number.isInteger(body.max_new_leads_per_day), 'max_new_leads_per_day');
        c.schedule = body;
        return { ok: true };
      }
      case 'POST settings': {
        if (body?.track_settings !== undefined) {
          need(Array.isArray(body.track_settings), 'track_settings');
          for (const t of body.track_settings) if (!TRACK_SETTINGS.has(t)) throw bad(`"track_settings" has ${t}`);
        }
        if (body?.stop_lead_settings !== undefined && !STOP_SETTINGS.has(body.stop_lead_settings))
          throw bad('"stop_lead_settings" must be one of [REPLY_TO_AN_EMAIL, CLICK_ON_A_LINK, OPEN_AN_EMAIL]');
        c.settings = { ...c.settings, ...body };
        return { ok: true };
      }
      case 'POST email-accounts': {
        need(Array.isArray(body?.email_account_ids) && body.email_account_ids.length > 0, 'email_account_ids');
        for (const id of body.email_account_ids) {
          if (typeof id !== 'number') throw bad('"email_account_ids[]" must be a number');
          if (!state.accounts.has(id)) throw bad(`Email account ${id} not found`);
        }
        c.emailAccountIds = [...new Set([...c.emailAccountIds, ...body.email_account_ids])];
        return { ok: true, result: c.emailAccountIds.map((id) => ({ email_campaign_id: c.id, email_account_id: id })) };
      }
      case 'POST leads': {
        need(Array.isArray(body?.lead_list), 'lead_list');
        if (body.lead_list.length > 100) throw bad('"lead_list" must contain less than or equal to 100 items');
        let uploaded = 0;
        let already = 0;
        let invalid = 0;
        for (const l of body.lead_list) {
          need(typeof l?.email === 'string', 'lead_list[].email');
          if (l.custom_fields !== undefined && (typeof l.custom_fields !== 'object' || l.custom_fields === null))
            throw bad('"lead_list[].custom_fields" must be of type object');
          if (!/^[^@\s]+@[^@\s]+$/.test(l.email)) invalid++;
          else if (c.leads.some((x) => x.email === l.email)) already++;
          else {
            c.leads.push(l);
            uploaded++;
          }
        }
        return {
          ok: true,
          upload_count: uploaded,
          total_leads: c.leads.length,
          already_added_to_campaign: already,
          duplicate_count: 0,
          invalid_email_count: invalid,
          unsubscribed_leads: [],
        };
      }
      case 'POST status': {
        const map: Record<string, string> = { START: 'ACTIVE', PAUSED: 'PAUSED', STOPPED: 'STOPPED' };
        const next = map[body?.status];
        if (!next) throw bad('"status" must be one of [PAUSED, STOPPED, START]');
        c.status = next;
        return { ok: true };
      }
      case 'GET analytics':
        return {
          id: c.id,
          name: c.name,
          status: c.status,
          sent_count: '0',
          open_count: '0',
          unique_open_count: '0',
          reply_count: '0',
          bounce_count: '0',
          unsubscribed_count: '0',
          ...Object.fromEntries(Object.entries(c.analytics).map(([k, v]) => [k, String(v)])),
        };
      case 'POST reply-email-thread': {
        need(body?.email_stats_id !== undefined && body.email_stats_id !== '', 'email_stats_id');
        need(typeof body.email_body === 'string', 'email_body');
        c.replies.push(body);
        return { ok: true, message: 'Email added to the queue will be sent out soon!' };
      }
      case 'POST webhooks': {
        need(typeof body?.name === 'string', 'name');
        need(typeof body.webhook_url === 'string', 'webhook_url');
        need(Array.isArray(body.event_types) && body.event_types.length > 0, 'event_types');
        for (const e of body.event_types) if (!WEBHOOK_EVENTS.has(e)) throw bad(`"event_types" has ${e}`);
        const existing = body.id ? c.webhooks.find((w) => w.id === body.id) : undefined;
        const hook = { ...body, id: existing?.id ?? nextId++, email_campaign_id: c.id };
        c.webhooks = [...c.webhooks.filter((w) => w.id !== hook.id), hook];
        return { ok: true, id: hook.id };
      }
      default:
        throw new HttpFail(404, `Cannot ${method} ${path}`);
    }
  }

  const server = await listenStub(({ req, url, body, send }) => {
    const path = url.pathname.replace(/^\/api\/v1/, '');
    requests.push(recordOf(req, url, path, body));
    if (!url.pathname.startsWith('/api/v1/')) return send(404, { message: 'Not found' });
    if (url.searchParams.get('api_key') !== opts.apiKey) return send(401, { error: 'Invalid API Key' });
    if (typeof body === 'string') return send(400, { message: 'Unexpected token in JSON' });
    try {
      send(200, route(req.method ?? 'GET', path, url.searchParams, body));
    } catch (err) {
      if (err instanceof HttpFail) send(err.status, { message: err.message });
      else send(500, { message: String(err) });
    }
  });

  return {
    url: `${server.origin}/api/v1`,
    state,
    requests,
    async deliverWebhook(target, event) {
      const campaign = state.campaigns.get(Number(event.campaign_id));
      const hook = campaign?.webhooks.find((w) => w.webhook_url === target);
      const now = new Date().toISOString();
      const payload = {
        webhook_id: hook?.id ?? null,
        webhook_name: hook?.name ?? null,
        webhook_url: target,
        campaign_name: campaign?.name ?? 'Campaign',
        campaign_status: campaign?.status ?? 'ACTIVE',
        event_timestamp: now,
        secret_key: '',
        description: '',
        metadata: { webhook_created_at: now },
        ...event,
      };
      return deliverJson(target, payload);
    },
    close: server.close,
  };
}
