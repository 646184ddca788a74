import type { BounceType } from '../../db/schema/index.ts';

/**
 * Highest detail number of each subject of RFC 3463 enhanced status codes, as registered by IANA
 * ("SMTP Enhanced Status Codes"): `X.1.0`–`X.1.10`, `X.7.0`–`X.7.30`, … A code beyond them is unknown.
 */
const MAX_DETAIL: Record<number, number> = { 0: 0, 1: 10, 2: 4, 3: 6, 4: 7, 5: 6, 6: 10, 7: 30 };

/** A diagnostic saying the mailbox does not exist (what makes a bare 5.0.0 or 550 a hard bounce). */
const USER_UNKNOWN =
  /user unknown|unknown user|no such (user|mailbox|recipient)|does not exist|doesn't exist|not exist|invalid (recipient|mailbox|address)|recipient (address )?rejected|mailbox (not found|unavailable)|address rejected|unrouteable|undeliverable address|account (is )?(disabled|closed)/i;
/** A diagnostic naming spam, reputation or policy: the sender is blocked, not the recipient. */
const SPAM_OR_POLICY =
  /spam|block(ed|list)|blacklist|denylist|reputation|policy|rbl|spamhaus|barracuda|junk|abuse|not authorized|unauthenticated|dmarc|spf|dkim/i;

/** `5.1.1` → [5, 1, 1] when it is a known RFC 3463 code of a failure (class 4 or 5), else undefined. */
export function parseEnhancedStatus(status: string): [number, number, number] | undefined {
  const m = /^([245])\.(\d{1,3})\.(\d{1,3})$/.exec(status.trim());
  if (!m) return undefined;
  const [cls, subject, detail] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (cls === 2) return undefined;
  const max = MAX_DETAIL[subject];
  return max === undefined || detail > max ? undefined : [cls, subject, detail];
}

/**
 * Hard, soft or block (docs/outreach.md, Email verification):
 * - 4.x.x: soft (the server may take it later);
 * - 5.7.x, or any 5.x.x whose diagnostic names spam/policy/reputation: block (the sender, not the address);
 * - 5.1.7 and 5.1.8 (the sender's address is bad or refused): block;
 * - 5.1.x, 5.2.1 (mailbox disabled), 5.4.4 (unroutable), or 5.0.0 and other 5.x.x with a user-unknown
 *   diagnostic (unless it also names spam or policy: "rejected: blocked using zen.spamhaus.org"): hard;
 * - 5.2.2 (mailbox full) and the remaining 5.x.x (system, network, protocol, content): soft.
 * Undefined when `status` is not a known enhanced code.
 */
export function classifyBounce(status: string, diagnostic: string | null): BounceType | undefined {
  const code = parseEnhancedStatus(status);
  if (!code) return undefined;
  const [cls, subject, detail] = code;
  const diag = diagnostic ?? '';
  if (cls === 4) return 'soft';
  if (subject === 7) return 'block';
  if (subject === 1) return detail === 7 || detail === 8 ? 'block' : 'hard';
  if (subject === 2 && detail === 2) return 'soft';
  if (SPAM_OR_POLICY.test(diag)) return 'block';
  if (USER_UNKNOWN.test(diag)) return 'hard';
  if ((subject === 2 && detail === 1) || (subject === 4 && detail === 4)) return 'hard';
  return 'soft';
}

/** The enhanced code a bare SMTP reply stands for when none was given (RFC 3463 §3.1: X.0.0). */
export const statusOfReply = (smtpCode: number): string => `${Math.floor(smtpCode / 100)}.0.0`;
