/**
 * The token of a live-view URL: it names the view (a row of browser_live_views) and its expiry, HMAC-signed under a
 * key of its own derived from the service's secret material. Nothing secret is stored: the same view and expiry
 * always sign to the same token, so the URL can be answered again, and revoking the row ends it.
 */
import crypto from 'node:crypto';
import { safeEqual } from '../../../shared/crypto.ts';
import { storedId } from '../../../shared/ids.ts';

export interface LiveGrant {
  viewId: string;
  /** Expiry, ms since the epoch. */
  expiresAt: number;
}

export function liveTokenKey(secretMaterial: string): Buffer {
  return Buffer.from(crypto.hkdfSync('sha256', secretMaterial, 'quarry', 'quarry browser live views v1', 32));
}

const sign = (key: Buffer, body: string) => crypto.createHmac('sha256', key).update(body).digest('base64url');

/** `<view id, hex without dashes>.<expiry, base 36>.<signature>`: short, and URL-safe as a path segment. */
export function signLiveToken(key: Buffer, grant: LiveGrant): string {
  const body = `${grant.viewId.replace(/-/g, '')}.${grant.expiresAt.toString(36)}`;
  return `${body}.${sign(key, body)}`;
}

/** The grant of a valid, unexpired token; undefined for anything else. */
export function verifyLiveToken(key: Buffer, token: string, now: number): LiveGrant | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [hex, expiry, signature] = parts as [string, string, string];
  if (!/^[0-9a-f]{32}$/.test(hex) || !/^[0-9a-z]{1,12}$/.test(expiry)) return undefined;
  if (!safeEqual(signature, sign(key, `${hex}.${expiry}`))) return undefined;
  const expiresAt = Number.parseInt(expiry, 36);
  const viewId = storedId(
    `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`,
  );
  if (!viewId || !(expiresAt > now)) return undefined;
  return { viewId, expiresAt };
}
