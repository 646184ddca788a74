import { z } from 'zod';
import { jobStatuses } from '../../db/schema/index.ts';
import { nextCursor } from '../../shared/pagination.ts';

const userStatuses = ['active', 'suspended'] as const;
const userRoles = ['user', 'admin'] as const;

export const adminUsersQuery = z.object({
  q: z.string().trim().min(1).max(200).optional().describe('Part of the email or name (case-insensitive)'),
  status: z.enum(userStatuses).optional(),
  role: z.enum(userRoles).optional().describe('The stored role (ADMIN_EMAILS admins may have role user)'),
  limit: z.coerce.number().int().min(1).max(1000).default(50),
  cursor: z.string().max(200).optional(),
});
export type AdminUsersQuery = z.infer<typeof adminUsersQuery>;

export const adminUserPatch = z.strictObject({
  status: z.enum(userStatuses).optional().describe('suspended: every key of the user answers 403 ACCOUNT_SUSPENDED'),
  role: z.enum(userRoles).optional(),
  creditAdjustment: z
    .strictObject({
      amount: z
        .number()
        .int()
        .min(-100_000_000)
        .max(100_000_000)
        .refine((n) => n !== 0, 'must not be 0')
        .describe('Credits added (positive) or taken (negative); the balance cannot go below 0'),
      reason: z.string().trim().min(1).max(500).describe('Shown on the ledger row and in the audit record'),
    })
    .optional(),
});
export type AdminUserPatch = z.infer<typeof adminUserPatch>;

export const adminUserView = z
  .object({
    id: z.string(),
    email: z.string(),
    name: z.string().nullable(),
    status: z.enum(userStatuses),
    role: z.enum(userRoles),
    isAdmin: z.boolean().describe('role admin, or the email is in ADMIN_EMAILS'),
    balance: z
      .number()
      .int()
      .nullable()
      .describe('null: no credit account yet (opened with the signup grant on first use)'),
    usage: z.object({
      leads: z.number().int(),
      sources: z.number().int(),
      jobs: z.number().int(),
      creditsUsedLast30Days: z.number().int().describe('Credits taken by metered work in the last 30 days'),
    }),
    lastActiveAt: z.string().nullable().describe('Latest use of any of its API keys (kept to the minute)'),
    createdAt: z.string(),
  })
  .meta({ id: 'AdminUser' });

export const adminUsersView = z.object({ users: z.array(adminUserView).describe('Newest first'), nextCursor });

export const adminAuditView = z
  .object({
    id: z.string(),
    actorId: z.string(),
    action: z.string(),
    before: z.record(z.string(), z.unknown()),
    after: z.record(z.string(), z.unknown()),
    reason: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'AdminAuditEvent' });

export const adminUserUpdateView = z.object({
  user: adminUserView,
  audit: adminAuditView.nullable().describe('The audit record of this change; null when nothing changed'),
});

const count = z.number().int();
export const adminStatsView = z
  .object({
    users: z.object({ total: count, active: count, suspended: count, admins: count, newLast7Days: count }),
    organizations: z.object({ total: count.describe('Organizations (teams); not counted among users') }),
    leads: z.object({ total: count, createdLast7Days: count }),
    jobs: z.object({ total: count, byStatus: z.record(z.enum(jobStatuses), count) }),
    queue: z.object({
      queued: count.describe('Background tasks waiting (pg-boss states created and retry)'),
      active: count,
      byQueue: z.array(z.object({ name: z.string(), queued: count, active: count })),
    }),
    credits: z.object({
      usedLast30Days: count,
      usedTotal: count,
      outstandingBalance: count.describe('Sum of every balance'),
    }),
    webhooks: z.object({
      attemptsLast24Hours: count.describe('Delivery attempts to every endpoint in the last 24 hours'),
      failedLast24Hours: count.describe('Of those, attempts that failed (no answer, timeout or not 2xx)'),
      failureRate: z.number().min(0).max(1).nullable().describe('failed ÷ attempts; null when there was none'),
      disabledEndpoints: count.describe('Endpoints disabled (410, five days failing, or by their owner)'),
    }),
  })
  .meta({ id: 'AdminStats' });
