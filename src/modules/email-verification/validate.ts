import { createRequire } from 'node:module';
import { disposableEmailBlocklistSet } from 'disposable-email-domains-js';
import emailMisspelled, { top100 } from 'email-misspelled';
import type { Db } from '../../db/client.ts';
import { freeMailDomains } from '../../db/free-mail-domains.ts';
import { domainAndParents } from '../../shared/mail/address.ts';
import {
  createMailDomainResolver,
  type MailDomainResolver,
  type MailDomainResolverOptions,
} from '../../shared/mail/dns.ts';
import { checkEmailSyntax } from '../../shared/mail/syntax.ts';
import { suppressionOf } from '../suppressions/index.ts';
import { hardBouncedOf } from './email-verification.service.ts';
import { createSmtpProber, type ProbeVerdict, type SmtpProbeSettings } from './smtp-probe.ts';

/**
 * The validation vocabulary documented in OpenAPI (`POST /api/leads/{id}/validate-email`), after Reacher and
 * ZeroBounce.
 */
export type ValidationStatus = 'valid' | 'risky' | 'invalid' | 'unknown';
export type ValidationTier = 'syntax' | 'domain' | 'mailbox';
export type ValidationError =
  | 'syntax_invalid'
  | 'domain_not_found'
  | 'no_mx'
  | 'null_mx'
  | 'mailbox_not_found'
  | 'hard_bounced'
  | 'suppressed'
  | 'spamtrap';
export type ValidationFlag =
  | 'disposable'
  | 'role_account'
  | 'catch_all'
  | 'free_provider'
  | 'possible_typo'
  | 'possible_trap'
  | 'smtp_unverified';

export interface EmailValidation {
  status: ValidationStatus;
  tier: ValidationTier;
  errors: ValidationError[];
  flags: ValidationFlag[];
  /** With `possible_typo`: the address as it was probably meant. */
  suggestion?: string;
}

const require = createRequire(import.meta.url);

/** The domain lists, loaded on first use (a process that never validates does not hold them). */
let lists:
  | {
      common: Set<string>;
      disposable: Set<string>;
      roles: Set<string>;
      typo: (email: string) => Array<{ suggest: string; misspelledCount: number }>;
    }
  | undefined;
function domainLists() {
  return (lists ??= {
    common: new Set<string>(require('email-providers/common.json') as string[]),
    disposable: disposableEmailBlocklistSet(),
    roles: new Set<string>((require('role-based-email-addresses') as string[]).map((r) => r.toLowerCase())),
    // Typos are looked for against the most used mailbox providers: one edit, or two adjacent characters
    // swapped (`gmial.com`); never for a popular provider itself (`gmx.com` is no typo of `gmail.com`).
    typo: emailMisspelled({ domains: top100, maxMisspelled: 2, lengthDiffMax: 1 }),
  });
}

const isTransposition = (a: string, b: string): boolean => {
  if (a.length !== b.length) return false;
  const diff = [...a].flatMap((ch, i) => (ch === b[i] ? [] : [i]));
  return diff.length === 2 && diff[1] === diff[0]! + 1 && a[diff[0]!] === b[diff[1]!] && a[diff[1]!] === b[diff[0]!];
};

/** Flags that need no network: disposable, role_account, free_provider, possible_typo. */
export function addressFlags(local: string, domain: string): { flags: ValidationFlag[]; suggestion?: string } {
  const flags: ValidationFlag[] = [];
  let suggestion: string | undefined;
  const { common, disposable, roles, typo } = domainLists();
  if (domainAndParents(domain).some((d) => disposable.has(d))) flags.push('disposable');
  if (roles.has(local.toLowerCase().split('+')[0]!)) flags.push('role_account');
  if (freeMailDomains().has(domain)) flags.push('free_provider');
  if (!common.has(domain) && domain.length >= 8) {
    const best = typo(`x@${domain}`).find((r) => r.misspelledCount === 1 || isTransposition(domain, r.suggest));
    if (best) {
      flags.push('possible_typo');
      suggestion = `${local}@${best.suggest}`;
    }
  }
  return { flags, suggestion };
}

export interface EmailValidatorOptions
  extends Pick<MailDomainResolverOptions, 'timeoutMs' | 'tries' | 'ttlMs' | 'unknownTtlMs'> {
  servers?: string[];
  /** Overrides of the SMTP probe settings taken from the configuration. */
  probe?: Partial<SmtpProbeSettings>;
}

/** The settings the validator reads (src/config.ts; docs/outreach.md "SMTP probing"). */
export interface EmailValidatorConfig {
  DNS_SERVERS?: string[];
  ALLOW_PRIVATE_NETWORK?: boolean;
  PUBLIC_URL?: string;
  SMTP_PROBE?: boolean;
  SMTP_PROBE_FROM?: string;
  SMTP_PROBE_HELO?: string;
  SMTP_PROBE_PORT?: number;
  SMTP_PROBE_TIMEOUT_MS?: number;
  SMTP_PROBE_PER_DOMAIN?: number;
}

/** The EHLO name: SMTP_PROBE_HELO, else the host of PUBLIC_URL, else the domain of SMTP_PROBE_FROM. */
export function probeHeloName(config: EmailValidatorConfig): string {
  if (config.SMTP_PROBE_HELO) return config.SMTP_PROBE_HELO;
  if (config.PUBLIC_URL) return new URL(config.PUBLIC_URL).hostname;
  return config.SMTP_PROBE_FROM?.split('@').pop() || 'localhost';
}

export interface EmailValidator {
  validateEmail(email: string, context: { userId: string }): Promise<EmailValidation>;
}

declare module '../../deps.ts' {
  interface AppDeps {
    /** Email validation (syntax, suppressions, bounces, DNS, SMTP probe), which the leads module stores per lead. */
    emailValidator: EmailValidator;
  }
}

const RISKY_FLAGS: ValidationFlag[] = ['disposable', 'possible_typo', 'role_account', 'catch_all'];

/**
 * Validates addresses: syntax, the user's suppression list, DNS (MX, null MX, implicit MX) and the flags
 * above, down to the domain tier; with SMTP_PROBE on, down to the mailbox tier (docs/outreach.md "SMTP probing").
 * A checked domain whose mailbox was not (or could not be) probed adds `smtp_unverified`.
 */
export function createEmailValidator(
  deps: { db: Db; config: EmailValidatorConfig },
  options: EmailValidatorOptions = {},
): EmailValidator {
  const { config } = deps;
  const resolver: MailDomainResolver = createMailDomainResolver({
    ...options,
    servers: options.servers ?? config.DNS_SERVERS,
  });
  const prober =
    config.SMTP_PROBE && config.SMTP_PROBE_FROM
      ? createSmtpProber(
          {
            port: config.SMTP_PROBE_PORT ?? 25,
            helo: probeHeloName(config),
            from: config.SMTP_PROBE_FROM,
            timeoutMs: config.SMTP_PROBE_TIMEOUT_MS ?? 10_000,
            perDomain: config.SMTP_PROBE_PER_DOMAIN ?? 2,
            allowPrivate: config.ALLOW_PRIVATE_NETWORK ?? false,
            ...options.probe,
          },
          resolver,
        )
      : undefined;

  return {
    async validateEmail(email, { userId }) {
      const syntax = checkEmailSyntax(email);
      if (!syntax.ok) return { status: 'invalid', tier: 'syntax', errors: ['syntax_invalid'], flags: [] };
      const { flags, suggestion } = addressFlags(syntax.local, syntax.asciiDomain);
      // The one suppression check (docs/outreach.md "Suppressions"), and hard bounces recorded before.
      const [suppressed, bounced, domainStatus] = await Promise.all([
        suppressionOf(deps.db, userId, [syntax.address]).then((found) => found.size > 0),
        hardBouncedOf(deps.db, userId, [syntax.address]).then((found) => found.size > 0),
        resolver.check(syntax.asciiDomain),
      ]);
      const errors: ValidationError[] = [];
      if (domainStatus === 'not_found') errors.push('domain_not_found');
      if (domainStatus === 'no_mx') errors.push('no_mx');
      if (domainStatus === 'null_mx') errors.push('null_mx');
      if (bounced) errors.push('hard_bounced');
      if (suppressed) errors.push('suppressed');
      let tier: ValidationTier = domainStatus === 'unknown' ? 'syntax' : 'domain';
      // Probing only a deliverable-looking domain, never a suppressed address.
      const verdict: ProbeVerdict | undefined =
        prober && domainStatus === 'ok' && !errors.length
          ? await prober.probe(syntax.local, syntax.asciiDomain)
          : undefined;
      if (verdict && verdict.kind !== 'unverified') tier = 'mailbox';
      if (verdict?.kind === 'mailbox_not_found') errors.push('mailbox_not_found');
      if (verdict?.kind === 'catch_all') flags.push('catch_all');
      if (tier === 'domain') flags.push('smtp_unverified');
      const status: ValidationStatus = errors.length
        ? 'invalid'
        : domainStatus === 'unknown'
          ? 'unknown'
          : flags.some((f) => RISKY_FLAGS.includes(f))
            ? 'risky'
            : 'valid';
      return { status, tier, errors, flags, ...(suggestion ? { suggestion } : {}) };
    },
  };
}
