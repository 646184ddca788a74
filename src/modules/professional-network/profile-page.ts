/**
 * The network's profile pages, as pure functions (docs/professional-network.md): what a profile URL looks like,
 * what a page says about the person (its meta tags and JSON-LD), and what an answer means for the credential
 * that asked (a challenge, a login wall, a rejected login).
 */
import { type CheerioAPI, load } from 'cheerio';

const SLUG = /^[\p{L}\p{N}_-]{3,100}$/u;

/** `https://host/in/<slug>/` of `raw` when it is a profile page of the network at `base`; else why not. */
export function profileUrlOf(raw: string, base: string): { url: string; slug: string } | { error: string } {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    return { error: 'not a URL' };
  }
  const home = new URL(base);
  const bare = (host: string) => host.replace(/^www\./, '');
  if (!['http:', 'https:'].includes(url.protocol) || bare(url.host) !== bare(home.host)) {
    return { error: `must be a profile on ${home.origin}` };
  }
  const match = /^\/in\/([^/]+)\/?$/.exec(url.pathname);
  let slug: string | undefined;
  try {
    slug = match?.[1] ? decodeURIComponent(match[1]) : undefined;
  } catch {
    slug = undefined;
  }
  if (!slug || !SLUG.test(slug)) return { error: `must have the form ${home.origin}/in/<profile-name>` };
  return { url: `${home.origin}/in/${encodeURIComponent(slug)}/`, slug };
}

/** What a profile page shows publicly (meta tags), and what enrichment fills a lead with. */
export interface ProfileData {
  name: string | null;
  firstName: string | null;
  lastName: string | null;
  headline: string | null;
  title: string | null;
  company: string | null;
  location: string | null;
  description: string | null;
  imageUrl: string | null;
}

const clean = (value: string | undefined | null): string | null => {
  const text = value?.replace(/\s+/g, ' ').trim();
  return text ? text.slice(0, 500) : null;
};

const meta = ($: CheerioAPI, key: string) =>
  clean($(`meta[property="${key}"]`).attr('content') ?? $(`meta[name="${key}"]`).attr('content'));

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null;

/** The page's schema.org Person (the network publishes one per public profile), if any. */
function personOf($: CheerioAPI): Json | undefined {
  for (const script of $('script[type="application/ld+json"]').toArray()) {
    try {
      const data: unknown = JSON.parse($(script).text());
      const graph = isObject(data) ? data['@graph'] : undefined;
      const items: unknown[] = Array.isArray(data) ? data : Array.isArray(graph) ? graph : [data];
      const person = items.find((i): i is Json => isObject(i) && i['@type'] === 'Person');
      if (person) return person;
    } catch {
      // not JSON: the next one
    }
  }
  return undefined;
}

/** A JSON-LD value as text: a string, the first of a list, or an object's `field`. */
function textOf(value: unknown, field?: string): string | null {
  const one = Array.isArray(value) ? value[0] : value;
  if (typeof one === 'string') return clean(one);
  return field && isObject(one) && typeof one[field] === 'string' ? clean(one[field] as string) : null;
}

/**
 * A profile page's data: JSON-LD `Person` first (jobTitle, worksFor, address), then the meta tags
 * (`profile:first_name`, `og:title` "Name - Title - Company | Network", `og:description`).
 */
export function readProfile(html: string): ProfileData {
  const $ = load(html);
  const person = personOf($);
  const ogTitle = meta($, 'og:title') ?? clean($('title').first().text());
  // "Ann Lee - VP Engineering - Acme Corp | LinkedIn"
  const parts = (ogTitle ?? '').replace(/\s*\|[^|]*$/, '').split(/\s+[-–]\s+/);
  const firstName = meta($, 'profile:first_name') ?? textOf(person?.givenName);
  const lastName = meta($, 'profile:last_name') ?? textOf(person?.familyName);
  const name = textOf(person?.name) ?? ([firstName, lastName].filter(Boolean).join(' ') || clean(parts[0]));
  return {
    name,
    firstName,
    lastName,
    headline: clean(parts.slice(1).join(' - ')) ?? meta($, 'description'),
    title: textOf(person?.jobTitle) ?? clean(parts[1]),
    company: textOf(person?.worksFor, 'name') ?? clean(parts[2]),
    location: textOf(person?.address, 'addressLocality') ?? meta($, 'profile:location'),
    description: meta($, 'og:description') ?? meta($, 'description'),
    imageUrl: meta($, 'og:image'),
  };
}

/** What an answer to a profile request means. */
export type PageVerdict =
  | { kind: 'ok' }
  | { kind: 'challenge'; reason: string }
  | { kind: 'rejected'; reason: string }
  | { kind: 'not_found'; reason: string }
  | { kind: 'error'; reason: string };

/**
 * The network answers a suspicious client with HTTP 999 (or 429), or sends it to a login wall (`/authwall`, a
 * `/checkpoint/challenge`); a cookie it no longer accepts lands on its login page.
 */
export function verdictOf(status: number, finalUrl: string): PageVerdict {
  const path = (() => {
    try {
      return new URL(finalUrl).pathname;
    } catch {
      return '';
    }
  })();
  if (status === 999 || status === 429) return { kind: 'challenge', reason: `the network answered HTTP ${status}` };
  if (/^\/(authwall|checkpoint\/challenge)/.test(path)) {
    return { kind: 'challenge', reason: `the network answered with a login wall (${path})` };
  }
  if (/^\/(login|uas\/login|checkpoint\/lg\/login)/.test(path)) {
    return { kind: 'rejected', reason: 'the network rejected the session cookie (its login page)' };
  }
  if (status === 404 || status === 410) return { kind: 'not_found', reason: 'the profile does not exist' };
  if (status >= 400) return { kind: 'error', reason: `the network answered HTTP ${status}` };
  return { kind: 'ok' };
}
