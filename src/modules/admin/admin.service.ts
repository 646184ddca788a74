import { jobStatuses } from '../../db/schema/index.ts';
import type { AppDeps } from '../../deps.ts';
import { actorOf, type Principal } from '../../shared/auth.ts';
import { AppError } from '../../shared/errors.ts';
import { findOwned } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { createAnalyticsService } from '../analytics/index.ts';
import { lockUser, setUserAccountState } from '../users/index.ts';
import { type AdminAuditRow, type AdminUserRow, adminRepository } from './admin.repository.ts';
import type { AdminUserPatch, AdminUsersQuery } from './admin.schemas.ts';

const DAY_MS = 86_400_000;
const iso = (v: string | Date | null) => (v === null ? null : new Date(v).toISOString());

const conflict = (field: string, message: string) =>
  new AppError('CONFLICT', message, { details: [{ field, message }] });

const auditView = (row: AdminAuditRow) => ({
  id: row.id,
  actorId: row.actorId!,
  action: row.action,
  before: row.before,
  after: row.after,
  reason: row.reason,
  createdAt: row.createdAt.toISOString(),
});

export type AdminService = ReturnType<typeof createAdminService>;

/**
 * Platform management for admins (docs/operations.md "Admin"): the users whose email is in ADMIN_EMAILS, and those
 * with role `admin`. Every change to a user is audited in the transaction that makes it.
 */
export function createAdminService(deps: Pick<AppDeps, 'db' | 'clock' | 'config' | 'credits' | 'apiKeys' | 'logger'>) {
  const repo = adminRepository(deps.db);
  const analytics = createAnalyticsService(deps);
  const adminEmails = deps.config.ADMIN_EMAILS;
  const monthAgo = () => new Date(deps.clock.now().getTime() - 30 * DAY_MS);

  async function views(rows: AdminUserRow[]) {
    const leads = rows.length ? await analytics.leadTotals(rows.map((r) => r.id)) : new Map();
    return rows.map((r) => ({
      id: r.id,
      email: r.email,
      name: r.name,
      status: r.status,
      role: r.role,
      isAdmin: r.is_admin,
      balance: r.balance === null ? null : Number(r.balance),
      usage: {
        leads: leads.get(r.id)?.total ?? 0,
        sources: Number(r.sources),
        jobs: Number(r.jobs),
        creditsUsedLast30Days: Number(r.credits_30d),
      },
      lastActiveAt: iso(r.last_active_at),
      createdAt: iso(r.created_at)!,
    }));
  }

  async function userView(id: string) {
    const [row] = await repo.listUsers({ id, limit: 1 }, adminEmails, monthAgo());
    return (await views([row!]))[0]!;
  }

  return {
    /** 403 FORBIDDEN unless the caller is an admin (read from the database on every call, never cached). */
    async assertAdmin(principal: Principal): Promise<void> {
      if (adminEmails.includes(principal.email.toLowerCase())) return;
      // The human decides, also behind an organization's key (docs/organizations.md).
      if (!(await repo.isAdmin(actorOf(principal), adminEmails))) {
        throw new AppError('FORBIDDEN', 'Only administrators may use this route');
      }
    },

    async stats() {
      const now = deps.clock.now().getTime();
      const [figures, leads] = await Promise.all([
        repo.stats(adminEmails, new Date(now - DAY_MS), new Date(now - 7 * DAY_MS), new Date(now - 30 * DAY_MS)),
        analytics.platformLeadTotals(),
      ]);
      const byStatus = Object.fromEntries(jobStatuses.map((s) => [s, 0])) as Record<
        (typeof jobStatuses)[number],
        number
      >;
      for (const r of figures.jobRows) if (r.status) byStatus[r.status as keyof typeof byStatus] = r.n;
      const queueTotal = figures.queueRows.find((r) => r.name === null);
      const u = figures.users;
      return {
        users: {
          total: u.total!,
          active: u.active!,
          suspended: u.suspended!,
          admins: u.admins!,
          newLast7Days: u.new_last_7_days!,
        },
        organizations: { total: u.organizations! },
        leads,
        jobs: { total: figures.jobRows.find((r) => r.status === null)?.n ?? 0, byStatus },
        queue: {
          queued: queueTotal?.queued ?? 0,
          active: queueTotal?.active ?? 0,
          byQueue: figures.queueRows.filter((r) => r.name !== null).map((r) => ({ ...r, name: r.name! })),
        },
        credits: {
          usedLast30Days: figures.credits.last_30_days!,
          usedTotal: figures.credits.total!,
          outstandingBalance: figures.credits.outstanding!,
        },
        webhooks: {
          attemptsLast24Hours: figures.webhooks.attempts!,
          failedLast24Hours: figures.webhooks.failed!,
          failureRate: figures.webhooks.attempts ? figures.webhooks.failed! / figures.webhooks.attempts : null,
          disabledEndpoints: figures.webhooks.disabled!,
        },
      };
    },

    async listUsers(q: AdminUsersQuery) {
      const rows = await repo.listUsers(
        { q: q.q, status: q.status, role: q.role, before: decodeCursor(q.cursor), limit: q.limit },
        adminEmails,
        monthAgo(),
      );
      const { items, nextCursor } = pageOf(rows, q.limit);
      return { users: await views(items), nextCursor };
    },

    /**
     * Status, role and a credit adjustment in one transaction with its audit record. The target row is
     * locked first, so concurrent changes to one user apply one after the other and each audit record's
     * `before` is what the change really replaced. Suspending or reactivating drops the user's cached keys
     * in every process once committed.
     */
    async updateUser(actor: Principal, id: string, patch: AdminUserPatch) {
      const result = await deps.db.transaction(async (tx) => {
        const target = await findOwned(id, 'User', (key) => lockUser(tx, key));
        if (target.id === actorOf(actor) && patch.status === 'suspended' && target.status !== 'suspended') {
          throw conflict('status', 'An admin cannot suspend themselves');
        }
        if (target.id === actorOf(actor) && patch.role === 'user' && target.role === 'admin') {
          throw conflict('role', 'An admin cannot demote themselves');
        }
        const before: Record<string, unknown> = {};
        const after: Record<string, unknown> = {};
        const state: { status?: typeof target.status; role?: typeof target.role } = {};
        if (patch.status && patch.status !== target.status) {
          before.status = target.status;
          after.status = state.status = patch.status;
        }
        if (patch.role && patch.role !== target.role) {
          before.role = target.role;
          after.role = state.role = patch.role;
        }
        if (state.status || state.role) await setUserAccountState(tx, target.id, state, deps.clock.now());
        const adjustment = patch.creditAdjustment;
        if (adjustment) {
          const { balance } = await deps.credits
            .adjust(tx, target.id, adjustment.amount, adjustment.reason, actorOf(actor))
            .catch((err: unknown) => {
              // The credits layer names `amount`; here it arrives inside `creditAdjustment`.
              if (err instanceof AppError && err.code === 'VALIDATION_ERROR') {
                throw new AppError('VALIDATION_ERROR', err.message.replace(/^amount/, 'creditAdjustment.amount'), {
                  details: [{ field: 'creditAdjustment.amount', message: err.details?.[0]?.message ?? err.message }],
                });
              }
              throw err;
            });
          before.balance = balance - adjustment.amount;
          after.balance = balance;
          after.creditAdjustment = adjustment.amount;
        }
        if (Object.keys(after).length === 0) return { id: target.id, audit: null, statusChanged: false };
        const audit = await adminRepository(tx).insertAudit({
          actorId: actorOf(actor),
          targetUserId: target.id,
          action: 'user.update',
          before,
          after,
          reason: adjustment?.reason ?? null,
          createdAt: deps.clock.now(),
        });
        return { id: target.id, audit, statusChanged: state.status !== undefined };
      });
      if (result.statusChanged) {
        // Committed: should the broadcast fail, other processes drop their cached keys within 30 s anyway.
        await deps.apiKeys.invalidateUser(result.id).catch((err: unknown) => {
          deps.logger.warn({ err, userId: result.id }, 'key cache invalidation not broadcast');
        });
      }
      return { user: await userView(result.id), audit: result.audit && auditView(result.audit) };
    },
  };
}
