import type { Job } from 'pg-boss';
import type { LeadStatus } from '../../db/schema/index.ts';
import type { AppDeps } from '../../deps.ts';
import { QUEUES } from '../../queue/queues.ts';
import { AppError } from '../../shared/errors.ts';
import { emitEvent } from '../../shared/events.ts';
import { findOwned } from '../../shared/ids.ts';
import { leadRepository } from './leads.repository.ts';
import { distinctIds } from './leads.service.ts';

/** Where a validation outcome moves a lead (unknown: nowhere). */
const statusFor: Record<EmailValidation['status'], LeadStatus | null> = {
  valid: 'VALID',
  invalid: 'INVALID',
  risky: 'RISKY',
  unknown: null,
};

export interface EmailValidationJob {
  userId: string;
  leadId: string;
}

export type LeadValidationDeps = Pick<
  AppDeps,
  'db' | 'clock' | 'config' | 'boss' | 'logger' | 'credits' | 'emailValidator'
>;

/** The email-verification module's verdict on one address (it validates; leads store the outcome). */
type EmailValidator = AppDeps['emailValidator'];
type EmailValidation = Awaited<ReturnType<EmailValidator['validateEmail']>>;

export function createLeadValidationService(deps: LeadValidationDeps, validator: EmailValidator = deps.emailValidator) {
  const repo = leadRepository(deps.db);

  interface Validated {
    leadId: string;
    email: string;
    result: EmailValidation;
  }

  /**
   * Stores validation results of one user, moves their leads' statuses, sends their `lead.validated` events and
   * pays for them in one transaction (README, Webhooks and Credits). Paid for as one charge: all of them, or, with
   * `partial`, as many as the balance pays (the first ones); answers how many were stored. The charge comes last:
   * it locks the user's balance until the commit.
   */
  async function store(userId: string, items: Validated[], partial: boolean): Promise<{ stored: number; at: string }> {
    const now = deps.clock.now();
    const checkedAt = now.toISOString();
    const stored = await deps.db.transaction(async (tx) => {
      const paid = partial
        ? (
            await deps.credits.spend(tx, userId, 'email_validations', items.length, {
              partial: true,
              reason: 'bulk validation',
            })
          ).paidUnits
        : items.length;
      for (const { leadId, email, result } of items.slice(0, paid)) {
        const leadStatus = await leadRepository(tx).saveValidation(
          userId,
          leadId,
          email,
          { ...result, email, checkedAt },
          statusFor[result.status],
          now,
        );
        if (leadStatus)
          await emitEvent(tx, userId, 'lead.validated', {
            leadId,
            email,
            result: result.status,
            leadStatus,
            checkedAt,
          });
      }
      if (!partial)
        await deps.credits.spend(tx, userId, 'email_validations', 1, { reason: `lead ${items[0]!.leadId}` });
      return paid;
    });
    return { stored, at: checkedAt };
  }

  /** Validates the lead's current email (402 first when the balance cannot pay for it), then stores and pays. */
  async function validateAndStore(userId: string, leadId: string, email: string) {
    await deps.credits.assert(deps.db, userId, 'email_validations', 1);
    const result = await validator.validateEmail(email, { userId });
    const { at } = await store(userId, [{ leadId, email, result }], false);
    return { ...result, checkedAt: at };
  }

  return {
    /** POST /api/leads/{id}/validate-email. */
    async validateLead(userId: string, id: string) {
      const lead = await findOwned(id, 'Lead', (key) => repo.findEmail(userId, key));
      if (!lead.email) {
        throw new AppError('NO_EMAIL', 'This lead has no email to validate', {
          details: [{ field: 'email', message: 'the lead has no email' }],
        });
      }
      return validateAndStore(userId, lead.id, lead.email);
    },

    /**
     * POST /api/leads/validate-bulk: one background job per lead with an email; 402 (nothing queued)
     * unless the balance pays for all of them. Each job pays for its own validation when it runs.
     */
    async queueBulk(userId: string, leadIds: string[]) {
      const { lookup, spelled } = distinctIds(leadIds);
      const found = new Map((await repo.findEmails(userId, lookup)).map((r) => [r.id, r.email]));
      const skipped: Array<{ id: string; reason: 'no_email' | 'not_found' }> = [];
      const queued: string[] = [];
      for (const [key, id] of spelled) {
        if (!found.has(key)) skipped.push({ id, reason: 'not_found' });
        else if (!found.get(key)) skipped.push({ id, reason: 'no_email' });
        else queued.push(key);
      }
      if (queued.length) {
        await deps.credits.assert(deps.db, userId, 'email_validations', queued.length);
        await deps.boss.insert(
          QUEUES.emailValidation,
          queued.map((leadId) => ({ data: { userId, leadId } satisfies EmailValidationJob })),
        );
      }
      return { totalRequested: spelled.size, totalQueued: queued.length, skipped };
    },

    /**
     * Worker body: validates each lead of the batch at once (they share the per-process DNS and probe caches),
     * then stores each user's results in one transaction with one charge. When the balance runs out part-way,
     * the results it paid for are stored and the other jobs fail saying so.
     */
    async runJobs(jobs: Array<Job<EmailValidationJob>>) {
      const failed = (id: string, err: unknown) => ({
        id,
        status: 'failed' as const,
        output: { message: String((err as Error).message ?? err) },
      });
      const outcomes = new Map<string, ReturnType<typeof failed> | { id: string; status: 'completed' }>();
      const byUser = new Map<string, Array<Validated & { jobId: string }>>();
      await Promise.all(
        jobs.map(async (job) => {
          try {
            const { userId, leadId } = job.data;
            const lead = await repo.findEmail(userId, leadId);
            // Deleted since, or its email removed: nothing to validate.
            if (!lead?.email) return void outcomes.set(job.id, { id: job.id, status: 'completed' });
            // Out of credits: no work is done (the bulk request checked the balance for all, but it may have been
            // spent since).
            await deps.credits.assert(deps.db, userId, 'email_validations', 1);
            const result = await validator.validateEmail(lead.email, { userId });
            const list = byUser.get(userId) ?? [];
            list.push({ jobId: job.id, leadId, email: lead.email, result });
            byUser.set(userId, list);
          } catch (err) {
            deps.logger.warn({ err, jobId: job.id }, 'email validation job failed');
            outcomes.set(job.id, failed(job.id, err));
          }
        }),
      );
      for (const [userId, items] of byUser) {
        try {
          const { stored } = await store(userId, items, true);
          for (const [i, item] of items.entries()) {
            outcomes.set(
              item.jobId,
              i < stored
                ? { id: item.jobId, status: 'completed' }
                : failed(item.jobId, 'Out of credits: this validation was not stored (buy more credits and retry)'),
            );
          }
        } catch (err) {
          deps.logger.warn({ err, userId }, 'email validation results could not be stored');
          for (const item of items) outcomes.set(item.jobId, failed(item.jobId, err));
        }
      }
      return jobs.map((job) => outcomes.get(job.id)!);
    },
  };
}
