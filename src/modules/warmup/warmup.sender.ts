import type { Transporter } from 'nodemailer';
import type { AppDeps } from '../../deps.ts';
import { createSecretBox, secretKeyMaterial } from '../../shared/crypto.ts';
import { AppError } from '../../shared/errors.ts';
import { openSmtpTransport, parseMailboxUrl } from '../../shared/mail/mailbox.ts';
import { type WarmupDomainRow, warmupRepository } from './warmup.repository.ts';
import { LIMITS, scheduleDay, utcDate, volumeOf, WARMUP_DAYS } from './warmup.schedule.ts';
import { bounceRateOf, createWarmupService } from './warmup.service.ts';

/** The header that marks warmup mail (docs/outreach.md "Warmup domains"); its value is the warmup domain's id. */
export const WARMUP_HEADER = 'X-Quarry-Warmup';

/** Consecutive failed sends after which the rest of the day is given up (a wrong password fails every one). */
const MAX_FAILURES_IN_A_ROW = 3;

const SUBJECTS = ['Quick question', 'Following up', 'Notes from today', 'Catching up', 'About next week'];

export interface WarmupRunResult {
  domains: number;
  sent: number;
  completed: number;
}

/**
 * The warmup worker's work (src/workers.ts runs it on its cron): each WARMING domain sends its schedule
 * day's volume once. The day row is claimed first (unique per domain and day), so two runs or processes on the
 * same day send it once; a run that dies mid-day leaves the rest of that day unsent (at most once).
 */
export function createWarmupSender(deps: Pick<AppDeps, 'db' | 'clock' | 'config' | 'logger'>) {
  const repo = warmupRepository(deps.db);
  const box = createSecretBox(secretKeyMaterial(deps.config));

  async function complete(row: WarmupDomainRow): Promise<boolean> {
    return deps.db.transaction(async (tx) => {
      const txRepo = warmupRepository(tx);
      const locked = await txRepo.lock(row.id);
      if (locked?.status !== 'WARMING') return false;
      const now = deps.clock.now();
      await txRepo.update(row.id, { status: 'COMPLETED', completedAt: now, updatedAt: now });
      return true;
    });
  }

  const stillWarming = async (row: WarmupDomainRow) => (await repo.find(row.userId, row.id))?.status === 'WARMING';

  /** Sends today's volume of one domain; answers the mails sent (0 when the day was already claimed). */
  async function sendDay(row: WarmupDomainRow): Promise<{ sent: number; completed: boolean }> {
    const now = deps.clock.now();
    const day = scheduleDay(row, now)!;
    if (day > WARMUP_DAYS) return { sent: 0, completed: await complete(row) };
    // Bounces reported since the last metrics may already be over the limit: recorded as the domain's bounce rate,
    // they pause it (and emit warmup.auto_paused) before any more mail goes out.
    const bounceRate = await bounceRateOf(deps, row);
    if (bounceRate !== null && bounceRate > LIMITS.bounceRate) {
      await createWarmupService(deps).recordMetrics(row.userId, row.id, { bounceRate });
      return { sent: 0, completed: false };
    }
    const target = volumeOf(day);
    const claim = await repo.claimDay(row.id, day, utcDate(now), target);
    if (!claim) return { sent: 0, completed: false };
    const seeds = deps.config.WARMUP_SEED_ADDRESSES;
    const own = row.fromAddress.toLowerCase();
    const pool = [
      ...new Set([...(await repo.poolOf(row.userId, row.id)), ...seeds].map((a) => a.toLowerCase())),
    ].filter((a) => a !== own);
    let sent = 0;
    let failed = 0;
    let error: string | null = null;
    if (!pool.length) error = 'No recipients: no other WARMING domain of yours and no WARMUP_SEED_ADDRESSES';
    else {
      // The URL was checked when it was stored (warmup.schemas.ts), so it parses; the port is the stored one.
      const endpoint = { ...parseMailboxUrl(box.open(row.smtpUrlEncrypted), 'smtp')!, port: row.smtpPort };
      let transport: Transporter;
      try {
        // One connection for the whole day's mail, to the checked address (nodemailer's own timeouts).
        transport = await openSmtpTransport(deps, endpoint, { pool: true, maxConnections: 1, timeoutMs: null });
      } catch (err) {
        // The host does not resolve, or is a private address (the SSRF guard): the day records why.
        if (!(err instanceof AppError)) throw err;
        await repo.recordSends(claim.id, 0, target, err.message, deps.clock.now());
        return { sent: 0, completed: false };
      }
      let inARow = 0;
      try {
        for (let i = 0; i < target; i++) {
          // A pause or an auto-pause stops the sending at once.
          if (!(await stillWarming(row))) break;
          try {
            await transport.sendMail({
              from: row.fromAddress,
              to: pool[i % pool.length],
              subject: `${SUBJECTS[i % SUBJECTS.length]} (${utcDate(now)})`,
              text: `Hello,\n\nThis is message ${i + 1} of ${target} for today.\n\nBest regards\n`,
              headers: { [WARMUP_HEADER]: row.id },
            });
            sent++;
            inARow = 0;
          } catch (err) {
            failed++;
            inARow++;
            error = (err as Error).message.slice(0, 500);
            if (inARow >= MAX_FAILURES_IN_A_ROW) break;
          }
        }
      } finally {
        transport.close();
      }
    }
    await repo.recordSends(claim.id, sent, failed, error, deps.clock.now());
    if (error) deps.logger.warn({ warmupDomainId: row.id, day, sent, failed, error }, 'warmup sending failed');
    const completed = day >= WARMUP_DAYS ? await complete(row) : false;
    return { sent, completed };
  }

  return {
    sendDay,
    /** Every WARMING domain's day, one domain at a time (each is one SMTP connection). */
    async runDue(): Promise<WarmupRunResult> {
      const result: WarmupRunResult = { domains: 0, sent: 0, completed: 0 };
      for (const row of await repo.warming()) {
        try {
          const outcome = await sendDay(row);
          result.domains++;
          result.sent += outcome.sent;
          if (outcome.completed) result.completed++;
        } catch (err) {
          deps.logger.error({ err, warmupDomainId: row.id }, 'warmup day failed');
        }
      }
      return result;
    },
  };
}
