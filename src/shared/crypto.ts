import crypto from 'node:crypto';
import zlib from 'node:zlib';
import { hash as argonHash, verify as argonVerify } from '@node-rs/argon2';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export function base62(bytes: Uint8Array): string {
  let n = BigInt(`0x${Buffer.from(bytes).toString('hex') || '0'}`);
  let out = '';
  while (n > 0n) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out || '0';
}

function base62Fixed(value: number, width: number): string {
  let out = '';
  let n = value;
  while (n > 0) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out.padStart(width, '0');
}

/** Checksum suffix of a token body (CRC32, 6 base62 chars), so scanners can spot real keys offline. */
export const tokenChecksum = (body: string): string => base62Fixed(zlib.crc32(body), 6);

export const sha256 = (value: string): string => crypto.createHash('sha256').update(value).digest('hex');

/** A random token `prefix + base62(32 bytes) + checksum`. */
export function generateToken(prefix: string): string {
  const body = base62(crypto.randomBytes(32)).padStart(43, '0');
  return prefix + body + tokenChecksum(body);
}

/** Format and checksum check, without touching storage. */
export function tokenLooksValid(prefix: string, token: string): boolean {
  if (!token.startsWith(prefix) || token.length !== prefix.length + 49) return false;
  const body = token.slice(prefix.length, -6);
  return /^[0-9A-Za-z]+$/.test(body) && tokenChecksum(body) === token.slice(-6);
}

export const randomUrlToken = (bytes = 32): string => crypto.randomBytes(bytes).toString('base64url');

/** Passwords: argon2id (OWASP parameters: m=19 MiB, t=2, p=1). */
export const hashPassword = (password: string): Promise<string> =>
  argonHash(password, { algorithm: 2, memoryCost: 19456, timeCost: 2, parallelism: 1 });

export async function verifyPassword(hashValue: string, password: string): Promise<boolean> {
  try {
    return await argonVerify(hashValue, password);
  } catch {
    return false;
  }
}

/** Constant-time comparison of two hex/ascii strings of equal meaning. */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && crypto.timingSafeEqual(ab, bb);
}
