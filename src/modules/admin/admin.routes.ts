import type { FastifyRequest } from 'fastify';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { envelope, errorResponses, idParams, ok } from '../../shared/http.ts';
import {
  adminStatsView,
  adminUserPatch,
  adminUsersQuery,
  adminUsersView,
  adminUserUpdateView,
} from './admin.schemas.ts';
import { createAdminService } from './admin.service.ts';

const WHO =
  'Admins only: users whose email is in ADMIN_EMAILS, or whose role is `admin`; anyone else gets 403 FORBIDDEN ' +
  '(checked before the input, so the route reveals nothing to others).';

export const adminRoutes: RouteModule = (app, deps) => {
  const tags = ['Admin'];
  const admin = createAdminService(deps);
  // A route hook runs after authentication (the global onRequest) and before validation.
  const adminOnly = async (request: FastifyRequest) => admin.assertAdmin(principalOf(request));

  app.get('/api/admin/stats', {
    config: { scope: 'admin:read' },
    onRequest: adminOnly,
    schema: {
      tags,
      summary: 'Platform figures: users, leads, jobs by state, queue depth, credits used',
      description:
        `${WHO} users: all, active, suspended, admins, signed up in the last 7 days. leads: all stored, and ` +
        'created in the last 7 UTC days. jobs: every scraping job by status. queue: background tasks in pg-boss ' +
        'waiting (created, retry) and running, per queue. credits: taken by metered work in the last 30 days ' +
        'and ever (ledger rows of kind usage), and the sum of all balances.',
      response: { 200: envelope(adminStatsView), ...errorResponses(401, 403) },
    },
    handler: async () => ok(await admin.stats()),
  });

  app.get('/api/admin/users', {
    config: { scope: 'admin:read' },
    onRequest: adminOnly,
    schema: {
      tags,
      summary: 'Users with status, role, balance and usage; search by email or name',
      description: `${WHO} Newest first, cursor-paginated (\`limit\` 1–1000, default 50).`,
      querystring: adminUsersQuery,
      response: { 200: envelope(adminUsersView), ...errorResponses(400, 401, 403) },
    },
    handler: async (request) => ok(await admin.listUsers(request.query)),
  });

  app.patch('/api/admin/users/:id', {
    config: { scope: 'admin:write' },
    onRequest: adminOnly,
    schema: {
      tags,
      summary: 'Suspend or reactivate a user, change their role, adjust their credits (audited)',
      description:
        `${WHO} Everything given is applied in one transaction with one audit record (who, the changed ` +
        'fields before and after, when); a field equal to its current value changes nothing, and a request ' +
        'that changes nothing writes no record (`audit: null`). `status: suspended`: every API key of the ' +
        'user answers 403 ACCOUNT_SUSPENDED at once, in every process, and their scheduled sources do not ' +
        'run (each overdue one runs once after reactivation); nothing of theirs is deleted, and ' +
        '`active` restores access. `creditAdjustment`: a ledger row of kind adjustment with the reason (the ' +
        'balance cannot go below 0: 400 naming `creditAdjustment.amount`). An admin cannot suspend or ' +
        'demote themselves: 409 CONFLICT naming `status` or `role`. An ADMIN_EMAILS admin stays an admin ' +
        'whatever their role. Unknown user: 404.',
      params: idParams,
      body: adminUserPatch,
      response: { 200: envelope(adminUserUpdateView), ...errorResponses(400, 401, 403, 404, 409) },
    },
    handler: async (request) => ok(await admin.updateUser(principalOf(request), request.params.id, request.body)),
  });
};
