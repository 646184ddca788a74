import { z } from 'zod';
import type { Db, Tx } from '../../db/client.ts';
import { leadStatuses } from '../../db/schema/index.ts';
import type { AppDeps } from '../../deps.ts';
import { notFound, validationError } from '../../shared/errors.ts';
import { decodeJsonCursor, encodeJsonCursor } from '../../shared/pagination.ts';
import { accountIdOf, accountKeyOf, describeAccountKey } from './account-key.ts';
import {
  type AccountCursor,
  type AccountLeadRow,
  type AccountRow,
  accountRepository,
  lockAccountRollups as lockRollups,
} from './accounts.repository.ts';
import {
  ACCOUNT_LEADS_SHOWN,
  type AccountDetailView,
  type AccountLeadView,
  type AccountSort,
  type AccountView,
  type ListAccountsQuery,
  type StatusCounts,
  type UpdateAccountInput,
} from './accounts.schemas.ts';

const iso = (value: Date | string) => new Date(value).toISOString();

export function toAccountView(row: AccountRow): AccountView {
  const { kind, value } = describeAccountKey(row.account_key);
  const counts = row.status_counts.map(Number);
  return {
    id: accountIdOf(row.account_key),
    kind,
    name: row.name,
    domain: kind === 'domain' ? value : null,
    leadCount: Number(row.lead_count),
    sourceCount: Number(row.source_count),
    titles: row.titles,
    statuses: Object.fromEntries(leadStatuses.map((s, i) => [s, counts[i] ?? 0])) as StatusCounts,
    lastActivityAt: iso(row.last_activity_at),
    firstSeenAt: iso(row.first_seen_at),
    notes: row.notes,
    tags: row.tags ?? [],
  };
}

const toLeadView = (row: AccountLeadRow): AccountLeadView => ({
  id: row.id,
  name:
    [row.first_name, row.last_name]
      .map((p) => p?.trim())
      .filter(Boolean)
      .join(' ') || null,
  email: row.email,
  jobTitle: row.job_title,
  status: row.status,
  updatedAt: iso(row.updated_at),
});

/** The opaque cursor: the sort it belongs to, the last account's sort value and key. */
function encodeAccountCursor(sort: AccountSort, row: AccountRow): string {
  const value =
    sort === 'leadCount' ? Number(row.lead_count) : sort === 'lastActivity' ? row.last_us_text : row.sort_name;
  return encodeJsonCursor({ s: sort, v: value, k: row.account_key });
}

const BIGINT_MIN = -(2n ** 63n);
const BIGINT_MAX = 2n ** 63n - 1n;

// Each sort's value within its column type (lead_count int, last_us bigint, sort_name text without
// NUL), so the query cannot fail on it; k an account key.
const accountKey = z.string().refine((k) => accountKeyOf(accountIdOf(k)) === k);
const accountCursor = z.discriminatedUnion('s', [
  z.object({
    s: z.literal('leadCount'),
    v: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1),
    k: accountKey,
  }),
  z.object({
    s: z.literal('lastActivity'),
    v: z
      .string()
      .regex(/^-?\d{1,19}$/)
      .refine((v) => BigInt(v) >= BIGINT_MIN && BigInt(v) <= BIGINT_MAX),
    k: accountKey,
  }),
  z.object({ s: z.literal('name'), v: z.string().refine((v) => !v.includes('\u0000')), k: accountKey }),
]);

/** A cursor of this sort, or a 400 naming `cursor` (another sort's cursor, or anything not ours). */
function decodeAccountCursor(cursor: string | undefined, sort: AccountSort): AccountCursor | undefined {
  const c = decodeJsonCursor(cursor, accountCursor);
  if (!c) return undefined;
  if (c.s !== sort) throw validationError('cursor', `the cursor belongs to sort=${c.s}`);
  return { value: c.v, key: c.k };
}

export type AccountService = ReturnType<typeof createAccountService>;

export function createAccountService(deps: Pick<AppDeps, 'db' | 'clock' | 'logger'>) {
  const repo = accountRepository(deps.db);

  /** The key of an id, or 404 (not one of ours). */
  function keyOf(id: string): string {
    const key = accountKeyOf(id);
    if (!key) throw notFound('Account');
    return key;
  }

  async function detail(userId: string, key: string): Promise<AccountDetailView> {
    const row = await repo.find(userId, key);
    if (!row) throw notFound('Account');
    const leads = await repo.leads(userId, key, ACCOUNT_LEADS_SHOWN);
    return { ...toAccountView(row), leads: leads.map(toLeadView) };
  }

  return {
    keyOf,

    /** Recomputes the rollups of every user with lead changes pending (the periodic job); answers the count. */
    async refreshPending(): Promise<number> {
      let accounts = 0;
      for (const userId of await repo.usersWithMarks(1000)) {
        // One user's failure (a refresh racing their account's purge) must not hold up the others.
        try {
          accounts += await repo.refresh(userId);
        } catch (err) {
          deps.logger.warn({ err, userId }, 'account rollups not refreshed');
        }
      }
      return accounts;
    },

    async list(
      userId: string,
      query: ListAccountsQuery,
    ): Promise<{ accounts: AccountView[]; nextCursor: string | null }> {
      const cursor = decodeAccountCursor(query.cursor, query.sort);
      const rows = await repo.list(
        userId,
        { q: query.q, tag: query.tag, minLeads: query.minLeads },
        query.sort,
        query.limit,
        cursor,
      );
      const items = rows.slice(0, query.limit);
      const nextCursor = rows.length > query.limit ? encodeAccountCursor(query.sort, items[items.length - 1]!) : null;
      return { accounts: items.map(toAccountView), nextCursor };
    },

    /** The account with its latest leads; 404 when the id names no account of the caller's leads. */
    get(userId: string, id: string): Promise<AccountDetailView> {
      return detail(userId, keyOf(id));
    },

    /** Stores notes and/or tags beside the account; never for an account the caller has no lead of. */
    async update(userId: string, id: string, input: UpdateAccountInput): Promise<AccountDetailView> {
      const key = keyOf(id);
      const values: { notes?: string | null; tags?: string[] } = {};
      if (input.notes !== undefined) values.notes = input.notes?.trim() ? input.notes : null;
      if (input.tags !== undefined) values.tags = input.tags;
      if (Object.keys(values).length > 0 && !(await repo.upsertMetadata(userId, key, values, deps.clock.now())))
        throw notFound('Account');
      return detail(userId, key);
    },
  };
}

/**
 * Takes the lock the rollup refresh takes, in the caller's transaction: a change that removes a user's leads wholesale
 * (account deletion) waits for a refresh under way and keeps the next one out until it commits.
 */
export const lockAccountRollups = (tx: Db | Tx, userId: string): Promise<void> => lockRollups(tx, userId);
