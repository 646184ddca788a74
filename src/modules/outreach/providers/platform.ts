/**
 * What the outreach endpoints ask of a connected platform (`instantly`: Instantly API v2, `smartlead`: Smartlead's
 * API). Each client speaks its platform's documented wire format; the base URLs are settings (INSTANTLY_API_URL,
 * SMARTLEAD_API_URL). A failure the platform answered is a PlatformError carrying its reason.
 *
 * Templates never reach a platform in Quarry's syntax: the service renders each step per lead (variables, fallbacks,
 * spintax) and hands the platform steps that only read the lead's own custom variables (`{{quarry_subject_1}}`), so a
 * mail says on a platform exactly what it would say through the built-in sender.
 */
export class PlatformError extends Error {
  /** The platform's HTTP status, when it answered. */
  readonly status: number | undefined;
  /** The request certainly never reached the platform (no connection was made). */
  readonly unsent: boolean;
  constructor(message: string, status?: number, unsent = false) {
    super(message);
    this.name = 'PlatformError';
    this.status = status;
    this.unsent = unsent;
  }
}

/** The platform certainly did not act on the call: it refused it (a non-2xx answer), or was never reached. */
export const platformRefused = (err: unknown): boolean =>
  err instanceof PlatformError && (err.unsent || (err.status !== undefined && (err.status < 200 || err.status >= 300)));

export interface PlatformAccount {
  externalId: string;
  email: string;
  fromName: string | null;
  dailyLimit: number | null;
  warmupEnabled: boolean | null;
}

/** The account a call is about: platforms name accounts by address (Instantly) or by id (Smartlead). */
export interface PlatformAccountRef {
  externalId: string;
  email: string;
}

export interface PlatformWarmupAnalytics {
  email: string;
  enabled: boolean | null;
  sent: number;
  landedInbox: number;
  landedSpam: number;
  received: number;
  /** The platform's own score (0–100) when it gives one. */
  healthScore: number | null;
}

export interface PlatformCampaignInput {
  name: string;
  /** Subject and body in the platform's own variable syntax (`{{name}}` on both). */
  steps: Array<{ subject: string; body: string; delayDays: number }>;
  /** Local days 1 = Monday … 7 = Sunday, hours [startHour, endHour) in `timezone` (IANA). */
  window: { timezone: string; days: number[]; startHour: number; endHour: number };
  /** Mails per sending account per day. */
  dailyLimit: number;
  /** The sending accounts. */
  senders: PlatformAccountRef[];
  stopOnReply: boolean;
  trackOpens: boolean;
  /** Minimum gap between two sends of an account, minutes (both platforms count in minutes). */
  minGapMinutes: number;
}

export interface PlatformLead {
  email: string;
  firstName: string | null;
  lastName: string | null;
  company: string | null;
  /** String values only; the rendered steps travel here. */
  customFields: Record<string, string>;
}

export interface PlatformCampaignAnalytics {
  sent: number;
  opened: number;
  replied: number;
  bounced: number;
  unsubscribed: number;
  /** Per step (0-based) when the platform gives it, else null. */
  steps: Array<{ step: number; sent: number; opened: number; replied: number }> | null;
}

/** A platform's webhook delivery, reduced to what Quarry acts on. */
export interface PlatformWebhookEvent {
  /** What de-duplicates re-deliveries: the platform's event id, or a digest of what identifies the event. */
  eventId: string;
  kind: 'sent' | 'opened' | 'replied' | 'bounced' | 'unsubscribed' | 'other';
  /** The platform's own event name. */
  platformType: string;
  leadEmail: string | null;
  campaignExternalId: string | null;
  /** The sending account's address. */
  accountEmail: string | null;
  /** 0-based step, when given. */
  step: number | null;
  subject: string | null;
  bodyText: string | null;
  /** The platform's id of the mail (to reply in its thread). */
  emailExternalId: string | null;
  occurredAt: string | null;
}

export interface PlatformClient {
  /** The platform's auth check: the workspace's label, or a PlatformError. */
  verify(): Promise<{ accountLabel: string | null }>;
  listAccounts(): Promise<PlatformAccount[]>;
  setWarmup(account: PlatformAccountRef, enabled: boolean): Promise<void>;
  warmupAnalytics(account: PlatformAccountRef): Promise<PlatformWarmupAnalytics>;
  /** Creates the campaign with its sequence, schedule, limits and senders; it is not started. */
  createCampaign(input: PlatformCampaignInput): Promise<{ externalId: string }>;
  setCampaignStatus(externalId: string, status: 'active' | 'paused'): Promise<void>;
  /** At most 1000 leads per call (the service never sends more). */
  addLeads(externalId: string, leads: PlatformLead[]): Promise<{ uploaded: number }>;
  campaignAnalytics(externalId: string): Promise<PlatformCampaignAnalytics>;
  /** A reply in the thread of the platform's mail `replyToExternalId`, from `from`. */
  replyToEmail(input: {
    from: PlatformAccountRef;
    replyToExternalId: string;
    campaignExternalId: string | null;
    subject: string;
    bodyText: string;
  }): Promise<{ externalId: string | null }>;
  /**
   * Points the platform's webhooks at `url` (which carries Quarry's secret) for the events Quarry acts on; for a
   * platform whose webhooks belong to a campaign, `campaignExternalId` says which.
   */
  registerWebhook(input: { url: string; campaignExternalId?: string }): Promise<{ externalId: string | null }>;
}

/** Parses one webhook body of a platform (already authenticated by the caller); a PlatformError when malformed. */
export type PlatformWebhookParser = (payload: unknown) => PlatformWebhookEvent;
