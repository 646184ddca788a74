import crypto from 'node:crypto';

/** A new signing secret: `whsec_` and 32 random bytes in base64, the Standard Webhooks form. */
export const newSigningSecret = (): string => `whsec_${crypto.randomBytes(32).toString('base64')}`;

const keys = new Map<string, crypto.KeyObject>();
const MAX_KEYS = 10_000;

/**
 * The HMAC key of a `whsec_…` secret (its base64 part, decoded), kept per secret as a KeyObject: given a Buffer,
 * createHmac builds one on every call, six times the cost of the HMAC itself.
 */
function keyOf(secret: string): crypto.KeyObject {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size >= MAX_KEYS) keys.delete(keys.keys().next().value!);
    const raw = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
    keys.set(secret, (key = crypto.createSecretKey(raw)));
  }
  return key;
}

/**
 * The `webhook-signature` header: one `v1,<signature>` per secret, space-separated (two while a rotation's
 * overlap lasts, so receivers holding either secret verify it). The Standard Webhooks signature, HMAC-SHA256 of
 * `id.timestamp.body` in base64, computed with node:crypto (the `standardwebhooks` package hashes in JavaScript,
 * a good part of a delivery's cost at loopback speed); the tests verify it with that package.
 */
export function signatureHeader(secrets: string[], messageId: string, sentAt: Date, body: string): string {
  const signed = `${messageId}.${Math.floor(sentAt.getTime() / 1000)}.${body}`;
  return secrets
    .map((secret) => `v1,${crypto.createHmac('sha256', keyOf(secret)).update(signed).digest('base64')}`)
    .join(' ');
}
