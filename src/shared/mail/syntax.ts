import { domainToASCII } from 'node:url';

/**
 * Address syntax (RFC 5321 §4.1.2 / §4.5.3.1, RFC 5322 §3.4.1 dot-atom, RFC 6531 UTF-8 local parts).
 * Deliberately stricter than the RFCs where real mail systems are: quoted local parts, comments and
 * address literals (`user@[192.0.2.1]`) are refused, since no mailbox a lead tool should contact
 * uses them.
 */
export type EmailSyntax =
  | { ok: true; address: string; local: string; domain: string; asciiDomain: string }
  | { ok: false; reason: string };

const MAX_ADDRESS = 254; // RFC 3696 errata 1690: 256-octet path minus the angle brackets
const MAX_LOCAL = 64;
const MAX_DOMAIN = 253;
// atext of RFC 5322 plus any non-ASCII, non-space, non-control character (RFC 6531).
// biome-ignore lint/suspicious/noControlCharactersInRegex: excludes all of ASCII on purpose
const ATOM = /^(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]|[^\p{Cc}\p{Cf}\p{Z}\x00-\x7f])+$/u;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const TLD = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;

export function checkEmailSyntax(input: string): EmailSyntax {
  const address = input.trim();
  if (!address) return { ok: false, reason: 'empty' };
  if ([...address].length > MAX_ADDRESS) return { ok: false, reason: `longer than ${MAX_ADDRESS} characters` };
  const at = address.lastIndexOf('@');
  if (at <= 0 || at === address.length - 1) return { ok: false, reason: 'must be local@domain' };
  const local = address.slice(0, at);
  const domain = address.slice(at + 1);
  if (local.startsWith('"')) return { ok: false, reason: 'quoted local parts are not accepted' };
  if (Buffer.byteLength(local) > MAX_LOCAL) return { ok: false, reason: `local part longer than ${MAX_LOCAL} octets` };
  const atoms = local.split('.');
  if (atoms.some((a) => a === '')) return { ok: false, reason: 'local part has an empty dot-separated part' };
  if (!atoms.every((a) => ATOM.test(a))) return { ok: false, reason: 'local part has a character not allowed' };
  if (domain.startsWith('[')) return { ok: false, reason: 'address literals are not accepted' };
  if (domain.endsWith('.')) return { ok: false, reason: 'domain ends with a dot' };
  // biome-ignore lint/suspicious/noControlCharactersInRegex: "only ASCII" is the whole range from NUL.
  const asciiDomain = /^[\x00-\x7f]*$/.test(domain) ? domain.toLowerCase() : domainToASCII(domain);
  if (!asciiDomain || asciiDomain.length > MAX_DOMAIN) return { ok: false, reason: 'invalid domain' };
  const labels = asciiDomain.split('.');
  if (labels.length < 2) return { ok: false, reason: 'domain needs a top-level domain' };
  if (!labels.every((l) => LABEL.test(l))) return { ok: false, reason: 'invalid domain label' };
  if (!TLD.test(labels[labels.length - 1]!)) return { ok: false, reason: 'invalid top-level domain' };
  return { ok: true, address: `${local}@${domain.toLowerCase()}`, local, domain: domain.toLowerCase(), asciiDomain };
}

export const isEmailSyntaxValid = (input: string): boolean => checkEmailSyntax(input).ok;
