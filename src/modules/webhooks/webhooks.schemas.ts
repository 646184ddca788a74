import { z } from 'zod';
import { webhookDeliveryStatuses } from '../../db/schema/index.ts';
import { EVENT_TYPES } from '../../shared/events.ts';
import { paginationQuery } from '../../shared/pagination.ts';

const webhookUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
  .max(2000)
  .describe('Where events are POSTed; it must not resolve to a private address (unless ALLOW_PRIVATE_NETWORK)');
const eventTypes = z
  .array(z.enum(EVENT_TYPES))
  .min(1)
  .max(EVENT_TYPES.length)
  .transform((types) => [...new Set(types)])
  .describe('The event types delivered to this endpoint');
const description = z.string().trim().max(500).nullable();

export const createWebhookBody = z.object({
  url: webhookUrl,
  eventTypes,
  description: description.optional(),
});
export type CreateWebhookInput = z.infer<typeof createWebhookBody>;

export const updateWebhookBody = z
  .object({
    url: webhookUrl.optional(),
    eventTypes: eventTypes.optional(),
    description: description.optional(),
    enabled: z.boolean().optional().describe('false pauses deliveries; true re-enables a disabled endpoint'),
    rotateSecret: z
      .boolean()
      .optional()
      .describe('true: a new secret (answered once); the old one keeps signing too for 24 hours'),
  })
  .refine((body) => Object.values(body).some((v) => v !== undefined), { message: 'nothing to update' });
export type UpdateWebhookInput = z.infer<typeof updateWebhookBody>;

export const webhookHealthView = z
  .object({
    successRate: z
      .number()
      .nullable()
      .describe('Share of the last 100 attempts (at most) answered 2xx, 0–1; null before the first attempt'),
    recentAttempts: z.int().describe('Attempts the success rate is computed over'),
    lastSuccessAt: z
      .string()
      .nullable()
      .describe('Kept to the second: the successes of a busy endpoint are not each written'),
    lastFailureAt: z.string().nullable(),
    lastFailureReason: z.string().nullable(),
    failingSince: z.string().nullable().describe('Failing without a success since then; 5 days of it disable it'),
  })
  .meta({ id: 'WebhookHealth' });

export const webhookView = z
  .object({
    id: z.string(),
    url: z.string(),
    description: z.string().nullable(),
    eventTypes: z.array(z.string()),
    enabled: z.boolean(),
    disabledReason: z.string().nullable().describe('Why it was disabled: by you, a 410 answer, or 5 days failing'),
    disabledAt: z.string().nullable(),
    previousSecretExpiresAt: z
      .string()
      .nullable()
      .describe('After a rotation: until when the previous secret signs too'),
    health: webhookHealthView,
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Webhook' });
export type WebhookView = z.infer<typeof webhookView>;

export const webhookWithSecretView = webhookView
  .extend({ secret: z.string().describe('The signing secret `whsec_…`: shown once, stored encrypted') })
  .meta({ id: 'WebhookWithSecret' });

export const webhookAttemptView = z
  .object({
    attempt: z.int().describe('1 for the first try of a schedule (a replay starts a new schedule)'),
    at: z.string(),
    success: z.boolean(),
    statusCode: z.int().nullable().describe('null when no answer came (connection error, timeout, refused URL)'),
    latencyMs: z.int(),
    responseBody: z.string().nullable().describe('The first 1 KB of the answer'),
    error: z.string().nullable(),
    nextRetryAt: z.string().nullable().describe('When the next attempt is due; null when none follows'),
  })
  .meta({ id: 'WebhookAttempt' });

export const webhookDeliveryView = z
  .object({
    id: z.string(),
    eventId: z.string().describe('The `webhook-id` header of every attempt'),
    eventType: z.string(),
    status: z.enum(webhookDeliveryStatuses),
    attemptCount: z.int(),
    nextAttemptAt: z.string().nullable(),
    attempts: z.array(webhookAttemptView).describe('Oldest first; the 20 latest'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'WebhookDelivery' });
export type WebhookDeliveryView = z.infer<typeof webhookDeliveryView>;

export const listDeliveriesQuery = paginationQuery.extend({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  status: z.enum(webhookDeliveryStatuses).optional(),
  eventType: z.enum(EVENT_TYPES).optional(),
});
export type ListDeliveriesQuery = z.infer<typeof listDeliveriesQuery>;

export const deliveryParams = z.object({ deliveryId: z.string().min(1) });
