import crypto from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** A new signing secret: `whsec_` and 32 random bytes in base64, the Standard Webhooks form. */
export const newSigningSecret = (): string => `whsec_${crypto.randomBytes(32).toString('base64')}`;

const signers = new Map<string, Webhook>();
const MAX_SIGNERS = 10_000;

function signerFor(secret: string): Webhook {
  let signer = signers.get(secret);
  if (!signer) {
    if (signers.size >= MAX_SIGNERS) signers.delete(signers.keys().next().value!);
    signers.set(secret, (signer = new Webhook(secret)));
  }
  return signer;
}

/**
 * The `webhook-signature` header: one `v1,<signature>` per secret, space-separated (two while a rotation's
 * overlap lasts, so receivers holding either secret verify it).
 */
export function signatureHeader(secrets: string[], messageId: string, sentAt: Date, body: string): string {
  return secrets.map((secret) => signerFor(secret).sign(messageId, sentAt, body)).join(' ');
}
