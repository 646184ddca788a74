import { type SQL, sql } from 'drizzle-orm';

/**
 * How leads group into accounts, in SQL (accounts are computed, never stored):
 * - `domain:<email domain>` when the lead's email has a domain that is not a free-mail provider;
 * - else `company:<normalized company name>` (lower case, punctuation collapsed, legal suffixes such
 *   as Inc, LLC, GmbH removed, at most MAX_COMPANY_KEY_CHARS characters so every id fits a path segment);
 * - else no account (NULL).
 * The account id is the key in base64url: stable across requests and processes, and reversible, so
 * `GET /api/accounts/{id}` finds its leads with the same expression.
 *
 * Usage (the lead table aliased `l`, the join aliased `fd`):
 *   SELECT ${accountKeySql()} AS account_key FROM leads l ${freeDomainJoinSql()} WHERE l.user_id = …
 */

const LEGAL_SUFFIXES = [
  'inc',
  'incorporated',
  'llc',
  'l l c',
  'ltd',
  'limited',
  'gmbh',
  'corp',
  'corporation',
  'co',
  'company',
  'plc',
  'sa',
  'sas',
  'ag',
  'bv',
  'nv',
  'srl',
  'sarl',
  'spa',
  'oy',
  'ab',
  'as',
  'pty',
  'pte',
  'kg',
  'lp',
  'llp',
  // Dotted spellings (S.A., B.V., L.P.…): punctuation has become spaces by then.
  's a',
  's a s',
  'b v',
  'n v',
  's r l',
  's p a',
  'l p',
  'l l p',
  'p l c',
];

/** The email's domain, lower-cased ('' when there is no '@'). */
export const emailDomainSql = (lead = 'l'): SQL => sql.raw(`lower(split_part(${lead}.email, '@', 2))`);

/** Joins the free-mail list; put it right after `FROM leads <lead>`. */
export const freeDomainJoinSql = (lead = 'l', free = 'fd'): SQL =>
  sql.raw(`LEFT JOIN free_email_domains ${free} ON ${free}.domain = lower(split_part(${lead}.email, '@', 2))`);

const reversedSuffixes = LEGAL_SUFFIXES.map((s) => [...s].reverse().join('')).join('|');

/**
 * Trailing legal suffixes are stripped from the reversed name with a `^`-anchored pattern: PostgreSQL's
 * regex engine tries a `$`-anchored one at every position, which made it the costliest part of the
 * key (about twice the time on 100k leads).
 */
const normalizedCompanyText = (expr: string) =>
  `btrim(reverse(regexp_replace(reverse(btrim(regexp_replace(lower(coalesce(${expr}, '')), '[[:punct:][:space:]]+', ' ', 'g'))), ` +
  `'^((${reversedSuffixes}) )+', '')))`;

/** The normalized company name of a text SQL expression ('' when nothing is left). */
export const normalizedCompanySql = (expr: string): SQL => sql.raw(normalizedCompanyText(expr));

/**
 * Company keys are cut to this many characters: a 3-byte-per-character name then still gives an id
 * (base64url of the UTF-8 key) under the router's 500-character path-segment limit.
 */
export const MAX_COMPANY_KEY_CHARS = 120;

/** The account key of a lead row (`l`), given the free-mail join (`fd`); NULL when neither domain nor company. */
export const accountKeySql = (lead = 'l', free = 'fd'): SQL => {
  const company = `btrim(left(${normalizedCompanyText(`${lead}.company`)}, ${MAX_COMPANY_KEY_CHARS}))`;
  // `'company:' || NULL` is NULL: the (costly) normalisation runs once per lead, not once per test and once per value.
  return sql.raw(
    `(CASE WHEN ${lead}.email LIKE '%_@_%._%' AND ${free}.domain IS NULL THEN 'domain:' || lower(split_part(${lead}.email, '@', 2)) ` +
      `ELSE 'company:' || nullif(${company}, '') END)`,
  );
};

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
