import { z } from 'zod';
import { EVENT_TYPES, type EventType } from './events.ts';

/**
 * The `data` of each event type, as receivers get it in `{ type, timestamp, data }` (docs/webhooks-and-credits.md, Webhooks). The
 * OpenAPI document lists them under `webhooks`; sections that emit an event later may add fields.
 */
const id = z.uuid();
const time = z.iso.datetime({ offset: true });
const jobBase = { jobId: id, sourceId: id, name: z.string() };
const jobCounts = { leadsFound: z.int(), pagesVisited: z.int(), pagesFailed: z.int() };
const destinationPush = z.object({
  destinationId: id.describe('The destination (GET /api/destinations/{id})'),
  pushId: id.describe('The push (GET /api/destinations/{id}/pushes/{pushId})'),
  mode: z.enum(['append', 'upsert']),
  pushed: z.int().describe('Leads delivered'),
  failed: z.int().describe('Given lead ids that named no lead any more'),
  error: z.string().nullable(),
  finishedAt: time,
});

export const eventDataSchemas = {
  'job.started': z
    .object({ ...jobBase, attempt: z.int().describe('1 for the first run; more after a worker crash or a retry') })
    .describe('A scraping job started running on a worker.'),
  'job.completed': z
    .object({ ...jobBase, ...jobCounts, startedAt: time.nullable(), finishedAt: time })
    .describe('A scraping job finished; its leads are stored.'),
  'job.failed': z
    .object({ ...jobBase, ...jobCounts, error: z.string(), finishedAt: time })
    .describe('A scraping job failed (it can be retried with POST /api/jobs/{id}/retry).'),
  'lead.created': z
    .object({
      leadIds: z.array(id).describe('The leads stored by one write: a batch of a job, or one lead made by hand'),
      count: z.int(),
      jobId: id.nullable(),
      sourceId: id.nullable(),
    })
    .describe('Leads were stored: one event per batch, not one per lead.'),
  'lead.validated': z
    .object({
      leadId: id,
      email: z.string(),
      result: z.enum(['valid', 'risky', 'invalid', 'unknown']),
      leadStatus: z.string().describe('The lead status after validation'),
      checkedAt: time,
    })
    .describe("A lead's email was validated."),
  'export.completed': z
    .object({ exportId: id, format: z.string(), fileName: z.string(), downloadExpiresAt: time, completedAt: time })
    .describe('A data export is ready for download (GET /api/users/export/download).'),
  'matching.run.completed': z
    .object({
      runId: id,
      ruleId: id,
      total: z.int(),
      processed: z.int(),
      matched: z.int(),
      failed: z.int(),
      finishedAt: time,
    })
    .describe('A matching rule finished running over its profiles.'),
  'credits.low': z
    .looseObject({ balance: z.number(), threshold: z.number() })
    .describe('The credit balance fell below the low-balance threshold.'),
  'webhook.test': z
    .object({ endpointId: id, message: z.string() })
    .describe('Sent by POST /api/webhooks/{id}/test to that endpoint only.'),
  'email.bounced': z
    .looseObject({
      email: z.string(),
      leadId: id.nullable().optional(),
      bounceType: z.enum(['hard', 'soft', 'block']),
      bounceId: id.optional(),
      status: z.string().optional().describe('RFC 3463 enhanced status'),
      smtpCode: z.number().int().nullable().optional(),
      diagnostic: z.string().nullable().optional(),
      campaignId: id.nullable().optional(),
      senderDomain: z.string().nullable().optional().describe('What a block counts against'),
    })
    .describe('An email bounced (POST /api/email-verification/bounces); once per bounce, duplicates send nothing.'),
  'email.replied': z
    .looseObject({
      email: z.string().describe('Who replied'),
      leadId: id.nullable().optional(),
      campaignId: id.nullable().optional().describe('The outreach campaign of the mail answered'),
      messageId: id.optional().describe('The reply in GET /api/outreach/emails'),
      threadId: z.string().optional().describe('The Message-ID of the thread’s first mail'),
      subject: z.string().optional(),
      receivedAt: time.optional(),
    })
    .describe('A lead replied to an outreach email (read from the mailbox over IMAP; auto-replies do not count).'),
  'warmup.auto_paused': z
    .object({
      domainId: id.describe('The warmup domain (GET /api/warmup-domains/{id})'),
      domain: z.string(),
      reason: z.string().describe('The rate over its limit, e.g. "bounce rate 12 % is above 10 %"'),
      bounceRate: z.number().nullable().describe('The recorded rates, fractions 0–1'),
      spamRate: z.number().nullable(),
      pausedAt: time,
    })
    .describe('Warmup of a sending domain was paused automatically: its bounce or spam rate went over the limit.'),
  'browser.session.ended': z
    .looseObject({
      sessionId: id,
      status: z.enum(['RELEASED', 'EXPIRED', 'FAILED']),
      endReason: z.string().describe('released, timeout, idle, the service stopped, or why Chromium died'),
      clientRef: z.string().nullable(),
      metadata: z.record(z.string(), z.string()),
      minutes: z.int().describe('Browser minutes charged (started minutes of each live part; 0 when it never ran)'),
      createdAt: time,
      endedAt: time,
    })
    .describe('A cloud browser session ended.'),
  'browser.live.control': z
    .looseObject({
      sessionId: id,
      liveViewId: id,
      action: z.enum(['take', 'release']).describe('take: a person took control; release: handed it back'),
      clientRef: z.string().nullable(),
      at: time,
    })
    .describe('A viewer of an interact live view took control of a browser session, or handed it back.'),
  'markdown_export.completed': z
    .object({
      exportId: id.describe('The export (GET /api/markdown-exports/{id})'),
      startUrl: z.string(),
      pagesDone: z.int().describe('Pages exported'),
      pagesFailed: z.int().describe('Pages that failed (POST /api/markdown-exports/{id}/retry fetches them again)'),
      startedAt: time.nullable(),
      finishedAt: time,
    })
    .describe('A markdown export finished: its pages can be read and downloaded.'),
  'destination.push.completed': destinationPush.describe('A push of leads to a destination delivered every batch.'),
  'destination.push.failed': destinationPush.describe(
    'A push of leads stopped on an error (`error`); POST /api/destinations/{id}/pushes/{pushId}/retry resumes it.',
  ),
} satisfies Record<EventType, z.ZodType>;

/** The body of a delivery of `type`. */
export const eventEnvelopeSchema = (type: EventType) =>
  z.object({
    type: z.literal(type),
    timestamp: time.describe('When the event happened'),
    data: eventDataSchemas[type],
  });

type JsonObject = Record<string, unknown>;

/** Drops what zod spells out that the format already says (uuid and date-time regexes, safe-integer bounds). */
function plain(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) plain(item);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  const o = node as JsonObject;
  if (o.format === 'uuid' || o.format === 'date-time') delete o.pattern;
  if (o.type === 'integer' && o.minimum === Number.MIN_SAFE_INTEGER) delete o.minimum;
  if (o.type === 'integer' && o.maximum === Number.MAX_SAFE_INTEGER) delete o.maximum;
  for (const value of Object.values(o)) plain(value);
}

const HEADERS = [
  ['webhook-id', 'The event id: the same on every retry and replay (de-duplicate on it)'],
  ['webhook-timestamp', 'Seconds since the epoch when this attempt was signed'],
  [
    'webhook-signature',
    'Space-separated `v1,<base64 HMAC-SHA256 of id.timestamp.body>`; two entries during a secret rotation',
  ],
] as const;

/** The OpenAPI 3.1 `webhooks` section: one operation per event type, with its payload schema. */
export function openApiWebhooks(): JsonObject {
  return Object.fromEntries(
    EVENT_TYPES.map((type) => {
      const schema = z.toJSONSchema(eventEnvelopeSchema(type), { io: 'output' }) as JsonObject;
      delete schema.$schema;
      plain(schema);
      const name = type.replace(/[._](\w)/g, (_m, c: string) => c.toUpperCase());
      return [
        type,
        {
          post: {
            operationId: `${name}Webhook`,
            tags: ['Webhooks'],
            summary: type,
            description: `${eventDataSchemas[type].description ?? ''} Verify the signature before trusting it.`,
            security: [],
            parameters: HEADERS.map(([header, description]) => ({
              name: header,
              in: 'header',
              required: true,
              description,
              schema: { type: 'string' },
            })),
            requestBody: { required: true, content: { 'application/json': { schema } } },
            responses: {
              '200': { description: 'Any 2xx: delivered' },
              '410': { description: 'Gone: the endpoint is disabled at once' },
              default: { description: 'Anything else (or no answer in 10 s): retried on the schedule' },
            },
          },
        },
      ];
    }),
  );
}
