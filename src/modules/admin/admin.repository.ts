import { type SQL, sql } from 'drizzle-orm';
import { type Db, queryRows, type Tx } from '../../db/client.ts';
import {
  adminAuditEvents,
  apiKeys,
  creditBalances,
  creditTransactions,
  jobs,
  sources,
  users,
} from '../../db/schema/index.ts';

export type AdminAuditRow = typeof adminAuditEvents.$inferSelect;

export interface AdminUserRow {
  id: string;
  email: string;
  name: string | null;
  status: 'active' | 'suspended';
  role: 'user' | 'admin';
  is_admin: boolean;
  balance: number | null;
  sources: number;
  jobs: number;
  credits_30d: number;
  last_active_at: string | Date | null;
  created_at: string | Date;
}

/** `users.email IN (ADMIN_EMAILS)`, or false when the list is empty. */
const inAdminEmails = (column: SQL, emails: readonly string[]) =>
  emails.length
    ? sql`${column} IN (${sql.join(
        emails.map((e) => sql`${e}`),
        sql`, `,
      )})`
    : sql`false`;

/** `%q%` for ILIKE, with the pattern characters of `q` taken literally (backslash is LIKE's escape). */
const containing = (q: string) => `%${q.replace(/[\\%_]/g, '\\$&')}%`;

/** The admin module writes only the audit table; the figures are reads (docs/operations.md "Admin"). */
export function adminRepository(db: Db | Tx) {
  return {
    async insertAudit(values: typeof adminAuditEvents.$inferInsert): Promise<AdminAuditRow> {
      const [row] = await db.insert(adminAuditEvents).values(values).returning();
      return row!;
    },

    async isAdmin(userId: string, adminEmails: readonly string[]): Promise<boolean> {
      const rows = await queryRows<{ admin: boolean }>(
        db,
        sql`SELECT (role = 'admin' OR ${inAdminEmails(sql`email`, adminEmails)}) AS admin FROM ${users}
            WHERE id = ${userId}`,
      );
      return rows[0]?.admin === true;
    },

    /** Users newest first (`limit + 1` rows), with balance and usage; `id` narrows to one user. */
    listUsers(
      filter: { q?: string; status?: string; role?: string; before?: string; id?: string; limit: number },
      adminEmails: readonly string[],
      since: Date,
    ): Promise<AdminUserRow[]> {
      // A search lists people only (docs/organizations.md); an organization's account is reached by its id, so an
      // admin can adjust its credits.
      const where: SQL[] = [filter.id ? sql`true` : sql`u.kind = 'person'`];
      if (filter.q) where.push(sql`(u.email ILIKE ${containing(filter.q)} OR u.name ILIKE ${containing(filter.q)})`);
      if (filter.status) where.push(sql`u.status = ${filter.status}`);
      if (filter.role) where.push(sql`u.role = ${filter.role}`);
      if (filter.before) where.push(sql`u.id < ${filter.before}`);
      if (filter.id) where.push(sql`u.id = ${filter.id}`);
      return queryRows<AdminUserRow>(
        db,
        sql`
        SELECT u.id, coalesce(u.email, '') AS email, u.name, u.status, u.role, u.created_at,
               (u.role = 'admin' OR ${inAdminEmails(sql`u.email`, adminEmails)}) AS is_admin, b.balance,
               (SELECT count(*) FROM ${sources} s WHERE s.user_id = u.id)::int AS sources,
               (SELECT count(*) FROM ${jobs} j WHERE j.user_id = u.id)::int AS jobs,
               (SELECT coalesce(-sum(t.amount), 0) FROM ${creditTransactions} t
                 WHERE t.user_id = u.id AND t.kind = 'usage' AND t.created_at >= ${since})::int AS credits_30d,
               (SELECT max(k.last_used_at) FROM ${apiKeys} k WHERE k.user_id = u.id) AS last_active_at
        FROM ${users} u LEFT JOIN ${creditBalances} b ON b.user_id = u.id
        WHERE ${sql.join(where, sql` AND `)}
        ORDER BY u.id DESC LIMIT ${filter.limit + 1}`,
      );
    },

    /** Platform figures: users, jobs by state, pg-boss queue depth, credits (docs/operations.md "Admin"). */
    async stats(adminEmails: readonly string[], dayAgo: Date, weekAgo: Date, monthAgo: Date) {
      const [u] = await queryRows<Record<string, number>>(
        db,
        sql`SELECT count(*)::int AS total, count(*) FILTER (WHERE status = 'active')::int AS active,
                   count(*) FILTER (WHERE status = 'suspended')::int AS suspended,
                   count(*) FILTER (WHERE role = 'admin' OR ${inAdminEmails(sql`email`, adminEmails)})::int AS admins,
                   count(*) FILTER (WHERE created_at >= ${weekAgo})::int AS new_last_7_days,
                   (SELECT count(*) FROM ${users} WHERE kind = 'organization')::int AS organizations
            FROM ${users} WHERE kind = 'person'`,
      );
      const jobRows = await queryRows<{ status: string | null; n: number }>(
        db,
        sql`SELECT status, count(*)::int AS n FROM ${jobs} GROUP BY ROLLUP (status)`,
      );
      // pg-boss keeps its queue in its own schema (`pgboss`); ROLLUP's NULL name row is the total.
      const queueRows = await queryRows<{ name: string | null; queued: number; active: number }>(
        db,
        sql`SELECT name, count(*) FILTER (WHERE state IN ('created', 'retry'))::int AS queued,
                   count(*) FILTER (WHERE state = 'active')::int AS active
            FROM pgboss.job WHERE state IN ('created', 'retry', 'active') GROUP BY ROLLUP (name) ORDER BY name`,
      );
      const [c] = await queryRows<Record<string, number>>(
        db,
        sql`SELECT coalesce(-sum(amount) FILTER (WHERE created_at >= ${monthAgo}), 0)::int AS last_30_days,
                   coalesce(-sum(amount), 0)::int AS total,
                   (SELECT coalesce(sum(balance), 0) FROM ${creditBalances})::int AS outstanding
            FROM ${creditTransactions} WHERE kind = 'usage'`,
      );
      // Webhook attempts are pruned after WEBHOOK_RETENTION_DAYS, so the scan stays bounded.
      const [w] = await queryRows<Record<string, number>>(
        db,
        sql`SELECT (SELECT count(*) FROM webhook_attempts WHERE created_at >= ${dayAgo})::int AS attempts,
                   (SELECT count(*) FROM webhook_attempts WHERE created_at >= ${dayAgo} AND NOT success)::int AS failed,
                   (SELECT count(*) FROM webhook_endpoints WHERE NOT enabled)::int AS disabled`,
      );
      return { users: u!, jobRows, queueRows, credits: c!, webhooks: w! };
    },
  };
}
