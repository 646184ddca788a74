import { z } from 'zod';
import { isoDate } from '../../../shared/http.ts';
import { paginationQuery } from '../../../shared/pagination.ts';

export const SESSION_STATUSES = ['STARTING', 'LIVE', 'SLEEPING', 'RELEASED', 'EXPIRED', 'FAILED'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

/** The integrator's own user id (X-Client-Ref and `clientRef`): printable, bounded. */
export const clientRefSchema = z.string().regex(/^[\x21-\x7e]{1,200}$/, '1 to 200 printable ASCII characters');

const viewport = z.strictObject({
  width: z.number().int().min(200).max(3840),
  height: z.number().int().min(200).max(2160),
});

export const metadata = z
  .record(z.string().regex(/^[\w.:-]{1,64}$/, 'keys: 1 to 64 of letters, digits, . : _ -'), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 32, 'at most 32 entries');

/** A timeout in ms: from 1 s to a day. */
const duration = z.number().int().min(1000).max(86_400_000);

const autoSleep = duration.describe(
  'Sleeps by itself after this long with no client and no action (instead of ending idle); the next action or ' +
    'cdpUrl connection wakes it',
);

export const createSessionBody = z
  .strictObject({
    profileId: z.string().min(1).max(100).optional().describe("Start with this browser profile's saved state"),
    persistProfile: z
      .boolean()
      .default(false)
      .describe("With profileId: this session is the profile's one writer (409 PROFILE_LOCKED when it has one)"),
    viewport: viewport.optional(),
    proxyProfileId: z
      .string()
      .min(1)
      .max(100)
      .optional()
      .describe("One of your proxy profiles (404 otherwise): the browser's traffic goes out through it"),
    timeoutMs: duration.optional().describe('Hard timeout; default BROWSER_SESSION_TIMEOUT_MS'),
    idleTimeoutMs: duration.optional().describe('Ends after this long with no client and no action'),
    keepAlive: z.boolean().default(false).describe('No idle timeout (the hard timeout still applies)'),
    autoSleepMs: autoSleep.optional(),
    record: z.boolean().default(false),
    extensionIds: z.array(z.string().min(1).max(100)).max(10).default([]),
    metadata: metadata.default({}),
    clientRef: clientRefSchema.optional(),
  })
  .default({ persistProfile: false, keepAlive: false, record: false, extensionIds: [], metadata: {} });
export type CreateSessionBody = z.infer<typeof createSessionBody>;

export const updateSessionBody = z.strictObject({
  timeoutMs: duration.optional().describe("The new hard timeout, counted from the session's start"),
  extendMs: duration.optional().describe('Moves `expiresAt` this much later'),
  keepAlive: z.boolean().optional(),
  autoSleepMs: autoSleep.nullable().optional().describe('null: never sleeps by itself'),
  metadata: metadata.optional().describe('Replaces the metadata'),
});
export type UpdateSessionBody = z.infer<typeof updateSessionBody>;

export const listSessionsQuery = paginationQuery.extend({
  status: z.enum(SESSION_STATUSES).optional(),
  clientRef: clientRefSchema.optional(),
  metadata: z
    .string()
    .regex(/^[\w.:-]{1,64}=.{0,512}$/, 'key=value')
    .optional()
    .describe('Sessions whose metadata has this key=value'),
});
export type ListSessionsQuery = z.infer<typeof listSessionsQuery>;

export const sessionView = z
  .object({
    id: z.string(),
    status: z.enum(SESSION_STATUSES),
    endReason: z.string().nullable(),
    cdpUrl: z
      .string()
      .nullable()
      .describe(
        'WebSocket URL for Playwright/Puppeteer; null once the session ended. A SLEEPING session has one too: ' +
          'connecting to it wakes the session',
      ),
    cdpUrlExpiresAt: isoDate.nullable(),
    expiresAt: isoDate,
    viewport: viewport,
    keepAlive: z.boolean(),
    timeoutMs: z.number().int(),
    idleTimeoutMs: z.number().int(),
    autoSleepMs: z.number().int().nullable(),
    snapshotId: z.string().nullable().describe('The snapshot of a SLEEPING session (null otherwise)'),
    profileId: z.string().nullable(),
    persistProfile: z.boolean(),
    proxyProfileId: z.string().nullable(),
    record: z.boolean(),
    extensionIds: z.array(z.string()),
    metadata: z.record(z.string(), z.string()),
    clientRef: z.string().nullable(),
    connectedClients: z.number().int().nullable().describe('CDP clients connected now (null on another host)'),
    createdAt: isoDate,
    endedAt: isoDate.nullable(),
  })
  .meta({ id: 'BrowserSession' });
export type SessionView = z.infer<typeof sessionView>;
