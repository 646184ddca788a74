import { z } from 'zod';

export const confirmDeletionBody = z.object({
  token: z
    .string({ error: 'is required' })
    .trim()
    .min(1, 'is required')
    .max(500)
    .describe('The token from the confirmation email'),
});

export const deletionRequestedView = z.object({
  expiresAt: z.string().describe('When the emailed confirmation token stops working (24 hours)'),
});

export const deletionScheduledView = z.object({
  scheduledAt: z.string().describe('When the account and all its data will be erased'),
  gracePeriodDays: z.number().int(),
});

export const deletionStatusView = z
  .object({
    status: z.enum(['none', 'requested', 'scheduled']),
    scheduledAt: z.string().nullable(),
    gracePeriodDays: z.number().int(),
    expiresAt: z.string().optional().describe('While requested: when the confirmation token expires'),
  })
  .meta({ id: 'AccountDeletionStatus' });
