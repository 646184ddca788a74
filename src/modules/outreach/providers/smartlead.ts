import { createHash } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { createJsonHttp, hhmm, num, str } from './http.ts';
import {
  type PlatformAccount,
  type PlatformAccountRef,
  type PlatformClient,
  PlatformError,
  type PlatformWebhookEvent,
  type PlatformWebhookParser,
} from './platform.ts';

/**
 * Smartlead API (api.smartlead.ai/api-reference and guides/campaign-setup: campaigns/create, campaigns/{id}/sequences,
 * /schedule, /settings, /email-accounts, /leads, /status, /analytics, /reply-email-thread, /webhooks; email-accounts,
 * email-accounts/{id}/warmup, /warmup-stats; help.smartlead.ai webhook guides for deliveries). The key travels as
 * `?api_key=`, so no message may carry a URL; lists page with `offset` and `limit` (≤ 100).
 */

const PAGE = 100;
const MAX_PAGES = 100;
/** Leads per `POST /campaigns/{id}/leads` (Smartlead caps a request's `lead_list`). */
const LEADS_PER_CALL = 100;

/** Quarry's 1 = Monday … 7 = Sunday as Smartlead's `days_of_the_week`, 0 = Sunday … 6 = Saturday. */
export const smartleadDays = (days: number[]): number[] => [...new Set(days.map((d) => d % 7))].sort((a, b) => a - b);

interface SmartleadAccount {
  id: number | string;
  from_email: string;
  from_name?: string | null;
  message_per_day?: number | string | null;
  warmup_details?: { status?: string | null; warmup_reputation?: string | number | null } | null;
}

const warmupOn = (a: SmartleadAccount | null | undefined): boolean | null => {
  const status = a?.warmup_details?.status;
  return typeof status === 'string' ? status.toUpperCase() === 'ACTIVE' : null;
};

const accountId = (ref: PlatformAccountRef) => encodeURIComponent(ref.externalId);

export function createSmartleadClient(opts: {
  baseUrl: string;
  apiKey: string;
  dispatcher?: Dispatcher;
}): PlatformClient {
  const http = createJsonHttp({
    baseUrl: opts.baseUrl,
    query: { api_key: opts.apiKey },
    dispatcher: opts.dispatcher,
    platform: 'Smartlead',
  });
  const campaignPath = (id: string, rest: string) => `/campaigns/${encodeURIComponent(id)}/${rest}`;

  return {
    async verify() {
      // Smartlead has no "who am I": the cheapest authenticated read stands in for one.
      await http.call('GET', '/email-accounts/', { query: { offset: 0, limit: 1 } });
      return { accountLabel: null };
    },

    async listAccounts() {
      const out: PlatformAccount[] = [];
      for (let page = 0; page < MAX_PAGES; page++) {
        const rows = await http.call<SmartleadAccount[]>('GET', '/email-accounts/', {
          query: { offset: page * PAGE, limit: PAGE },
        });
        const list = Array.isArray(rows) ? rows : [];
        for (const a of list)
          out.push({
            externalId: String(a.id),
            email: a.from_email,
            fromName: str(a.from_name),
            dailyLimit: a.message_per_day === null || a.message_per_day === undefined ? null : num(a.message_per_day),
            warmupEnabled: warmupOn(a),
          });
        if (list.length < PAGE) break;
      }
      return out;
    },

    async setWarmup(account, enabled) {
      await http.call('POST', `/email-accounts/${accountId(account)}/warmup`, { body: { warmup_enabled: enabled } });
    },

    async warmupAnalytics(account) {
      const stats = await http.call<Record<string, unknown>>(
        'GET',
        `/email-accounts/${accountId(account)}/warmup-stats`,
      );
      const acc = await http.call<SmartleadAccount>('GET', `/email-accounts/${accountId(account)}/`);
      // `warmup_reputation` reads like "97%".
      const rep = acc?.warmup_details?.warmup_reputation;
      const score = rep === null || rep === undefined ? Number.NaN : Number.parseFloat(String(rep));
      return {
        email: account.email,
        enabled: warmupOn(acc),
        sent: num(stats?.sent_count),
        landedInbox: num(stats?.inbox_count),
        landedSpam: num(stats?.spam_count),
        received: num(stats?.warmup_email_received_count),
        healthScore: Number.isFinite(score) ? score : null,
      };
    },

    async createCampaign(input) {
      const created = await http.call<{ id?: number | string }>('POST', '/campaigns/create', {
        body: { name: input.name },
      });
      const id = str(created?.id);
      if (!id) throw new PlatformError('Smartlead created the campaign but answered no id');
      await http.call('POST', campaignPath(id, 'sequences'), {
        body: {
          sequences: input.steps.map((s, i) => ({
            seq_number: i + 1,
            seq_delay_details: { delay_in_days: s.delayDays },
            subject: s.subject,
            email_body: s.body,
          })),
        },
      });
      await http.call('POST', campaignPath(id, 'schedule'), {
        body: {
          timezone: input.window.timezone,
          days_of_the_week: smartleadDays(input.window.days),
          start_hour: hhmm(input.window.startHour),
          end_hour: hhmm(input.window.endHour),
          min_time_btw_emails: input.minGapMinutes,
          // Smartlead limits new leads per day per campaign; Quarry's limit is mails per account per day.
          max_new_leads_per_day: input.dailyLimit * Math.max(1, input.senders.length),
        },
      });
      await http.call('POST', campaignPath(id, 'settings'), {
        body: {
          track_settings: input.trackOpens ? [] : ['DONT_TRACK_EMAIL_OPEN'],
          // Smartlead has no "never stop": without stopOnReply the setting is left out.
          ...(input.stopOnReply ? { stop_lead_settings: 'REPLY_TO_AN_EMAIL' } : {}),
        },
      });
      if (input.senders.length > 0)
        await http.call('POST', campaignPath(id, 'email-accounts'), {
          body: {
            email_account_ids: input.senders.map((s) =>
              /^\d+$/.test(s.externalId) ? Number(s.externalId) : s.externalId,
            ),
          },
        });
      return { externalId: id };
    },

    async setCampaignStatus(externalId, status) {
      await http.call('POST', campaignPath(externalId, 'status'), {
        body: { status: status === 'active' ? 'START' : 'PAUSED' },
      });
    },

    async addLeads(externalId, leads) {
      let uploaded = 0;
      for (let i = 0; i < leads.length; i += LEADS_PER_CALL) {
        const res = await http.call<{ upload_count?: number | string }>('POST', campaignPath(externalId, 'leads'), {
          body: {
            lead_list: leads.slice(i, i + LEADS_PER_CALL).map((l) => ({
              email: l.email,
              first_name: l.firstName ?? undefined,
              last_name: l.lastName ?? undefined,
              company_name: l.company ?? undefined,
              custom_fields: l.customFields,
            })),
            settings: {
              ignore_global_block_list: false,
              ignore_unsubscribe_list: false,
              ignore_duplicate_leads_in_other_campaign: false,
            },
          },
        });
        uploaded += num(res?.upload_count);
      }
      return { uploaded };
    },

    async campaignAnalytics(externalId) {
      const a = await http.call<Record<string, unknown>>('GET', campaignPath(externalId, 'analytics'));
      return {
        sent: num(a?.sent_count),
        opened: num(a?.unique_open_count ?? a?.open_count),
        replied: num(a?.reply_count),
        bounced: num(a?.bounce_count),
        unsubscribed: num(a?.unsubscribed_count),
        // The campaign analytics carry no per-step figures.
        steps: null,
      };
    },

    async replyToEmail(input) {
      if (!input.campaignExternalId)
        throw new PlatformError('Smartlead replies in a campaign thread: the campaign is needed');
      const res = await http.call<Record<string, unknown>>(
        'POST',
        campaignPath(input.campaignExternalId, 'reply-email-thread'),
        { body: { email_stats_id: input.replyToExternalId, email_body: input.bodyText, add_signature: true } },
      );
      return { externalId: str(res?.message_id) ?? str(res?.id) };
    },

    async registerWebhook(input) {
      if (!input.campaignExternalId) throw new PlatformError('Smartlead webhooks belong to a campaign: name one');
      const res = await http.call<{ id?: number | string; data?: { id?: number | string } }>(
        'POST',
        campaignPath(input.campaignExternalId, 'webhooks'),
        {
          body: {
            id: null,
            name: 'Quarry',
            webhook_url: input.url,
            event_types: ['EMAIL_SENT', 'EMAIL_OPEN', 'EMAIL_REPLY', 'EMAIL_BOUNCE', 'LEAD_UNSUBSCRIBED'],
            categories: [],
          },
        },
      );
      return { externalId: str(res?.id) ?? str(res?.data?.id) };
    },
  };
}

const SMARTLEAD_KINDS: Record<string, PlatformWebhookEvent['kind']> = {
  EMAIL_SENT: 'sent',
  FIRST_EMAIL_SENT: 'sent',
  EMAIL_OPEN: 'opened',
  EMAIL_REPLY: 'replied',
  EMAIL_BOUNCE: 'bounced',
  LEAD_UNSUBSCRIBED: 'unsubscribed',
};

const obj = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/** Steps beyond this are not a sequence's (a malformed delivery). */
const MAX_STEP = 1000;

/** Smartlead's deliveries carry no event id: a digest of what identifies the event stands in for one. */
export const parseSmartleadWebhook: PlatformWebhookParser = (payload) => {
  if (!payload || typeof payload !== 'object' || Array.isArray(payload))
    throw new PlatformError('A Smartlead webhook body must be a JSON object');
  const p = payload as Record<string, unknown>;
  const type = str(p.event_type);
  if (!type) throw new PlatformError('A Smartlead webhook body must name its event_type');
  const kind = SMARTLEAD_KINDS[type] ?? 'other';
  const reply = obj(p.reply_message);
  const sent = obj(p.sent_message);
  const seq = num(p.sequence_number);
  const leadEmail = str(p.sl_lead_email) ?? str(p.lead_email) ?? str(p.to_email);
  // When it happened (stable across re-deliveries), unlike `event_timestamp` (when it was delivered).
  const happenedAt =
    str(p.time_sent) ?? str(p.time_opened) ?? str(p.time_replied) ?? str(p.time_bounced) ?? str(p.time_unsubscribed);
  const occurredAt = happenedAt ?? str(p.event_timestamp);
  const replyText = kind === 'replied' ? (str(reply.text) ?? str(p.preview_text)) : null;
  // Only what a re-delivery repeats: the same event always has the same id; two replies in one thread do not.
  const digest = createHash('sha256')
    .update(
      JSON.stringify([
        type,
        str(p.campaign_id),
        leadEmail,
        str(p.stats_id),
        str(p.sequence_number),
        happenedAt,
        str(reply.message_id) ?? replyText,
      ]),
    )
    .digest('hex');
  return {
    eventId: `smartlead:${digest}`,
    kind,
    platformType: type,
    leadEmail,
    campaignExternalId: str(p.campaign_id),
    accountEmail: str(p.from_email),
    // Deliveries count sequences from 1.
    step: Number.isInteger(seq) && seq >= 1 && seq <= MAX_STEP ? seq - 1 : null,
    subject: str(p.subject),
    bodyText: kind === 'replied' ? replyText : (str(sent.text) ?? (kind === 'sent' ? null : str(reply.text))),
    // Smartlead replies in a thread by the sent mail's stats id.
    emailExternalId: str(p.stats_id),
    occurredAt,
  };
};
