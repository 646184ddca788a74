import { inArray } from 'drizzle-orm';
import { rateLimitEvents } from '../../db/schema/index.ts';
import type { AppDeps } from '../../deps.ts';
import { QUEUES } from '../../queue/queues.ts';
import { DAY_MS } from '../../shared/clock.ts';
import { randomUrlToken, sha256 } from '../../shared/crypto.ts';
import { AppError } from '../../shared/errors.ts';
import { rateLimitError } from '../../shared/rate-limit.ts';
import { removeProfileFilesOf } from '../browser/index.ts';
import { orgsBlockingDeletion } from '../organizations/index.ts';
import { deletionRepository } from './account-deletion.repository.ts';

/** Limits (docs/api.md, API conventions): 1 accepted request per day per user; token valid 24 h; 30-day grace period. */
export const DELETION_WINDOW_MS = DAY_MS;
export const DELETION_TOKEN_TTL_MS = DAY_MS;
export const GRACE_PERIOD_DAYS = 30;
const PURGE_BATCH = 500;

type Deps = Pick<AppDeps, 'db' | 'clock' | 'mailer' | 'boss' | 'logger' | 'apiKeys' | 'config'>;

function confirmationMail(email: string, token: string, expiresAt: Date, publicUrl: string | undefined) {
  const base = publicUrl?.replace(/\/$/, '') ?? '';
  return {
    to: email,
    subject: 'Confirm the deletion of your Quarry account',
    text: [
      `A request was made to delete the Quarry account ${email} and all of its data.`,
      '',
      `To confirm, send this token before ${expiresAt.toISOString()} (24 hours):`,
      '',
      `    ${token}`,
      '',
      `    POST ${base}/api/users/deletion/confirm   {"token": "${token}"}`,
      '',
      `After confirmation the account is erased in ${GRACE_PERIOD_DAYS} days; ` +
        `until then POST ${base}/api/users/deletion/cancel stops it.`,
      'If you did not ask for this, ignore this message: nothing is deleted without the token.',
    ].join('\n'),
  };
}

export function createAccountDeletionService(deps: Deps) {
  const repo = deletionRepository(deps.db);
  const invalidToken = () =>
    new AppError('INVALID_TOKEN', 'The confirmation token is invalid or has expired', {
      details: [{ field: 'token', message: 'invalid or expired' }],
    });

  /** Removes what is keyed by the user outside the cascading tables: queued jobs, rate-limit entries, files. */
  async function removeLeftovers(userId: string, email: string) {
    await removeProfileFilesOf(deps.config, userId);
    await deps.db.delete(rateLimitEvents).where(inArray(rateLimitEvents.subject, email ? [userId, email] : [userId]));
    for (const queue of Object.values(QUEUES)) {
      try {
        const jobs = await deps.boss.findJobs(queue, { data: { userId } });
        if (jobs.length)
          await deps.boss.deleteJob(
            queue,
            jobs.map((j) => j.id),
          );
      } catch (err) {
        deps.logger.warn({ err, queue }, 'could not remove queued jobs of a purged user');
      }
    }
  }

  /** 409 while the person is the last owner of an organization others belong to: they hand it over first. */
  async function assertNotLastOwner(userId: string) {
    const blocking = await orgsBlockingDeletion(deps.db, userId);
    if (!blocking.length) return;
    const names = blocking.map((o) => `${o.name} (${o.id})`).join(', ');
    throw new AppError('LAST_OWNER', `You are the last owner of ${names}: make another member an owner first`, {
      details: blocking.map((o) => ({ field: 'organization', message: `last owner of ${o.name} (${o.id})` })),
    });
  }

  return {
    /** Emails a confirmation token (24 h); one accepted request per day. */
    async request(userId: string) {
      await assertNotLastOwner(userId);
      const now = deps.clock.now();
      const token = randomUrlToken(32);
      const expiresAt = new Date(now.getTime() + DELETION_TOKEN_TTL_MS);
      const result = await repo.createWithinLimit({
        userId,
        tokenHash: sha256(token),
        now,
        tokenExpiresAt: expiresAt,
        since: new Date(now.getTime() - DELETION_WINDOW_MS),
        gracePeriodDays: GRACE_PERIOD_DAYS,
      });
      if (result.outcome === 'scheduled') {
        throw new AppError('CONFLICT', 'Account deletion is already scheduled; cancel it first to start over');
      }
      if (result.outcome === 'limited')
        throw rateLimitError(result.oldest.getTime() + DELETION_WINDOW_MS - now.getTime());
      const email = await repo.emailOf(userId);
      try {
        if (!email) throw new Error('user has no email');
        await deps.mailer.send(confirmationMail(email, token, expiresAt, deps.config.PUBLIC_URL));
      } catch (err) {
        // No mail, no way to confirm: the request was not accepted and must not count.
        await repo.remove(result.row.id).catch(() => {});
        deps.logger.error({ err }, 'could not send the deletion confirmation email');
        throw new AppError('SERVICE_UNAVAILABLE', 'The confirmation email could not be sent; try again later');
      }
      return { expiresAt: expiresAt.toISOString() };
    },

    /** requested → scheduled: the grace period starts now. */
    async confirm(userId: string, token: string) {
      await assertNotLastOwner(userId);
      const now = deps.clock.now();
      const scheduledAt = new Date(now.getTime() + GRACE_PERIOD_DAYS * DAY_MS);
      const row = await repo.confirm(userId, sha256(token), now, scheduledAt);
      if (!row) throw invalidToken();
      return { scheduledAt: row.scheduledAt!.toISOString(), gracePeriodDays: row.gracePeriodDays };
    },

    /** Cancels a requested or scheduled deletion. */
    async cancel(userId: string) {
      if (!(await repo.cancelPending(userId, deps.clock.now()))) {
        throw new AppError('NO_PENDING_DELETION', 'No account deletion is pending');
      }
    },

    async status(userId: string) {
      const row = await repo.findPending(userId, deps.clock.now());
      if (!row) return { status: 'none' as const, scheduledAt: null, gracePeriodDays: GRACE_PERIOD_DAYS };
      if (row.status === 'scheduled') {
        return {
          status: 'scheduled' as const,
          scheduledAt: row.scheduledAt!.toISOString(),
          gracePeriodDays: row.gracePeriodDays,
        };
      }
      return {
        status: 'requested' as const,
        scheduledAt: null,
        gracePeriodDays: row.gracePeriodDays,
        expiresAt: row.tokenExpiresAt.toISOString(),
      };
    },

    /**
     * The hourly purge: erases every user whose grace period has ended (by deps.clock), with
     * everything they own, and drops their API keys from every process's cache.
     */
    async purgeDueAccounts(): Promise<{ purged: string[] }> {
      const now = deps.clock.now();
      const purged: string[] = [];
      const failed: string[] = [];
      for (const userId of await repo.dueUserIds(now, PURGE_BATCH)) {
        try {
          const purge = await repo.purgeUser(userId, now);
          if (purge === undefined) continue; // cancelled meanwhile, or an organization still needs them as owner
          purged.push(userId);
          await deps.apiKeys.invalidateUser(userId);
          await removeLeftovers(userId, purge.email);
          // Organizations whose only member they were went with them (docs/organizations.md).
          for (const orgId of purge.orgIds) {
            await deps.apiKeys.invalidateUser(orgId);
            await removeLeftovers(orgId, '');
          }
          deps.logger.info({ userId }, 'account purged after its deletion grace period');
        } catch (err) {
          failed.push(userId);
          deps.logger.error({ err, userId }, 'account purge failed; retried on the next run');
        }
      }
      // The others are done; failing the job makes the failure visible in pg-boss.
      if (failed.length) throw new Error(`account purge failed for ${failed.length} user(s): ${failed.join(', ')}`);
      return { purged };
    },
  };
}

export type AccountDeletionService = ReturnType<typeof createAccountDeletionService>;
