import { randomUUID } from 'node:crypto';
import {
  deliverJson,
  HttpFail,
  listenStub,
  type PlatformStub,
  type RecordedRequest,
  recordOf,
} from './platform-stub.ts';

export type { RecordedRequest };

/**
 * A loopback server speaking Instantly API v2 (the paths Quarry's client uses): Bearer auth, fastify-shaped errors
 * `{ statusCode, error, message }`, `limit` ≤ 100 / `starting_after` → `next_starting_after` pagination, and the
 * request bodies validated as the platform does (400 naming the missing field). Stateful: the test seeds accounts,
 * reads campaigns, leads, warmup flags, webhooks and replies back from `state`. Every request is recorded.
 */

export interface InstantlyStubAccount {
  email: string;
  first_name?: string;
  last_name?: string;
  daily_limit?: number;
  /** 1 active, 0 paused. */
  warmup_status?: number;
  warmup?: { sent: number; landed_inbox: number; landed_spam: number; received: number; health_score?: number };
}

export interface InstantlyStubCampaign {
  id: string;
  name: string;
  /** 0 draft, 1 active, 2 paused. */
  status: number;
  body: any;
  leads: any[];
  analytics: Record<string, unknown>;
  stepAnalytics: Array<Record<string, unknown>>;
}

export interface InstantlyStubState {
  workspace: { id: string; name: string };
  accounts: Map<string, InstantlyStubAccount>;
  campaigns: Map<string, InstantlyStubCampaign>;
  webhooks: any[];
  replies: any[];
}

export type InstantlyStub = PlatformStub<InstantlyStubState>;

const ERROR_NAMES: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found' };
const bad = (message: string) => new HttpFail(400, message);
const need = (cond: unknown, field: string) => {
  if (!cond) throw bad(`body must have required property '${field}'`);
};

function validateCampaign(b: any) {
  need(typeof b?.name === 'string' && b.name, 'name');
  const schedules = b.campaign_schedule?.schedules;
  need(Array.isArray(schedules) && schedules.length > 0, 'campaign_schedule.schedules');
  for (const s of schedules) {
    need(typeof s.name === 'string', 'campaign_schedule.schedules[].name');
    need(/^\d\d:\d\d$/.test(s.timing?.from ?? ''), 'campaign_schedule.schedules[].timing.from');
    need(/^\d\d:\d\d$/.test(s.timing?.to ?? ''), 'campaign_schedule.schedules[].timing.to');
    need(s.days && typeof s.days === 'object', 'campaign_schedule.schedules[].days');
    for (const k of Object.keys(s.days))
      if (!/^[0-6]$/.test(k)) throw bad(`campaign_schedule.schedules[].days has an unknown day '${k}'`);
    need(typeof s.timezone === 'string', 'campaign_schedule.schedules[].timezone');
  }
  if (b.sequences !== undefined) {
    need(Array.isArray(b.sequences), 'sequences');
    for (const seq of b.sequences) {
      need(Array.isArray(seq.steps), 'sequences[].steps');
      for (const st of seq.steps) {
        need(st.type === 'email', 'sequences[].steps[].type');
        need(typeof st.delay === 'number', 'sequences[].steps[].delay');
        need(Array.isArray(st.variants) && st.variants.length > 0, 'sequences[].steps[].variants');
        for (const v of st.variants) {
          need(typeof v.subject === 'string', 'sequences[].steps[].variants[].subject');
          need(typeof v.body === 'string', 'sequences[].steps[].variants[].body');
        }
      }
    }
  }
}

export async function startInstantlyStub(opts: {
  apiKey: string;
  accounts?: InstantlyStubAccount[];
  workspaceName?: string;
}): Promise<InstantlyStub> {
  const state: InstantlyStubState = {
    workspace: { id: randomUUID(), name: opts.workspaceName ?? 'Stub workspace' },
    accounts: new Map((opts.accounts ?? []).map((a) => [a.email, { warmup_status: 0, ...a }])),
    campaigns: new Map(),
    webhooks: [],
    replies: [],
  };
  const requests: RecordedRequest[] = [];

  const accountView = (a: InstantlyStubAccount) => ({
    email: a.email,
    first_name: a.first_name ?? null,
    last_name: a.last_name ?? null,
    daily_limit: a.daily_limit ?? null,
    warmup_status: a.warmup_status ?? 0,
    status: 1,
    organization: state.workspace.id,
  });
  const campaignOf = (id: string | undefined) => {
    const c = id ? state.campaigns.get(id) : undefined;
    if (!c) throw new HttpFail(404, 'Campaign not found');
    return c;
  };
  const campaignView = (c: InstantlyStubCampaign) => ({ id: c.id, ...c.body, status: c.status });

  async function route(method: string, path: string, q: URLSearchParams, body: any): Promise<unknown> {
    if (method === 'GET' && path === '/api/v2/workspaces/current') return state.workspace;
    if (method === 'GET' && path === '/api/v2/accounts') {
      const limit = q.has('limit') ? Number(q.get('limit')) : 100;
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw bad('querystring/limit must be <= 100');
      const all = [...state.accounts.values()].sort((a, b) => a.email.localeCompare(b.email));
      const after = q.get('starting_after');
      const start = after ? all.findIndex((a) => a.email === after) + 1 : 0;
      const items = all.slice(start, start + limit);
      const more = start + limit < all.length;
      return { items: items.map(accountView), next_starting_after: more ? items[items.length - 1]?.email : undefined };
    }
    const acc = /^\/api\/v2\/accounts\/([^/]+)$/.exec(path);
    if (method === 'GET' && acc) {
      const a = state.accounts.get(decodeURIComponent(acc[1] ?? ''));
      if (!a) throw new HttpFail(404, 'Account not found');
      return accountView(a);
    }
    const warm = /^\/api\/v2\/accounts\/warmup\/(enable|disable)$/.exec(path);
    if (method === 'POST' && warm) {
      need(Array.isArray(body?.emails) && body.emails.length > 0, 'emails');
      for (const e of body.emails) {
        const a = state.accounts.get(e);
        if (a) a.warmup_status = warm[1] === 'enable' ? 1 : 0;
      }
      return { id: randomUUID(), status: 'pending', type: `warmup-${warm[1]}` };
    }
    if (method === 'POST' && path === '/api/v2/accounts/warmup-analytics') {
      need(Array.isArray(body?.emails) && body.emails.length > 0, 'emails');
      const aggregate: Record<string, unknown> = {};
      for (const e of body.emails) {
        const w = state.accounts.get(e)?.warmup;
        if (w) aggregate[e] = { ...w, health_score_label: `${w.health_score ?? 0}%` };
      }
      return { email_date_data: {}, aggregate_data: aggregate };
    }
    if (method === 'POST' && path === '/api/v2/campaigns') {
      validateCampaign(body);
      const c: InstantlyStubCampaign = {
        id: randomUUID(),
        name: body.name,
        status: 0,
        body,
        leads: [],
        analytics: {},
        stepAnalytics: [],
      };
      state.campaigns.set(c.id, c);
      return campaignView(c);
    }
    const act = /^\/api\/v2\/campaigns\/([^/]+)\/(activate|pause)$/.exec(path);
    if (method === 'POST' && act) {
      const c = campaignOf(act[1]);
      c.status = act[2] === 'activate' ? 1 : 2;
      return campaignView(c);
    }
    if (method === 'POST' && path === '/api/v2/leads/add') {
      need(body?.campaign_id || body?.list_id, 'campaign_id');
      need(Array.isArray(body.leads), 'leads');
      if (body.leads.length > 1000) throw bad('body/leads must NOT have more than 1000 items');
      const c = campaignOf(body.campaign_id);
      let uploaded = 0;
      let already = 0;
      let invalid = 0;
      for (const l of body.leads) {
        need(typeof l?.email === 'string', 'leads[].email');
        if (!/^[^@\s]+@[^@\s]+$/.test(l.email)) invalid++;
        else if (c.leads.some((x) => x.email === l.email)) already++;
        else {
          c.leads.push(l);
          uploaded++;
        }
      }
      return {
        status: 'success',
        total_sent: body.leads.length,
        leads_uploaded: uploaded,
        already_in_campaign: already,
        invalid_email_count: invalid,
        duplicate_email_count: 0,
      };
    }
    if (method === 'GET' && path === '/api/v2/campaigns/analytics') {
      const id = q.get('id');
      const list = id ? [campaignOf(id)] : [...state.campaigns.values()];
      return list.map((c) => ({ campaign_id: c.id, campaign_name: c.name, campaign_status: c.status, ...c.analytics }));
    }
    if (method === 'GET' && path === '/api/v2/campaigns/analytics/steps') {
      const id = q.get('campaign_id');
      return id ? campaignOf(id).stepAnalytics : [...state.campaigns.values()].flatMap((c) => c.stepAnalytics);
    }
    if (method === 'POST' && path === '/api/v2/emails/reply') {
      need(typeof body?.eaccount === 'string', 'eaccount');
      need(typeof body.reply_to_uuid === 'string', 'reply_to_uuid');
      need(typeof body.subject === 'string', 'subject');
      need(body.body && (typeof body.body.text === 'string' || typeof body.body.html === 'string'), 'body');
      if (!state.accounts.has(body.eaccount)) throw bad(`Account ${body.eaccount} not found in the workspace`);
      const email = { id: randomUUID(), ...body, timestamp_created: new Date().toISOString() };
      state.replies.push(email);
      return email;
    }
    if (method === 'POST' && path === '/api/v2/webhooks') {
      need(typeof body?.target_hook_url === 'string', 'target_hook_url');
      if (body.campaign) campaignOf(body.campaign);
      const hook = { id: randomUUID(), organization: state.workspace.id, status: 1, ...body };
      state.webhooks.push(hook);
      return hook;
    }
    throw new HttpFail(404, `Route ${method}:${path} not found`);
  }

  const server = await listenStub(async ({ req, url, raw, body, send }) => {
    const fail = (status: number, message: string) =>
      send(status, { statusCode: status, error: ERROR_NAMES[status] ?? 'Error', message });
    requests.push(recordOf(req, url, url.pathname, body));
    if (typeof body === 'string') return fail(400, 'Body is not valid JSON');
    // Fastify refuses an empty body declared as JSON.
    if (raw.length === 0 && /json/.test(req.headers['content-type'] ?? ''))
      return fail(400, "Body cannot be empty when content-type is set to 'application/json'");
    if (req.headers.authorization !== `Bearer ${opts.apiKey}`) return fail(401, 'Invalid API key');
    try {
      send(200, await route(req.method ?? 'GET', url.pathname, url.searchParams, body));
    } catch (err) {
      if (err instanceof HttpFail) fail(err.status, err.message);
      else fail(500, String(err));
    }
  });

  return {
    url: server.origin,
    state,
    requests,
    async deliverWebhook(target, event) {
      const campaign = typeof event.campaign_id === 'string' ? state.campaigns.get(event.campaign_id) : undefined;
      const payload = {
        timestamp: new Date().toISOString(),
        workspace: state.workspace.id,
        campaign_name: campaign?.name ?? 'Campaign',
        ...event,
      };
      return deliverJson(target, payload);
    },
    close: server.close,
  };
}
