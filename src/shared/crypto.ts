import crypto from 'node:crypto';
import path from 'node:path';
import zlib from 'node:zlib';
import { hash as argonHash, verify as argonVerify } from '@node-rs/argon2';
import { readOrCreateFile } from './file-once.ts';

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

// ---- Secrets encrypted at rest (webhook signing secrets; third-party credentials) ----

/** Encrypts and decrypts short secrets with AES-256-GCM under a key derived from SECRET_KEY. */
export interface SecretBox {
  seal(plaintext: string): string;
  /** Throws when the value was sealed under another key (SECRET_KEY changed) or was altered. */
  open(sealed: string): string;
  /** Binary form for larger state (browser profiles and snapshots): `SEALED_BYTES` + iv + tag + ciphertext. */
  sealBytes(plaintext: Uint8Array): Buffer;
  /** Throws as `open` does; `isSealedBytes` tells a sealed value from a legacy plaintext one beforehand. */
  openBytes(sealed: Uint8Array): Buffer;
}

/** The first bytes of a binary sealed value (neither JSON nor gzip starts so). */
const SEALED_BYTES = Buffer.from('QSB1');

export const isSealedBytes = (bytes: Uint8Array): boolean =>
  bytes.length >= SEALED_BYTES.length + 28 && Buffer.from(bytes.subarray(0, SEALED_BYTES.length)).equals(SEALED_BYTES);

const SEALED_PREFIX = 'v1';

export function createSecretBox(keyMaterial: string): SecretBox {
  const key = Buffer.from(crypto.hkdfSync('sha256', keyMaterial, 'quarry', 'quarry secrets at rest v1', 32));
  return {
    seal(plaintext) {
      const iv = crypto.randomBytes(12);
      const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [SEALED_PREFIX, iv, cipher.getAuthTag(), data]
        .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
        .join('.');
    },
    open(sealed) {
      const [version, iv, tag, data] = sealed.split('.');
      if (version !== SEALED_PREFIX || !iv || !tag || data === undefined) throw new Error('not a sealed secret');
      const decipher = crypto.createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      try {
        return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        throw new Error('the secret cannot be decrypted: SECRET_KEY is not the one it was stored under');
      }
    },
    sealBytes(plaintext) {
      const iv = crypto.randomBytes(12);
      const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      return Buffer.concat([SEALED_BYTES, iv, cipher.getAuthTag(), data]);
    },
    openBytes(sealed) {
      if (!isSealedBytes(sealed)) throw new Error('not a sealed value');
      const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
      const at = SEALED_BYTES.length;
      const decipher = crypto.createDecipheriv('aes-256-gcm', key, bytes.subarray(at, at + 12));
      decipher.setAuthTag(bytes.subarray(at + 12, at + 28));
      try {
        return Buffer.concat([decipher.update(bytes.subarray(at + 28)), decipher.final()]);
      } catch {
        throw new Error('the stored state cannot be decrypted: SECRET_KEY is not the one it was stored under');
      }
    },
  };
}

const keyFiles = new Map<string, string>();

/**
 * SECRET_KEY, or else a random key kept in `DATA_DIR/secret.key` (made on first use, mode 0600): enough for
 * one machine; processes on several machines must share one SECRET_KEY (docs/configuration.md, Configuration).
 */
export function secretKeyMaterial(config: { SECRET_KEY?: string; dataDir: string }): string {
  if (config.SECRET_KEY) return config.SECRET_KEY;
  const file = path.join(config.dataDir, 'secret.key');
  let material = keyFiles.get(file);
  if (material) return material;
  material = readOrCreateFile(file, () => crypto.randomBytes(32).toString('base64url'), 0o600);
  keyFiles.set(file, material);
  return material;
}
