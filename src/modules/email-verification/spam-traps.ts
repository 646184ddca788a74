import type { AppDeps } from '../../deps.ts';
import { validationError } from '../../shared/errors.ts';
import { domainOf, normalizeEmail } from '../../shared/mail/address.ts';
import { createMailDomainResolver } from '../../shared/mail/dns.ts';
import { distinctIds, domainsFirstSeen, leadsForTrapCheck, visibilityOfEmails } from '../leads/index.ts';
import { suppressionOf } from '../suppressions/index.ts';
import { emailVerificationRepository } from './email-verification.repository.ts';
import type { TrapCheckBody, TrapReason } from './email-verification.schemas.ts';
import { addressFlags } from './validate.ts';

/**
 * The spam-trap score (docs/outreach.md, Email verification; OpenAPI of the check): each reason adds its weight,
 * the sum is capped at 100, and the risk is `high` from 60, `medium` from 30, `low` above 0, else `none`.
 */
export const TRAP_WEIGHTS: Record<TrapReason, number> = {
  known_trap_pattern: 70,
  hard_bounced: 50,
  invisible_element: 45,
  domain_not_found: 45,
  null_mx: 45,
  no_mx: 35,
  typo_domain: 35,
  suppressed: 30,
  disposable_domain: 25,
  role_account: 15,
  recently_seen_domain: 10,
};
export const RISK_THRESHOLDS = { high: 60, medium: 30 } as const;
/** A domain the user's leads first showed this recently, while the user has older leads. */
export const RECENT_DOMAIN_DAYS = 14;

/**
 * Local parts (and first domain labels) that trap operators and honeypots use: spamtrap, spam-trap,
 * spam.trap, honeypot, honey-pot, spambait, blackhole, trap, bait, donotemail / do-not-email /
 * do-not-contact, optionally followed by digits; a `+tag` is ignored.
 */
export const TRAP_PATTERN =
  /^(spam[._-]?trap|honey[._-]?pot|spam[._-]?bait|black[._-]?hole|trap|bait|do[._-]?not[._-]?(e?mail|contact))\d*$/;
const TRAP_DOMAIN_LABEL = /^(spam[-]?trap|honey[-]?pot)s?\d*$/;

export const riskOf = (score: number): 'high' | 'medium' | 'low' | 'none' =>
  score >= RISK_THRESHOLDS.high ? 'high' : score >= RISK_THRESHOLDS.medium ? 'medium' : score > 0 ? 'low' : 'none';

export function createSpamTrapChecker(deps: Pick<AppDeps, 'db' | 'clock' | 'config'>) {
  const resolver = createMailDomainResolver({ servers: deps.config.DNS_SERVERS });
  const bounces = emailVerificationRepository(deps.db);

  /** The addresses to check, each with the leads that asked for it; leads not found or without email skipped. */
  async function collect(userId: string, body: TrapCheckBody) {
    const wanted = new Map<string, string[]>();
    const add = (email: string, leadId?: string) => {
      const ids = wanted.get(email) ?? [];
      if (leadId) ids.push(leadId);
      wanted.set(email, ids);
    };
    (body.emails ?? []).forEach((raw, i) => {
      const email = normalizeEmail(raw);
      if (!email) throw validationError(`emails.${i}`, 'not an email address');
      add(email);
    });
    const skipped: Array<{ leadId: string; reason: 'not_found' | 'no_email' | 'invalid_email' }> = [];
    const { lookup, spelled } = distinctIds(body.leadIds ?? []);
    const found = new Map((await leadsForTrapCheck(deps.db, userId, lookup)).map((r) => [r.id, r.email]));
    for (const [key, id] of spelled) {
      const raw = found.get(key);
      if (raw === undefined) skipped.push({ leadId: id, reason: 'not_found' });
      else if (!raw) skipped.push({ leadId: id, reason: 'no_email' });
      else {
        const email = normalizeEmail(raw);
        if (email) add(email, key);
        else skipped.push({ leadId: id, reason: 'invalid_email' });
      }
    }
    return { wanted, skipped };
  }

  return {
    /** POST /api/email-verification/spam-traps/check: every signal read in a few batch queries. */
    async check(userId: string, body: TrapCheckBody) {
      const { wanted, skipped } = await collect(userId, body);
      const emails = [...wanted.keys()];
      const domains = [...new Set(emails.map(domainOf))];
      const [suppressed, hardBounced, visibility, seen, dnsStatus] = await Promise.all([
        suppressionOf(deps.db, userId, emails),
        bounces.hardBounced(userId, emails),
        visibilityOfEmails(deps.db, userId, emails),
        domainsFirstSeen(deps.db, userId, domains),
        Promise.all(domains.map(async (d) => [d, await resolver.check(d)] as const)).then((e) => new Map(e)),
      ]);
      const recentSince = deps.clock.now().getTime() - RECENT_DOMAIN_DAYS * 86_400_000;
      const results = emails.map((email) => {
        const domain = domainOf(email);
        const local = email.slice(0, email.lastIndexOf('@'));
        const reasons: TrapReason[] = [];
        if (TRAP_PATTERN.test(local.split('+')[0]!) || TRAP_DOMAIN_LABEL.test(domain.split('.')[0]!)) {
          reasons.push('known_trap_pattern');
        }
        if (hardBounced.has(email)) reasons.push('hard_bounced');
        const v = visibility.get(email);
        if (v?.invisible && !v.visible) reasons.push('invisible_element');
        const status = dnsStatus.get(domain);
        if (status === 'not_found' || status === 'null_mx' || status === 'no_mx') {
          reasons.push(status === 'not_found' ? 'domain_not_found' : status);
        }
        const { flags } = addressFlags(local, domain);
        if (flags.includes('possible_typo')) reasons.push('typo_domain');
        if (suppressed.has(email)) reasons.push('suppressed');
        if (flags.includes('disposable')) reasons.push('disposable_domain');
        if (flags.includes('role_account')) reasons.push('role_account');
        const first = seen.firstSeen.get(domain);
        if (first && seen.oldest && first.getTime() >= recentSince && seen.oldest.getTime() < recentSince) {
          reasons.push('recently_seen_domain');
        }
        const score = Math.min(
          100,
          reasons.reduce((sum, r) => sum + TRAP_WEIGHTS[r], 0),
        );
        return { email, leadIds: wanted.get(email) ?? [], risk: riskOf(score), score, reasons };
      });
      return { results, skipped };
    },
  };
}
