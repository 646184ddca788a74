import { z } from 'zod';
import { proxyRotationModes, proxyTypes } from '../../db/schema/index.ts';
import { paginationQuery } from '../../shared/pagination.ts';

/** Extra endpoints a profile may rotate through. */
export const MAX_ROTATION_ENDPOINTS = 50;

// A host name or an IP literal (IPv6 without brackets); no scheme, path or credentials.
const host = z
  .string()
  .trim()
  .min(1)
  .max(253)
  .regex(/^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9-]+$|^[0-9A-Fa-f:.]+$/, 'a host name or IP')
  .transform((v) => v.toLowerCase());
const port = z.number().int().min(1).max(65_535);
// RFC 1929 caps SOCKS5 user names and passwords at 255 bytes; HTTP Basic has no such limit, the smaller one holds.
const credential = z.string().min(1).max(255);

export const createProxyProfileBody = z.strictObject({
  name: z.string().trim().min(1).max(200).optional().describe('A label of yours'),
  type: z.enum(proxyTypes).describe('`http`, `https` (TLS to the proxy) or `socks5`'),
  host: host.describe('The proxy host (a name or an IP; private addresses only with ALLOW_PRIVATE_NETWORK)'),
  port,
  auth: z
    .strictObject({
      username: credential.refine((v) => !v.includes(':'), 'cannot contain ":"'),
      password: credential,
    })
    .optional()
    .describe('Proxy credentials (Basic for http/https, RFC 1929 for socks5); the password is stored encrypted'),
  rotation: z
    .strictObject({
      mode: z
        .enum(proxyRotationModes)
        .describe(
          '`per-request`: each request (each browser connection) takes the next endpoint in turn; `per-session`: ' +
            'one endpoint, picked at random, serves a whole crawl, export or browser session',
        ),
      endpoints: z
        .array(z.strictObject({ host, port }))
        .min(1)
        .max(MAX_ROTATION_ENDPOINTS)
        .describe('More endpoints of the same proxy service: same type and credentials as `host`:`port`'),
    })
    .optional()
    .describe('Spread traffic over several endpoints besides `host`:`port`; none: always `host`:`port`'),
  skipTest: z.boolean().default(false).describe('Store without the check request through the proxy (PROXY_CHECK_URL)'),
});
export type CreateProxyProfileInput = z.infer<typeof createProxyProfileBody>;

export const listProxyProfilesQuery = paginationQuery;

export const proxyProfileView = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    type: z.enum(proxyTypes),
    host: z.string(),
    port: z.number().int(),
    auth: z
      .object({ username: z.string(), passwordSet: z.boolean() })
      .nullable()
      .describe('Masked: the user name and whether a password is stored, never the password'),
    rotation: z
      .object({
        mode: z.enum(proxyRotationModes),
        endpoints: z.array(z.object({ host: z.string(), port: z.number().int() })),
      })
      .nullable(),
    checkedAt: z.string().nullable().describe('When the check through the proxy passed; null with skipTest'),
    createdAt: z.string(),
  })
  .meta({ id: 'ProxyProfile' });
export type ProxyProfileView = z.infer<typeof proxyProfileView>;
