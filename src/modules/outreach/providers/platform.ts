/**
 * What the outreach endpoints ask of a connected platform (`instantly`: Instantly API v2, `smartlead`: Smartlead's
 * API). Each client speaks its platform's documented wire format; the base URLs are settings (INSTANTLY_API_URL,
 * SMARTLEAD_API_URL). A failure the platform answered is a PlatformError carrying its reason.
 */
export class PlatformError extends Error {
  /** The platform's HTTP status, when it answered. */
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.name = 'PlatformError';
    this.status = status;
  }
}

export interface PlatformAccount {
  externalId: string;
  email: string;
  fromName: string | null;
  dailyLimit: number | null;
  warmupEnabled: boolean | null;
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
  steps: Array<{ subject: string; body: string; delayDays: number }>;
  window: { timezone: string; days: number[]; startHour: number; endHour: number };
  dailyLimit: number;
  /** Sending account addresses. */
  senders: string[];
  stopOnReply: boolean;
  trackOpens: boolean;
}

export interface PlatformLead {
  email: string;
  firstName: string | null;
  lastName: string | null;
  company: string | null;
  customFields: Record<string, string>;
}

export interface PlatformCampaignAnalytics {
  sent: number;
  opened: number;
  replied: number;
  bounced: number;
  unsubscribed: number;
}

export interface PlatformReply {
  externalId: string;
  campaignExternalId: string | null;
  fromEmail: string;
  toEmail: string;
  subject: string;
  bodyText: string;
  receivedAt: string;
  messageId: string | null;
  inReplyTo: string | null;
}

export interface PlatformClient {
  /** The platform's auth check: the workspace's label, or a PlatformError. */
  verify(): Promise<{ accountLabel: string | null }>;
  listAccounts(): Promise<PlatformAccount[]>;
  setWarmup(email: string, enabled: boolean): Promise<void>;
  warmupAnalytics(email: string): Promise<PlatformWarmupAnalytics>;
  createCampaign(input: PlatformCampaignInput): Promise<{ externalId: string }>;
  setCampaignStatus(externalId: string, status: 'active' | 'paused'): Promise<void>;
  addLeads(externalId: string, leads: PlatformLead[]): Promise<{ uploaded: number }>;
  campaignAnalytics(externalId: string): Promise<PlatformCampaignAnalytics>;
  /** A reply in a thread, or a new mail, from one of the platform's accounts. */
  sendEmail(input: {
    from: string;
    to: string;
    subject: string;
    bodyText: string;
    replyToExternalId?: string;
  }): Promise<{ externalId: string }>;
  listReplies(options: { campaignExternalId?: string; limit: number }): Promise<PlatformReply[]>;
}
