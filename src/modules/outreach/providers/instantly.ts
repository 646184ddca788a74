import { createHash } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { createJsonHttp, hhmm, num, str } from './http.ts';
import {
  type PlatformAccount,
  type PlatformCampaignInput,
  type PlatformClient,
  PlatformError,
  type PlatformWebhookEvent,
  type PlatformWebhookParser,
} from './platform.ts';

/**
 * Instantly API v2 (developer.instantly.ai: api-reference for workspaces/current, accounts, accounts/warmup/*,
 * accounts/warmup-analytics, campaigns, campaigns/{id}/activate|pause, campaigns/analytics, campaigns/analytics/steps,
 * leads/add, emails/reply, webhooks; guides/webhook-events for deliveries). `Authorization: Bearer <key>`; lists page
 * with `limit` (≤ 100) and `starting_after` → `next_starting_after`; errors answer `{ statusCode, error, message }`.
 */

const PAGE = 100;
/** A runaway cursor (the same page forever) stops here: 100 pages of 100 accounts. */
const MAX_PAGES = 100;

/** Quarry's 1 = Monday … 7 = Sunday as Instantly's `days` object, "0" = Sunday … "6" = Saturday. */
export function instantlyDays(days: number[]): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (let d = 0; d < 7; d++) out[String(d)] = false;
  for (const d of days) out[String(d % 7)] = true;
  return out;
}

/** A step's `delay` on Instantly is the wait before the NEXT step, so each step carries the next one's delayDays. */
function instantlySteps(steps: PlatformCampaignInput['steps']) {
  return steps.map((s, i) => ({
    type: 'email',
    delay: steps[i + 1]?.delayDays ?? 0,
    variants: [{ subject: s.subject, body: s.body }],
  }));
}

interface InstantlyAccount {
  email: string;
  first_name?: string | null;
  last_name?: string | null;
  daily_limit?: number | null;
  /** 1 active, 0 paused, negative: banned or suspended. */
  warmup_status?: number | null;
}

const fullName = (a: InstantlyAccount) => [a.first_name, a.last_name].filter(Boolean).join(' ').trim() || null;

export function createInstantlyClient(opts: {
  baseUrl: string;
  apiKey: string;
  dispatcher?: Dispatcher;
}): PlatformClient {
  const http = createJsonHttp({
    baseUrl: opts.baseUrl,
    headers: { authorization: `Bearer ${opts.apiKey}` },
    dispatcher: opts.dispatcher,
    platform: 'Instantly',
  });

  return {
    async verify() {
      const ws = await http.call<{ name?: string | null }>('GET', '/api/v2/workspaces/current');
      return { accountLabel: str(ws?.name) };
    },

    async listAccounts() {
      const out: PlatformAccount[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_PAGES; page++) {
        const res = await http.call<{ items?: InstantlyAccount[]; next_starting_after?: string | null }>(
          'GET',
          '/api/v2/accounts',
          { query: { limit: PAGE, starting_after: cursor } },
        );
        for (const a of res?.items ?? [])
          out.push({
            externalId: a.email,
            email: a.email,
            fromName: fullName(a),
            dailyLimit: typeof a.daily_limit === 'number' ? a.daily_limit : null,
            warmupEnabled: typeof a.warmup_status === 'number' ? a.warmup_status === 1 : null,
          });
        const next = res?.next_starting_after;
        if (!next || next === cursor || (res?.items ?? []).length === 0) break;
        cursor = next;
      }
      return out;
    },

    async setWarmup(account, enabled) {
      await http.call('POST', `/api/v2/accounts/warmup/${enabled ? 'enable' : 'disable'}`, {
        body: { emails: [account.externalId] },
      });
    },

    async warmupAnalytics(account) {
      const res = await http.call<{ aggregate_data?: Record<string, Record<string, unknown>> }>(
        'POST',
        '/api/v2/accounts/warmup-analytics',
        { body: { emails: [account.externalId] } },
      );
      const agg = res?.aggregate_data?.[account.externalId] ?? {};
      const acc = await http.call<InstantlyAccount>(
        'GET',
        `/api/v2/accounts/${encodeURIComponent(account.externalId)}`,
      );
      const score = agg.health_score;
      return {
        email: account.email,
        enabled: typeof acc?.warmup_status === 'number' ? acc.warmup_status === 1 : null,
        sent: num(agg.sent),
        landedInbox: num(agg.landed_inbox),
        landedSpam: num(agg.landed_spam),
        received: num(agg.received),
        healthScore: score === undefined || score === null ? null : num(score),
      };
    },

    async createCampaign(input) {
      const body = {
        name: input.name,
        campaign_schedule: {
          schedules: [
            {
              name: 'Quarry',
              timing: { from: hhmm(input.window.startHour), to: hhmm(input.window.endHour) },
              days: instantlyDays(input.window.days),
              timezone: input.window.timezone,
            },
          ],
        },
        sequences: [{ steps: instantlySteps(input.steps) }],
        email_list: input.senders.map((s) => s.externalId),
        daily_limit: input.dailyLimit,
        stop_on_reply: input.stopOnReply,
        open_tracking: input.trackOpens,
        email_gap: input.minGapMinutes,
      };
      const res = await http.call<{ id?: string }>('POST', '/api/v2/campaigns', { body });
      const id = str(res?.id);
      if (!id) throw new PlatformError('Instantly created the campaign but answered no id');
      return { externalId: id };
    },

    async setCampaignStatus(externalId, status) {
      const action = status === 'active' ? 'activate' : 'pause';
      await http.call('POST', `/api/v2/campaigns/${encodeURIComponent(externalId)}/${action}`);
    },

    async addLeads(externalId, leads) {
      if (leads.length === 0) return { uploaded: 0 };
      const res = await http.call<{ leads_uploaded?: number }>('POST', '/api/v2/leads/add', {
        body: {
          campaign_id: externalId,
          skip_if_in_campaign: true,
          leads: leads.map((l) => ({
            email: l.email,
            first_name: l.firstName ?? undefined,
            last_name: l.lastName ?? undefined,
            company_name: l.company ?? undefined,
            custom_variables: l.customFields,
          })),
        },
      });
      return { uploaded: num(res?.leads_uploaded) };
    },

    async campaignAnalytics(externalId) {
      const rows = await http.call<Array<Record<string, unknown>>>('GET', '/api/v2/campaigns/analytics', {
        query: { id: externalId },
      });
      const a = (Array.isArray(rows) ? rows.find((r) => r.campaign_id === externalId) : undefined) ?? {};
      const stepRows = await http.call<Array<Record<string, unknown>>>('GET', '/api/v2/campaigns/analytics/steps', {
        query: { campaign_id: externalId },
      });
      // One row per step and variant; `step` is a string (null for events outside a sequence), summed per step.
      const byStep = new Map<number, { step: number; sent: number; opened: number; replied: number }>();
      for (const r of Array.isArray(stepRows) ? stepRows : []) {
        if (r.step === null || r.step === undefined) continue;
        const step = num(r.step);
        const cur = byStep.get(step) ?? { step, sent: 0, opened: 0, replied: 0 };
        cur.sent += num(r.sent);
        cur.opened += num(r.unique_opened ?? r.opened);
        cur.replied += num(r.unique_replies ?? r.replies);
        byStep.set(step, cur);
      }
      return {
        sent: num(a.emails_sent_count),
        opened: num(a.open_count_unique ?? a.open_count),
        replied: num(a.reply_count_unique ?? a.reply_count),
        bounced: num(a.bounced_count),
        unsubscribed: num(a.unsubscribed_count),
        steps: byStep.size > 0 ? [...byStep.values()].sort((x, y) => x.step - y.step) : null,
      };
    },

    async replyToEmail(input) {
      const res = await http.call<{ id?: string }>('POST', '/api/v2/emails/reply', {
        body: {
          eaccount: input.from.externalId,
          reply_to_uuid: input.replyToExternalId,
          subject: input.subject,
          body: { text: input.bodyText },
        },
      });
      return { externalId: str(res?.id) };
    },

    async registerWebhook(input) {
      const res = await http.call<{ id?: string }>('POST', '/api/v2/webhooks', {
        body: {
          name: 'Quarry',
          target_hook_url: input.url,
          event_type: 'all_events',
          ...(input.campaignExternalId ? { campaign: input.campaignExternalId } : {}),
        },
      });
      return { externalId: str(res?.id) };
    },
  };
}

const INSTANTLY_KINDS: Record<string, PlatformWebhookEvent['kind']> = {
  email_sent: 'sent',
  email_opened: 'opened',
  reply_received: 'replied',
  email_bounced: 'bounced',
  lead_unsubscribed: 'unsubscribed',
};

/** Steps beyond this are not a sequence's (a malformed delivery). */
const MAX_STEP = 1000;

/** Instantly's deliveries carry no event id: a digest of what identifies the event stands in for one. */
export const parseInstantlyWebhook: PlatformWebhookParser = (payload) => {
  if (!payload || typeof payload !== 'object' || Array.isArray(payload))
    throw new PlatformError('An Instantly webhook body must be a JSON object');
  const p = payload as Record<string, unknown>;
  const type = str(p.event_type);
  if (!type) throw new PlatformError('An Instantly webhook body must name its event_type');
  const kind = INSTANTLY_KINDS[type] ?? 'other';
  const stepNo = typeof p.step === 'number' ? p.step : typeof p.step === 'string' ? Number(p.step) : Number.NaN;
  const replied = kind === 'replied';
  // Only what a re-delivery repeats (not its timestamp): the same event always has the same id.
  const digest = createHash('sha256')
    .update(
      JSON.stringify([
        type,
        str(p.campaign_id),
        str(p.lead_email),
        str(p.email_id) ?? str(p.step),
        replied ? (str(p.reply_text) ?? str(p.reply_text_snippet)) : null,
      ]),
    )
    .digest('hex');
  return {
    eventId: `instantly:${digest}`,
    kind,
    platformType: type,
    leadEmail: str(p.lead_email),
    campaignExternalId: str(p.campaign_id),
    accountEmail: str(p.email_account),
    // Deliveries count steps from 1.
    step: Number.isInteger(stepNo) && stepNo >= 1 && stepNo <= MAX_STEP ? stepNo - 1 : null,
    subject: replied ? (str(p.reply_subject) ?? str(p.email_subject)) : str(p.email_subject),
    bodyText: replied ? (str(p.reply_text) ?? str(p.reply_text_snippet)) : str(p.email_text),
    emailExternalId: str(p.email_id),
    occurredAt: str(p.timestamp),
  };
};
