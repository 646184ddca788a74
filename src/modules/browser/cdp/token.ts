/**
 * The token of a `cdpUrl`: short-lived, HMAC-signed under a key derived from the service's secret material, bound
 * to one session, its user, its clientRef and the API key that asked for it (refused once that key is revoked). It is never the API key, so a cdpUrl can be handed to a browser
 * library or another machine and expires by itself.
 */
import crypto from 'node:crypto';
import { z } from 'zod';
import { safeEqual } from '../../../shared/crypto.ts';

export const CDP_TOKEN_TTL_MS = 10 * 60_000;

export interface CdpGrant {
  sessionId: string;
  userId: string;
  clientRef: string | null;
  /** The API key of the request that minted it: the token is refused once that key is revoked or expired. */
  keyId: string | null;
  /** Expiry, ms since the epoch. */
  expiresAt: number;
}

const grantSchema = z.object({
  s: z.string(),
  u: z.string(),
  r: z.string().nullable(),
  k: z.string().nullable(),
  e: z.number(),
});

export function cdpTokenKey(secretMaterial: string): Buffer {
  return Buffer.from(crypto.hkdfSync('sha256', secretMaterial, 'quarry', 'quarry browser cdp tokens v1', 32));
}

const sign = (key: Buffer, body: string) => crypto.createHmac('sha256', key).update(body).digest('base64url');

export function signCdpToken(key: Buffer, grant: CdpGrant): string {
  const body = Buffer.from(
    JSON.stringify({ s: grant.sessionId, u: grant.userId, r: grant.clientRef, k: grant.keyId, e: grant.expiresAt }),
  ).toString('base64url');
  return `${body}.${sign(key, body)}`;
}

/** The grant of a valid, unexpired token; undefined for anything else. */
export function verifyCdpToken(key: Buffer, token: string, now: number): CdpGrant | undefined {
  const [body, signature, extra] = token.split('.');
  if (!body || !signature || extra !== undefined || !safeEqual(signature, sign(key, body))) return undefined;
  let parsed: z.infer<typeof grantSchema>;
  try {
    parsed = grantSchema.parse(JSON.parse(Buffer.from(body, 'base64url').toString('utf8')));
  } catch {
    return undefined;
  }
  if (parsed.e <= now) return undefined;
  return { sessionId: parsed.s, userId: parsed.u, clientRef: parsed.r, keyId: parsed.k, expiresAt: parsed.e };
}
