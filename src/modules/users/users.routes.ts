import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { done, envelope, errorResponses, ok, successOnly } from '../../shared/http.ts';
import { changePasswordBody, userStats, userView } from './users.schemas.ts';
import { createUserService } from './users.service.ts';

export const userRoutes: RouteModule = (app, deps) => {
  const users = createUserService(deps);

  app.get('/api/users', {
    config: { scope: 'users:read' },
    schema: {
      tags: ['Users'],
      summary: 'The current user with counts of their sources, jobs and leads',
      response: { 200: envelope(z.object({ user: userView, stats: userStats })), ...errorResponses(401) },
    },
    handler: async (request) => ok(await users.profile(principalOf(request).userId)),
  });

  app.patch('/api/users/password', {
    // Retrying a password change is harmless, and its body (passwords) must not be fingerprinted and kept.
    config: { scope: 'users:write', idempotency: false },
    schema: {
      tags: ['Users'],
      summary: 'Change the password (the current one is required)',
      body: changePasswordBody,
      response: { 200: successOnly, ...errorResponses(400, 401) },
    },
    handler: async (request) => {
      const principal = principalOf(request);
      await users.changePassword(principal.userId, request.body.currentPassword, request.body.newPassword);
      // Someone signed in to the console with the old password is signed out; this request's credential stays.
      await deps.apiKeys.revokeConsoleSessionsOf(principal.userId, principal.keyId);
      return done('Password changed');
    },
  });
};
