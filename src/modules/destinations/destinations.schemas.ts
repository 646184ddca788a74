import { z } from 'zod';
import { destinationPushModes, destinationPushStatuses } from '../../db/schema/index.ts';
import { isoDate } from '../../shared/http.ts';
import { listLeadsQuery } from '../leads/index.ts';

/** Lead ids a push may name at once (larger sets: a `filter`). */
export const MAX_PUSH_IDS = 10_000;

const identifier = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'letters, digits and _ (a PostgreSQL identifier, at most 63)');
const host = z.string().trim().min(1).max(253);
const port = z.int().min(1).max(65_535);

const webhookConfig = z
  .object({
    url: z
      .url({ protocol: /^https?$/ })
      .max(2000)
      // Credentials in the URL would be shown back in the destination, its errors and its events.
      .refine((u) => !new URL(u).username && !new URL(u).password, 'no user:password@ in the URL: sign with the secret')
      .describe('Batches of leads are POSTed here as JSON'),
    secret: z
      .string()
      .regex(/^whsec_[A-Za-z0-9+/=]{16,}$/, 'a Standard Webhooks secret: whsec_ and base64')
      .optional()
      .describe('Signing secret (whsec_…); made for you when absent and shown once in the answer'),
  })
  .strict();

const SSL_MODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'] as const;

/** A postgres:// URL read by Quarry itself: a host, a port, a database, credentials and `sslmode`, nothing else. */
export interface PostgresUrl {
  host: string;
  port: number;
  database?: string;
  user?: string;
  password?: string;
  sslmode?: (typeof SSL_MODES)[number];
}

/**
 * Parses a destination's connection string, or says what is wrong with it. The driver's own parser is not used: it
 * reads files named by `sslcert`, `sslkey` and `sslrootcert` on this server, and takes `host=` (a socket path or
 * another host) from the query string, so a URL could make the service read its own files or go where the SSRF
 * guard never looked.
 */
export function parsePostgresUrl(value: string): PostgresUrl | string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'not a URL';
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') return 'a postgres:// URL';
  if (!url.hostname) return 'names no host';
  const port = url.port ? Number(url.port) : 5432;
  if (!Number.isInteger(port) || port < 1 || port > 65_535) return 'a port from 1 to 65535';
  let sslmode: PostgresUrl['sslmode'];
  for (const [key, val] of url.searchParams) {
    if (key !== 'sslmode') return `the parameter ${key} is not accepted (only sslmode)`;
    if (!(SSL_MODES as readonly string[]).includes(val)) return `sslmode must be one of ${SSL_MODES.join(', ')}`;
    sslmode = val as PostgresUrl['sslmode'];
  }
  const decode = (part: string) => (part ? decodeURIComponent(part) : undefined);
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port,
    database: decode(url.pathname.slice(1)),
    user: decode(url.username),
    password: decode(url.password),
    sslmode,
  };
}

const postgresConfig = z
  .object({
    connectionString: z
      .string()
      .max(2000)
      .regex(/^postgres(ql)?:\/\//, 'a postgres:// URL')
      .optional()
      .describe('postgres://user:password@host:port/database (secret); or host, port, database, user, password'),
    host: host.optional(),
    port: port.optional(),
    database: z.string().min(1).max(63).optional(),
    user: z.string().min(1).max(63).optional(),
    password: z.string().max(1000).optional().describe('Secret'),
    ssl: z.boolean().optional().describe('TLS to the server (verified); default false'),
    schema: identifier.optional().describe('Default public'),
    table: identifier.describe('Created when missing: the lead columns, id and timestamps'),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.connectionString) {
      const parsed = parsePostgresUrl(c.connectionString);
      if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', path: ['connectionString'], message: parsed });
      for (const f of ['host', 'port', 'database', 'user', 'password'] as const)
        if (c[f] !== undefined) ctx.addIssue({ code: 'custom', path: [f], message: 'not with connectionString' });
    } else {
      for (const f of ['host', 'database', 'user'] as const)
        if (c[f] === undefined)
          ctx.addIssue({ code: 'custom', path: [f], message: 'required without connectionString' });
    }
  });

const s3Config = z
  .object({
    bucket: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'an S3 bucket name'),
    region: z.string().regex(/^[a-z0-9-]{2,32}$/, 'a region such as eu-west-1'),
    endpoint: z
      .url({ protocol: /^https?$/ })
      .max(2000)
      .optional()
      .describe('An S3-compatible service; default AWS'),
    forcePathStyle: z.boolean().optional(),
    accessKeyId: z.string().min(1).max(200),
    secretAccessKey: z.string().min(1).max(200).describe('Secret'),
    prefix: z
      .string()
      .max(500)
      .regex(/^[^\\]*$/, 'no backslashes')
      .optional()
      .describe('Objects are <prefix>/<pushId>/part-00001.<format>'),
    format: z.enum(['csv', 'jsonl']).default('jsonl'),
  })
  .strict();

const name = z.string().trim().min(1).max(200);
export const createDestinationBody = z.discriminatedUnion('type', [
  z.object({ name, type: z.literal('webhook'), config: webhookConfig, skipTest: z.boolean().default(false) }),
  z.object({ name, type: z.literal('postgres'), config: postgresConfig, skipTest: z.boolean().default(false) }),
  z.object({ name, type: z.literal('s3'), config: s3Config, skipTest: z.boolean().default(false) }),
]);
export type CreateDestinationInput = z.infer<typeof createDestinationBody>;
export type WebhookConfig = z.infer<typeof webhookConfig>;
export type PostgresConfig = z.infer<typeof postgresConfig>;
export type S3Config = z.infer<typeof s3Config>;

/** The fields of each type that are sealed at rest and never shown again. */
export const SECRET_FIELDS = {
  webhook: ['secret'],
  postgres: ['connectionString', 'password'],
  s3: ['secretAccessKey'],
} as const;

export const leadFilter = listLeadsQuery.omit({ limit: true, cursor: true }).strict();

export const pushBody = z
  .object({
    leadIds: z.array(z.uuid()).min(1).max(MAX_PUSH_IDS).optional().describe('Your leads to push'),
    filter: leadFilter.optional().describe('The leads list’s filter (GET /api/leads): status, company, jobId, …'),
    mode: z.enum(destinationPushModes).default('append'),
  })
  .strict()
  .superRefine((b, ctx) => {
    if ((b.leadIds === undefined) === (b.filter === undefined))
      ctx.addIssue({ code: 'custom', path: ['leadIds'], message: 'give leadIds or filter (one of them)' });
  });
export type PushInput = z.infer<typeof pushBody>;

export const destinationView = z
  .object({
    id: z.string(),
    name: z.string(),
    type: z.enum(['webhook', 'postgres', 's3']),
    config: z.record(z.string(), z.unknown()).describe('The settings given, without the secret ones'),
    secretSet: z.record(z.string(), z.boolean()).describe('Per secret field: whether a value is stored'),
    createdAt: isoDate,
    updatedAt: isoDate,
  })
  .meta({ id: 'Destination' });
export type DestinationView = z.infer<typeof destinationView>;

export const pushView = z
  .object({
    id: z.string(),
    destinationId: z.string(),
    mode: z.enum(destinationPushModes),
    status: z.enum(destinationPushStatuses),
    progress: z.object({
      total: z.int().nullable().describe('Leads to push; null until a filter push has finished'),
      pushed: z.int(),
      failed: z.int(),
      parts: z.int().describe('Batches delivered (S3 objects, webhook requests, table transactions)'),
    }),
    error: z.string().nullable(),
    attempts: z.int(),
    startedAt: isoDate.nullable(),
    finishedAt: isoDate.nullable(),
    createdAt: isoDate,
  })
  .meta({ id: 'DestinationPush' });
export type PushView = z.infer<typeof pushView>;

export const pushParams = z.object({ id: z.string().min(1), pushId: z.string().min(1) });
