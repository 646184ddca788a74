import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * Names reserved for documentation and testing (RFC 2606, RFC 6761): no provider hands out mailboxes there,
 * so they are never free mail, although the `email-providers` list carries `example.com`.
 */
const RESERVED_SLDS = new Set(['example.com', 'example.net', 'example.org']);
const RESERVED_TLDS = new Set(['example', 'test', 'invalid', 'localhost']);
export const isReservedDomain = (domain: string): boolean => {
  const labels = domain.toLowerCase().replace(/\.$/, '').split('.');
  return RESERVED_SLDS.has(labels.slice(-2).join('.')) || RESERVED_TLDS.has(labels.at(-1) ?? '');
};

let free: ReadonlySet<string> | undefined;
/**
 * Free-mail domains: the `email-providers` list this install ships, lower-cased, without reserved names. The
 * `free_email_domains` table holds exactly this set (seed.ts), so an account key computed with it in SQL
 * (`account_key_of`) and one computed with it here agree; email validation's `free_provider` flag reads it too.
 */
export const freeMailDomains = (): ReadonlySet<string> =>
  (free ??= new Set(
    (require('email-providers/all.json') as string[]).map((d) => d.toLowerCase()).filter((d) => !isReservedDomain(d)),
  ));
