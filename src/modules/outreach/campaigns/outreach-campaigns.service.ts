import type { AppDeps } from '../../../deps.ts';
import { QUEUES } from '../../../queue/queues.ts';
import { createSecretBox, secretKeyMaterial } from '../../../shared/crypto.ts';
import { AppError, notFound, validationError } from '../../../shared/errors.ts';
import { findOwned, storedId } from '../../../shared/ids.ts';
import { normalizeEmail } from '../../../shared/mail/address.ts';
import { decodeCursor, pageOf } from '../../../shared/pagination.ts';
import { leadsForOutreach } from '../../leads/index.ts';
import { suppressionOf } from '../../suppressions/index.ts';
import { type ConnectionRow, connectionsRepository, type MailboxRow } from '../connections/connections.repository.ts';
import {
  accountRef,
  clientOf,
  isPlatform,
  type PlatformProvider,
  platformFailure,
  platformLead,
  platformSteps,
  platformWebhookAddress,
} from '../providers/platforms.ts';
import { campaignFigures } from './outreach-campaigns.analytics.ts';
import { type OutreachCampaignRow, outreachCampaignsRepository } from './outreach-campaigns.repository.ts';
import type { CreateOutreachCampaignInput, OutreachCampaignView, SkipReason } from './outreach-campaigns.schemas.ts';
import { leadTemplateVars, requiredVariables } from './templates.ts';

type Deps = Pick<AppDeps, 'db' | 'clock' | 'config' | 'boss'>;

const ratio = (part: number, whole: number) => (whole ? part / whole : null);

/** Outreach campaigns (docs/outreach.md "Outreach"): sequences, states, enrollment gates and figures. */
export function createOutreachCampaignService(deps: Deps) {
  const repo = outreachCampaignsRepository(deps.db);
  const connections = connectionsRepository(deps.db);
  const box = createSecretBox(secretKeyMaterial(deps.config));

  async function viewsOf(rows: OutreachCampaignRow[]): Promise<OutreachCampaignView[]> {
    const counts = await repo.statusCounts(rows.map((r) => r.id));
    return rows.map((r) => ({
      id: r.id,
      connectionId: r.connectionId,
      name: r.name,
      status: r.status,
      steps: r.steps,
      window: r.window,
      dailyLimit: r.dailyLimit,
      mailboxIds: r.mailboxIds,
      stopOnReply: r.stopOnReply,
      minGapSeconds: r.minGapSeconds,
      maxGapSeconds: r.maxGapSeconds,
      trackOpens: r.trackOpens,
      externalId: r.externalId,
      leads: Object.fromEntries(counts.filter((c) => c.campaignId === r.id).map((c) => [c.status, c.n])),
      createdAt: r.createdAt.toISOString(),
      updatedAt: r.updatedAt.toISOString(),
    }));
  }
  const viewOf = async (row: OutreachCampaignRow) => (await viewsOf([row]))[0]!;
  const owned = (userId: string, id: string) => findOwned(id, 'Campaign', (key) => repo.find(userId, key));

  /**
   * A platform campaign is created on the platform first (docs/outreach.md "Outreach", Platforms): its steps read each lead's
   * rendered mails, its schedule, limits and senders are this campaign's. Smartlead's webhooks belong to campaigns,
   * so they are registered here (with PUBLIC_URL set).
   */
  async function createOnPlatform(
    connection: ConnectionRow,
    input: CreateOutreachCampaignInput,
    senders: MailboxRow[],
  ): Promise<string> {
    const provider = connection.provider as PlatformProvider;
    input.steps.forEach((step, i) => {
      for (const part of ['subject', 'body'] as const) {
        const sender = requiredVariables(step[part]).find((v) => v === 'senderName' || v === 'senderEmail');
        if (sender)
          throw validationError(
            `steps.${i}.${part}`,
            `{{${sender}}} is known only to the built-in sender; a platform picks the sender itself`,
          );
      }
    });
    const client = clientOf(deps, box, connection);
    try {
      const { externalId } = await client.createCampaign({
        name: input.name,
        steps: platformSteps(input.steps),
        window: input.window,
        dailyLimit: input.dailyLimit,
        senders: senders.map(accountRef),
        stopOnReply: input.stopOnReply,
        trackOpens: input.trackOpens,
        minGapMinutes: Math.ceil(input.minGapSeconds / 60),
      });
      const hook = platformWebhookAddress(deps, provider, connection.id);
      if (provider === 'smartlead' && hook.url)
        await client.registerWebhook({ url: hook.url, campaignExternalId: externalId });
      return externalId;
    } catch (err) {
      return platformFailure(err, provider, 'connectionId');
    }
  }

  /** A platform campaign's figures are the platform's own (it sends, and counts what happens to its mails). */
  async function platformAnalytics(campaign: OutreachCampaignRow, connection: ConnectionRow, enrolled: number) {
    const figures = await clientOf(deps, box, connection)
      .campaignAnalytics(campaign.externalId!)
      .catch((err) => platformFailure(err, connection.provider as PlatformProvider, 'id'));
    const { steps, ...totals } = figures;
    return {
      campaignId: campaign.id,
      enrolled,
      totals: {
        ...totals,
        // A platform reports what it sent; it has no lost answers to count.
        unconfirmed: 0,
        openRate: ratio(totals.opened, totals.sent),
        replyRate: ratio(totals.replied, totals.sent),
        bounceRate: ratio(totals.bounced, totals.sent),
      },
      perStep: (steps ?? []).map((s) => ({
        step: s.step + 1,
        sent: s.sent,
        unconfirmed: 0,
        opened: s.opened,
        replied: s.replied,
        bounced: null,
        unsubscribed: null,
      })),
      perMailbox: [],
      source: connection.provider as PlatformProvider,
    };
  }

  const connectionOf = async (campaign: OutreachCampaignRow) =>
    (await connections.find(campaign.userId, campaign.connectionId))!;

  /** Wakes the sequencer (docs/outreach.md "Outreach": sends start within seconds, not at the next minute). */
  const wake = () => deps.boss.send(QUEUES.outreachSend, {}, { singletonKey: 'wake', singletonSeconds: 1 });

  return {
    async create(userId: string, input: CreateOutreachCampaignInput): Promise<OutreachCampaignView> {
      const connection = await findOwned(
        input.connectionId,
        'Connection',
        (key) => connections.find(userId, key),
        'connectionId',
      );
      const mailboxes = await connections.mailboxesOf([connection.id]);
      let mailboxIds = mailboxes.map((m) => m.id);
      if (input.mailboxIds) {
        const mine = new Set(mailboxIds);
        mailboxIds = [];
        for (const [i, raw] of input.mailboxIds.entries()) {
          const key = storedId(raw);
          if (!key || !mine.has(key)) throw notFound('Mailbox of this connection', `mailboxIds.${i}`);
          if (!mailboxIds.includes(key)) mailboxIds.push(key);
        }
      }
      const externalId = isPlatform(connection.provider)
        ? await createOnPlatform(
            connection,
            input,
            mailboxes.filter((m) => mailboxIds.includes(m.id)),
          )
        : null;
      const now = deps.clock.now();
      const row = await repo.insert({
        userId,
        connectionId: connection.id,
        externalId,
        name: input.name,
        steps: input.steps,
        window: input.window,
        dailyLimit: input.dailyLimit,
        mailboxIds,
        stopOnReply: input.stopOnReply,
        minGapSeconds: input.minGapSeconds,
        maxGapSeconds: input.maxGapSeconds,
        trackOpens: input.trackOpens,
        createdAt: now,
        updatedAt: now,
      });
      return viewOf(row);
    },

    async list(userId: string, query: { limit: number; cursor?: string; connectionId?: string }) {
      const connection = query.connectionId
        ? await findOwned(query.connectionId, 'Connection', (key) => connections.find(userId, key), 'connectionId')
        : undefined;
      const rows = await repo.list(userId, connection?.id, decodeCursor(query.cursor), query.limit);
      const page = pageOf(rows, query.limit);
      return { campaigns: await viewsOf(page.items), nextCursor: page.nextCursor };
    },

    async get(userId: string, id: string) {
      return viewOf(await owned(userId, id));
    },

    /** DRAFT → ACTIVE, ACTIVE ⇄ PAUSED; anything else is 400 INVALID_STATE. */
    async setStatus(userId: string, id: string, status: 'active' | 'paused'): Promise<OutreachCampaignView> {
      const row = await owned(userId, id);
      const to = status === 'active' ? 'ACTIVE' : 'PAUSED';
      const check = (current: OutreachCampaignRow) => {
        const allowed = to === 'ACTIVE' ? ['DRAFT', 'PAUSED'] : ['ACTIVE'];
        if (!allowed.includes(current.status))
          throw new AppError('INVALID_STATE', `A ${current.status} campaign cannot become ${to}`);
        if (to === 'ACTIVE' && !current.mailboxIds.length)
          throw new AppError('INVALID_STATE', 'The campaign has no mailbox to send from');
      };
      check(row);
      // A platform moves first, outside any transaction (no lock held over its HTTP call): if it refuses, nothing
      // changes here.
      const connection = await connectionOf(row);
      if (isPlatform(connection.provider) && row.externalId) {
        await clientOf(deps, box, connection)
          .setCampaignStatus(row.externalId, status)
          .catch((err) => platformFailure(err, connection.provider as PlatformProvider, 'status'));
      }
      const updated = await deps.db.transaction(async (tx) => {
        const txRepo = outreachCampaignsRepository(tx);
        check((await txRepo.lock(row.id))!);
        return txRepo.update(row.id, { status: to, updatedAt: deps.clock.now() });
      });
      if (updated.status === 'ACTIVE' && !isPlatform(connection.provider)) await wake();
      return viewOf(updated);
    },

    /**
     * Enrolls up to 1000 leads behind the gates (docs/outreach.md "Outreach", Enrollment), each lead left out counted by
     * reason: not the caller's, listed twice or already enrolled, suppressed (address or domain), no usable
     * email (none, invalid, or validated invalid), never validated, unsubscribed, or empty where a template needs
     * a value without a fallback. The rest are enrolled in one statement, their first step due at once.
     */
    async enroll(userId: string, id: string, leadIds: string[]) {
      const campaign = await owned(userId, id);
      const skippedIds: Array<{ id: string; reason: SkipReason; detail?: string }> = [];
      const wanted = new Map<string, string>();
      for (const raw of leadIds) {
        const key = storedId(raw);
        if (!key) skippedIds.push({ id: raw, reason: 'not_found' });
        else if (wanted.has(key)) skippedIds.push({ id: raw, reason: 'duplicate' });
        else wanted.set(key, raw);
      }
      const leads = new Map((await leadsForOutreach(deps.db, userId, [...wanted.keys()])).map((l) => [l.id, l]));
      const enrolled = await repo.enrolledLeadIds(campaign.id, [...leads.keys()]);
      const emails = [...leads.values()].map((l) => (l.email ? normalizeEmail(l.email) : undefined));
      const suppressed = await suppressionOf(
        deps.db,
        userId,
        emails.filter((e): e is string => !!e),
      );
      const required = [
        ...new Set(campaign.steps.flatMap((s) => [...requiredVariables(s.subject), ...requiredVariables(s.body)])),
      ].filter((v) => v !== 'senderName' && v !== 'senderEmail');
      const accepted: Array<{ leadId: string; email: string }> = [];
      for (const [key, raw] of wanted) {
        const lead = leads.get(key);
        const email = lead?.email ? normalizeEmail(lead.email) : undefined;
        const validation = lead?.emailValidation;
        const skip = (reason: SkipReason, detail?: string) => skippedIds.push({ id: raw, reason, detail });
        if (!lead) skip('not_found');
        else if (enrolled.has(key)) skip('duplicate', 'already in this campaign');
        else if (lead.status === 'UNSUBSCRIBED') skip('unsubscribed');
        else if (!email) skip('invalid_email', lead.email ? 'not a valid address' : 'no email');
        else if (suppressed.has(email)) skip('suppressed', suppressed.get(email)?.value);
        else if (lead.status === 'INVALID' || validation?.status === 'invalid')
          skip('invalid_email', validation?.errors?.join(', ') || 'marked invalid');
        else if (!validation || validation.status === 'unknown')
          skip('unvalidated', validation ? 'validation could not decide' : 'validate the email first');
        else {
          const vars = leadTemplateVars(lead);
          const missing = required.filter((v) => !vars[v]?.trim());
          if (missing.length) skip('missing_variable', missing.join(', '));
          else accepted.push({ leadId: lead.id, email });
        }
      }
      const connection = await connectionOf(campaign);
      const onPlatform = isPlatform(connection.provider) && campaign.externalId;
      if (onPlatform && accepted.length) {
        // The platform takes the leads first, each with its mails rendered; they are recorded here only then.
        await clientOf(deps, box, connection)
          .addLeads(
            campaign.externalId!,
            accepted.map((a) => platformLead(leads.get(a.leadId)!, a.email, campaign.steps)),
          )
          .catch((err) => platformFailure(err, connection.provider as PlatformProvider, 'leadIds'));
      }
      const now = deps.clock.now();
      const uploaded = await repo.enroll(
        accepted.map((a) => ({
          userId,
          campaignId: campaign.id,
          leadId: a.leadId,
          email: a.email,
          // A platform sends on its own schedule: the built-in sequencer never picks these up.
          nextSendAt: onPlatform ? null : now,
          createdAt: now,
          updatedAt: now,
        })),
      );
      if (uploaded && campaign.status === 'ACTIVE' && !onPlatform) await wake();
      const skipped: Partial<Record<SkipReason, number>> = {};
      for (const s of skippedIds) skipped[s.reason] = (skipped[s.reason] ?? 0) + 1;
      return { uploaded, skipped, skippedIds };
    },

    async analytics(userId: string, id: string) {
      const campaign = await owned(userId, id);
      const connection = await connectionOf(campaign);
      if (isPlatform(connection.provider) && campaign.externalId)
        return platformAnalytics(
          campaign,
          connection,
          (await repo.statusCounts([campaign.id])).reduce((n, c) => n + c.n, 0),
        );
      const [totalRows, perStep, perMailbox, counts] = await Promise.all([
        campaignFigures(deps.db, campaign.id, 'none'),
        campaignFigures(deps.db, campaign.id, 'step'),
        campaignFigures(deps.db, campaign.id, 'mailbox'),
        repo.statusCounts([campaign.id]),
      ]);
      const zero = { sent: 0, unconfirmed: 0, opened: 0, replied: 0, bounced: 0, unsubscribed: 0 };
      const strip = ({ key: _key, ...figures }: (typeof totalRows)[number]) => figures;
      const totals = totalRows[0] ? strip(totalRows[0]) : zero;
      const mailboxes = new Map(
        (await connections.mailboxesByIds(perMailbox.flatMap((r) => (r.key ? [r.key] : [])))).map((m) => [m.id, m]),
      );
      return {
        campaignId: campaign.id,
        enrolled: counts.reduce((n, c) => n + c.n, 0),
        totals: {
          ...totals,
          openRate: ratio(totals.opened, totals.sent),
          replyRate: ratio(totals.replied, totals.sent),
          bounceRate: ratio(totals.bounced, totals.sent),
        },
        perStep: perStep.filter((r) => r.key !== null).map((r) => ({ step: Number(r.key) + 1, ...strip(r) })),
        perMailbox: perMailbox
          .filter((r) => r.key !== null)
          .map((r) => ({ mailboxId: r.key!, email: mailboxes.get(r.key!)?.email ?? '', ...strip(r) })),
        source: 'quarry' as const,
      };
    },
  };
}

export type OutreachCampaignService = ReturnType<typeof createOutreachCampaignService>;
