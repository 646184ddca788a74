/**
 * How leads group into accounts: each lead's `account_key`, kept by the database with the SQL function
 * `account_key_of(email, company)` (migration 0003_accounts_at_scale):
 * - `domain:<email domain>` when the lead's email has a domain that is not a free-mail provider;
 * - else `company:<normalized company name>` (lower case, punctuation collapsed, legal suffixes such
 *   as Inc, LLC, GmbH removed, at most 120 characters: a 3-byte-per-character name then still gives an
 *   id, base64url of the UTF-8 key, under the router's 500-character path-segment limit);
 * - else no account (NULL).
 * The account id is the key in base64url: stable across requests and processes, and reversible, so
 * `GET /api/accounts/{id}` finds its leads by the stored key.
 */

/** The public id of an account key. */
export const accountIdOf = (key: string): string => Buffer.from(key, 'utf8').toString('base64url');

/** The key an account id stands for, or undefined when the id is not one of ours (→ 404). */
export function accountKeyOf(id: string): string | undefined {
  if (!/^[A-Za-z0-9_-]{1,500}$/.test(id)) return undefined;
  const key = Buffer.from(id, 'base64url').toString('utf8');
  if (accountIdOf(key) !== id) return undefined;
  // No key we make contains NUL, and PostgreSQL text cannot hold one (the query would fail).
  return /^(domain|company):.+$/s.test(key) && !key.includes('\u0000') ? key : undefined;
}

/** What kind of grouping a key is, and its value (`acme.com`, `acme`). */
export function describeAccountKey(key: string): { kind: 'domain' | 'company'; value: string } {
  const i = key.indexOf(':');
  return { kind: key.slice(0, i) as 'domain' | 'company', value: key.slice(i + 1) };
}
