import type { Tx } from '../../db/client.ts';
import type { AppDeps } from '../../deps.ts';
import { createSecretBox, secretKeyMaterial } from '../../shared/crypto.ts';
import { isUniqueViolation } from '../../shared/db-errors.ts';
import { AppError, notFound, validationError } from '../../shared/errors.ts';
import { emitEvent } from '../../shared/events.ts';
import { findOwned } from '../../shared/ids.ts';
import { normalizeHostName } from '../../shared/mail/address.ts';
import { mailboxAddress } from '../../shared/mail/mailbox.ts';
import { checkDomainDns } from '../../shared/mail/sender-dns.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { bouncesFromSender } from '../email-verification/index.ts';
import {
  type WarmupDayRow,
  type WarmupDomainRow,
  type WarmupMetricsRow,
  warmupRepository,
} from './warmup.repository.ts';
import { LIMITS, overLimit, pausedDaysOf, SCHEDULE, scheduleDay, utcDate, volumeOf } from './warmup.schedule.ts';
import type {
  CreateWarmupInput,
  MailboxUrl,
  MetricsInput,
  UpdateWarmupInput,
  WarmupDomainView,
} from './warmup.schemas.ts';

type Deps = Pick<AppDeps, 'db' | 'clock' | 'config'>;

const iso = (d: Date | null) => d?.toISOString() ?? null;

/**
 * The bounce rate of a domain's warmup mail computed from recorded bounces (docs/outreach.md "Email verification"): hard and
 * block bounces of mail from the domain since its latest metrics (or its start) ÷ what it sent on those days. Each
 * metrics record opens a new window, so rates reported after an auto-pause are not held against it forever. Null
 * while nothing was sent or bounced in the window; then the reported rate stands.
 */
export async function bounceRateOf(deps: Deps, domain: WarmupDomainRow): Promise<number | null> {
  if (!domain.startedAt) return null;
  const repo = warmupRepository(deps.db);
  const [latest] = await repo.latestMetrics([domain.id]);
  const since = latest && latest.recordedAt > domain.startedAt ? latest.recordedAt : domain.startedAt;
  const sent = await repo.sentSince(domain.id, utcDate(since));
  const bounced = await bouncesFromSender(deps.db, domain.userId, domain.domain, since);
  if (!sent || !bounced) return null;
  return Math.min(1, bounced / sent);
}

function metricsView(m: WarmupMetricsRow | undefined) {
  if (!m) return null;
  const { openRate, replyRate, bounceRate, spamRate } = m;
  return { openRate, replyRate, bounceRate, spamRate, recordedAt: m.recordedAt.toISOString() };
}

function toView(row: WarmupDomainRow, days: WarmupDayRow[], metrics: WarmupMetricsRow | undefined, now: Date) {
  const day = scheduleDay(row, now);
  const today = day === null ? undefined : days.find((d) => d.day === day);
  const lastError = days.findLast((d) => d.error !== null);
  const view: WarmupDomainView = {
    id: row.id,
    domain: row.domain,
    dkimSelector: row.dkimSelector,
    fromAddress: row.fromAddress,
    mailbox: { host: row.smtpHost, port: row.smtpPort, username: row.smtpUsername },
    status: row.status,
    statusReason: row.statusReason,
    startedAt: iso(row.startedAt),
    pausedAt: iso(row.pausedAt),
    completedAt: iso(row.completedAt),
    day,
    todayTarget: row.status === 'WARMING' && day !== null ? volumeOf(day) : 0,
    todaySent: today?.sent ?? 0,
    totalSent: days.reduce((sum, d) => sum + d.sent, 0),
    lastSendError: lastError ? { day: lastError.day, date: lastError.date, message: lastError.error! } : null,
    schedule: SCHEDULE,
    limits: { ...LIMITS },
    latestMetrics: metricsView(metrics),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
  return view;
}

const invalidState = (message: string) => new AppError('INVALID_STATE', message);

/** Warmup of sending domains (docs/outreach.md "Warmup domains"): settings, DNS checks at start, states and metrics. */
export function createWarmupService(deps: Deps) {
  const repo = warmupRepository(deps.db);
  const box = createSecretBox(secretKeyMaterial(deps.config));

  const owned = (userId: string, id: string) => findOwned(id, 'Warmup domain', (key) => repo.find(userId, key));

  async function viewsOf(rows: WarmupDomainRow[]): Promise<WarmupDomainView[]> {
    const ids = rows.map((r) => r.id);
    const [days, metrics] = await Promise.all([repo.daysOf(ids), repo.latestMetrics(ids)]);
    const now = deps.clock.now();
    return rows.map((r) =>
      toView(
        r,
        days.filter((d) => d.domainId === r.id),
        metrics.find((m) => m.domainId === r.id),
        now,
      ),
    );
  }
  const viewOf = async (row: WarmupDomainRow) => (await viewsOf([row]))[0]!;

  function checkFrom(fromAddress: string, domain: string): string {
    const at = fromAddress.lastIndexOf('@');
    const local = fromAddress.slice(0, at);
    if (normalizeHostName(fromAddress.slice(at + 1)) !== domain)
      throw validationError('fromAddress', `must be an address at ${domain}`);
    return `${local}@${domain}`;
  }

  /** What SPF and DKIM were checked for: the DKIM selector and the mailbox host. */
  const dnsSubject = (row: Pick<WarmupDomainRow, 'dkimSelector' | 'smtpHost'>) => `${row.dkimSelector} ${row.smtpHost}`;

  /** 400 DNS_NOT_READY naming each failed record; answers what was verified. */
  async function assertDnsReady(row: WarmupDomainRow): Promise<string> {
    const { failed } = await checkDomainDns({
      domain: row.domain,
      selector: row.dkimSelector,
      fromAddress: row.fromAddress,
      smtpHost: row.smtpHost,
      servers: deps.config.DNS_SERVERS,
    });
    if (failed.length)
      throw new AppError('DNS_NOT_READY', failed.map((f) => `${f.field.toUpperCase()}: ${f.message}`).join('; '), {
        details: failed,
      });
    return dnsSubject(row);
  }

  /** The SSRF guard on the mailbox host at creation and change (and again at each send): 400 naming smtpUrl. */
  async function assertMailboxAllowed(m: MailboxUrl): Promise<void> {
    if (deps.config.ALLOW_PRIVATE_NETWORK) return;
    const reach = await mailboxAddress(m.host.replace(/^\[|\]$/g, ''), {
      servers: deps.config.DNS_SERVERS,
      allowPrivate: false,
    });
    if ('refused' in reach) throw validationError('smtpUrl', reach.refused);
  }

  const mailboxColumns = (m: MailboxUrl) => ({
    smtpUrlEncrypted: box.seal(m.url),
    smtpHost: m.host,
    smtpPort: m.port,
    smtpUsername: m.username,
  });

  /** Applies a state change under the row lock; `change` sees the locked row and answers the new values. */
  async function transition(
    current: WarmupDomainRow,
    change: (row: WarmupDomainRow, tx: Tx) => Promise<Partial<WarmupDomainRow>>,
  ): Promise<WarmupDomainRow> {
    return deps.db.transaction(async (tx) => {
      const txRepo = warmupRepository(tx);
      const row = await txRepo.lock(current.id);
      // Deleted since it was read.
      if (!row) throw notFound('Warmup domain');
      const values = await change(row, tx);
      return txRepo.update(row.id, { ...values, updatedAt: deps.clock.now() });
    });
  }

  return {
    async create(userId: string, input: CreateWarmupInput): Promise<WarmupDomainView> {
      await assertMailboxAllowed(input.smtpUrl);
      const fromAddress = checkFrom(input.fromAddress, input.domain);
      const now = deps.clock.now();
      try {
        const row = await repo.insert({
          userId,
          domain: input.domain,
          dkimSelector: input.dkimSelector,
          fromAddress,
          ...mailboxColumns(input.smtpUrl),
          createdAt: now,
          updatedAt: now,
        });
        return await viewOf(row);
      } catch (err) {
        if (isUniqueViolation(err))
          throw new AppError('CONFLICT', `${input.domain} is already a warmup domain of yours`, {
            details: [{ field: 'domain', message: 'already a warmup domain of yours' }],
          });
        throw err;
      }
    },

    async list(userId: string, page: { limit: number; cursor?: string }) {
      const rows = await repo.list(userId, decodeCursor(page.cursor), page.limit);
      const { items, nextCursor } = pageOf(rows, page.limit);
      return { warmupDomains: await viewsOf(items), nextCursor };
    },

    async get(userId: string, id: string): Promise<WarmupDomainView> {
      return viewOf(await owned(userId, id));
    },

    /** Settings while not WARMING; `status` pauses (WARMING → PAUSED) and resumes (PAUSED, AUTO_PAUSED → WARMING). */
    async update(userId: string, id: string, input: UpdateWarmupInput): Promise<WarmupDomainView> {
      if (input.smtpUrl) await assertMailboxAllowed(input.smtpUrl);
      // A resume after the DKIM selector or the mailbox host changed checks DNS again (before the row is locked).
      const before = await owned(userId, id);
      const recheck =
        input.status === 'WARMING' && before.startedAt !== null && before.dnsVerifiedFor !== dnsSubject(before);
      const verified = recheck ? await assertDnsReady(before) : before.dnsVerifiedFor;
      const row = await transition(before, async (row, tx) => {
        const values: Partial<WarmupDomainRow> = {};
        const settings = input.dkimSelector !== undefined || input.smtpUrl || input.fromAddress !== undefined;
        if (settings && (row.status === 'WARMING' || input.status === 'WARMING'))
          throw invalidState('Pause the warmup before changing its settings, and resume it in another request');
        if (settings && row.status === 'COMPLETED') throw invalidState('A completed warmup cannot be changed');
        if (input.dkimSelector !== undefined) values.dkimSelector = input.dkimSelector;
        if (input.fromAddress !== undefined) values.fromAddress = checkFrom(input.fromAddress, row.domain);
        if (input.smtpUrl) Object.assign(values, mailboxColumns(input.smtpUrl));
        const now = deps.clock.now();
        if (input.status === 'PAUSED') {
          if (row.status !== 'WARMING') throw invalidState(`Only a WARMING domain can be paused; it is ${row.status}`);
          Object.assign(values, { status: 'PAUSED', pausedAt: now, statusReason: null });
        } else if (input.status === 'WARMING') {
          if (row.status !== 'PAUSED' && row.status !== 'AUTO_PAUSED')
            throw invalidState(
              row.status === 'DRAFT'
                ? 'A DRAFT domain is started with POST /api/warmup-domains/{id}/start'
                : `Only a PAUSED or AUTO_PAUSED domain can be resumed; it is ${row.status}`,
            );
          if (row.status === 'AUTO_PAUSED') {
            const [latest] = await warmupRepository(tx).latestMetrics([row.id]);
            const why = latest ? overLimit(latest) : null;
            if (why) throw invalidState(`Cannot resume: the latest ${why}; send better metrics first`);
          }
          if (dnsSubject(row) !== verified) throw invalidState('The settings changed while DNS was checked; try again');
          const pausedAt = row.pausedAt ?? now;
          const pauseDay = scheduleDay(row, pausedAt)!;
          const sent = Boolean(await warmupRepository(tx).dayRow(row.id, pauseDay));
          Object.assign(values, {
            status: 'WARMING',
            pausedAt: null,
            statusReason: null,
            pausedDays: row.pausedDays + pausedDaysOf(pausedAt, now, sent),
            dnsVerifiedFor: verified,
          });
        }
        return values;
      });
      return viewOf(row);
    },

    async remove(userId: string, id: string): Promise<void> {
      await findOwned(id, 'Warmup domain', (key) => repo.remove(userId, key));
    },

    /** DRAFT → WARMING once SPF and DKIM are right in DNS; 400 DNS_NOT_READY naming the failed record otherwise. */
    async start(userId: string, id: string): Promise<WarmupDomainView> {
      const current = await owned(userId, id);
      if (current.status !== 'DRAFT')
        throw invalidState(`Only a DRAFT domain can be started; it is ${current.status} (PATCH status resumes)`);
      const verified = await assertDnsReady(current);
      const row = await transition(current, async (row) => {
        if (row.status !== 'DRAFT') throw invalidState(`Only a DRAFT domain can be started; it is ${row.status}`);
        if (dnsSubject(row) !== verified) throw invalidState('The settings changed while DNS was checked; start again');
        const now = deps.clock.now();
        return { status: 'WARMING', startedAt: now, pausedDays: 0, pausedAt: null, dnsVerifiedFor: verified };
      });
      return viewOf(row);
    },

    /**
     * Records the rates; a bounce rate above 10 % or a spam rate above 0.5 % moves a WARMING or PAUSED domain to
     * AUTO_PAUSED at once, with `warmup.auto_paused`, in the same transaction.
     */
    async recordMetrics(userId: string, id: string, input: MetricsInput) {
      const now = deps.clock.now();
      const current = await owned(userId, id);
      const computed = await bounceRateOf(deps, current);
      const row = await transition(current, async (row, tx) => {
        const rates = {
          openRate: input.openRate ?? null,
          replyRate: input.replyRate ?? null,
          bounceRate: input.bounceRate ?? computed,
          spamRate: input.spamRate ?? null,
        };
        await warmupRepository(tx).insertMetrics({ domainId: row.id, ...rates, recordedAt: now });
        const why = overLimit(rates);
        if (!why || (row.status !== 'WARMING' && row.status !== 'PAUSED')) return {};
        await emitEvent(tx, userId, 'warmup.auto_paused', {
          domainId: row.id,
          domain: row.domain,
          reason: why,
          bounceRate: rates.bounceRate,
          spamRate: rates.spamRate,
          pausedAt: now.toISOString(),
        });
        return { status: 'AUTO_PAUSED', statusReason: why, pausedAt: row.pausedAt ?? now };
      });
      return viewOf(row);
    },
  };
}

export type WarmupService = ReturnType<typeof createWarmupService>;
