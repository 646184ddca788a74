import { domainToASCII } from 'node:url';
import { checkEmailSyntax } from './syntax.ts';

// Address normalization, one place for every module: how addresses and domains are stored and compared.

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const TLD = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;

/** A domain trimmed, lower-cased and in punycode (`Bücher.Example` → `xn--bcher-kva.example`), or undefined. */
export function normalizeDomain(input: string): string | undefined {
  const trimmed = input.trim().toLowerCase().replace(/\.$/, '');
  if (!trimmed || trimmed.length > 253) return undefined;
  const ascii = domainToASCII(trimmed);
  if (!ascii || ascii.length > 253) return undefined;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l)) || !TLD.test(labels[labels.length - 1]!)) {
    return undefined;
  }
  return ascii;
}

const HOST_NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/;

/** A host name (a sending domain) lower case, no trailing dot, IDN in punycode; '' when it is no host name. */
export function normalizeHostName(value: string): string {
  const ascii = domainToASCII(value.trim().replace(/\.$/, '').toLowerCase());
  return HOST_NAME.test(ascii) ? ascii : '';
}

/** An address trimmed and lower-cased, its domain in punycode, or undefined when it is no address. */
export function normalizeEmail(input: string): string | undefined {
  const syntax = checkEmailSyntax(input);
  if (!syntax.ok) return undefined;
  return `${syntax.local.toLowerCase()}@${syntax.asciiDomain}`;
}

/** The domain and each parent with at least two labels (`a.b.example.com` → …, `example.com`). */
export function domainAndParents(domain: string): string[] {
  const labels = domain.split('.');
  return labels.slice(0, -1).map((_, i) => labels.slice(i).join('.'));
}

export const domainOf = (address: string): string => address.slice(address.lastIndexOf('@') + 1);
