import type { Job } from 'pg-boss';
import type { EmailValidationResult, LeadStatus } from '../../db/schema/index.ts';
import type { AppDeps } from '../../deps.ts';
import { QUEUES } from '../../queue/queues.ts';
import { createEmailValidator, type EmailValidation, type EmailValidator } from '../../shared/email/validate.ts';
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

export type LeadValidationDeps = Pick<AppDeps, 'db' | 'clock' | 'config' | 'boss' | 'logger' | 'credits'>;

export function createLeadValidationService(
  deps: LeadValidationDeps,
  validator: EmailValidator = createEmailValidator(deps),
) {
  const repo = leadRepository(deps.db);

  /**
   * Validates the lead's current email (402 first when the balance cannot pay for it), then stores the
   * result, moves the status and pays for the validation in one transaction.
   */
  async function validateAndStore(userId: string, leadId: string, email: string) {
    await deps.credits.assert(deps.db, userId, 'email_validations', 1);
    const result = await validator.validateEmail(email, { userId });
    const now = deps.clock.now();
    const stored: EmailValidationResult = { ...result, email, checkedAt: now.toISOString() };
    // The charge, the result and its `lead.validated` event (README, Webhooks) commit together. The charge
    // comes last: it locks the user's balance until the commit, and a bulk run's validations all wait on it.
    await deps.db.transaction(async (tx) => {
      const leadStatus = await leadRepository(tx).saveValidation(
        userId,
        leadId,
        email,
        stored,
        statusFor[result.status],
        now,
      );
      if (leadStatus)
        await emitEvent(tx, userId, 'lead.validated', {
          leadId,
          email,
          result: result.status,
          leadStatus,
          checkedAt: stored.checkedAt,
        });
      await deps.credits.spend(tx, userId, 'email_validations', 1, { reason: `lead ${leadId}` });
    });
    return { ...result, checkedAt: stored.checkedAt };
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

    /** Worker body: validates each lead of the batch (they share the per-process DNS cache). */
    async runJobs(jobs: Array<Job<EmailValidationJob>>) {
      return Promise.all(
        jobs.map(async (job) => {
          try {
            const { userId, leadId } = job.data;
            const lead = await repo.findEmail(userId, leadId);
            // Deleted since, or its email removed: nothing to validate.
            if (lead?.email) await validateAndStore(userId, leadId, lead.email);
            return { id: job.id, status: 'completed' as const };
          } catch (err) {
            deps.logger.warn({ err, jobId: job.id }, 'email validation job failed');
            return {
              id: job.id,
              status: 'failed' as const,
              output: { message: String((err as Error).message ?? err) },
            };
          }
        }),
      );
    },
  };
}
