import type { Db, Tx } from '../../db/client.ts';
import type { AppDeps } from '../../deps.ts';
import { notFound, validationError } from '../../shared/errors.ts';
import { findOwned } from '../../shared/ids.ts';
import { domainAndParents, domainOf, normalizeDomain, normalizeEmail } from '../../shared/mail/address.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import {
  type SuppressionEntry,
  type SuppressionFilters,
  type SuppressionRow,
  suppressionRepository,
} from './suppressions.repository.ts';
import type { AddSuppressionsBody, ListSuppressionsQuery } from './suppressions.schemas.ts';

export type { SuppressionEntry, SuppressionRow };

export const toSuppressionView = (r: SuppressionRow) => ({
  id: r.id,
  type: r.type,
  value: r.value,
  reason: r.reason,
  source: r.source,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

/**
 * THE suppression check (docs/outreach.md, Suppressions), for validation, exports and sending: which of `emails`
 * are suppressed, and by which entry. An address is matched by its own entry, else by the entry of its
 * domain or the nearest parent domain. One query for the whole batch; addresses are normalized here, and
 * the map is keyed by the normalized address (malformed addresses are never suppressed).
 */
export async function suppressionOf(
  db: Db | Tx,
  userId: string,
  emails: readonly string[],
): Promise<Map<string, SuppressionRow>> {
  const addresses = [...new Set(emails.map((e) => normalizeEmail(e)).filter((e): e is string => !!e))];
  const domains = [...new Set(addresses.flatMap((a) => domainAndParents(domainOf(a))))];
  const rows = await suppressionRepository(db).matching(userId, addresses, domains);
  const byEmail = new Map(rows.filter((r) => r.type === 'email').map((r) => [r.value, r]));
  const byDomain = new Map(rows.filter((r) => r.type === 'domain').map((r) => [r.value, r]));
  const found = new Map<string, SuppressionRow>();
  for (const address of addresses) {
    const entry =
      byEmail.get(address) ??
      domainAndParents(domainOf(address))
        .map((d) => byDomain.get(d))
        .find(Boolean);
    if (entry) found.set(address, entry);
  }
  return found;
}

/** Merges entries with the same type and value (the last reason given wins). */
function mergeDuplicates(entries: SuppressionEntry[]): SuppressionEntry[] {
  const merged = new Map<string, SuppressionEntry>();
  for (const e of entries) {
    const key = `${e.type}:${e.value}`;
    const prev = merged.get(key);
    merged.set(key, { ...prev, ...e, reason: e.reason ?? prev?.reason ?? null });
  }
  return [...merged.values()];
}

/**
 * Adds normalized entries inside the caller's transaction (hard bounces, complaints, unsubscribes name
 * their `source`); an existing entry is merged, not duplicated.
 */
export async function suppress(tx: Db | Tx, userId: string, entries: SuppressionEntry[], now: Date) {
  return suppressionRepository(tx).upsert(userId, mergeDuplicates(entries), now);
}

export function createSuppressionService(deps: Pick<AppDeps, 'db' | 'clock'>) {
  const repo = suppressionRepository(deps.db);

  /** `?value=`: the entry that suppresses this address or domain, or null. */
  async function check(userId: string, value: string) {
    if (value.includes('@')) {
      const address = normalizeEmail(value);
      if (!address) throw validationError('value', 'not an email address or a domain');
      return (await suppressionOf(deps.db, userId, [address])).get(address) ?? null;
    }
    const domain = normalizeDomain(value);
    if (!domain) throw validationError('value', 'not an email address or a domain');
    const rows = await repo.matching(userId, [], domainAndParents(domain));
    const byDomain = new Map(rows.map((r) => [r.value, r]));
    return (
      domainAndParents(domain)
        .map((d) => byDomain.get(d))
        .find(Boolean) ?? null
    );
  }

  return {
    async list(userId: string, query: ListSuppressionsQuery) {
      if (query.value !== undefined) {
        const match = await check(userId, query.value);
        return {
          suppressions: match ? [toSuppressionView(match)] : [],
          nextCursor: null,
          match: match && toSuppressionView(match),
        };
      }
      const filters: SuppressionFilters = { q: query.q?.trim() || undefined, type: query.type, source: query.source };
      const rows = await repo.list(userId, filters, query.limit, decodeCursor(query.cursor));
      const page = pageOf(rows, query.limit);
      return { suppressions: page.items.map(toSuppressionView), nextCursor: page.nextCursor };
    },

    /** Every item is checked before anything is stored: one malformed value is a 400 naming it. */
    async add(userId: string, body: AddSuppressionsBody) {
      const entries: SuppressionEntry[] = body.items.map((item, i) => {
        const value = item.type === 'email' ? normalizeEmail(item.value) : normalizeDomain(item.value);
        if (!value) {
          throw validationError(`items.${i}.value`, item.type === 'email' ? 'not an email address' : 'not a domain');
        }
        return { type: item.type, value, reason: item.reason?.trim() || null, source: 'manual' };
      });
      const merged = mergeDuplicates(entries);
      const rows = await deps.db.transaction((tx) => suppress(tx, userId, merged, deps.clock.now()));
      const added = rows.filter((r) => r.inserted).length;
      return {
        added,
        merged: entries.length - added,
        suppressions: rows.map(toSuppressionView),
      };
    },

    async remove(userId: string, id: string) {
      const row = await findOwned(id, 'Suppression', (key) => repo.find(userId, key));
      if (!(await repo.remove(userId, row.id))) throw notFound('Suppression');
    },
  };
}
