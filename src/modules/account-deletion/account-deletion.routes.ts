import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { done, envelope, errorResponses, ok, successOnly } from '../../shared/http.ts';
import {
  confirmDeletionBody,
  deletionRequestedView,
  deletionScheduledView,
  deletionStatusView,
} from './account-deletion.schemas.ts';
import { createAccountDeletionService } from './account-deletion.service.ts';

export const accountDeletionRoutes: RouteModule = (app, deps) => {
  const deletion = createAccountDeletionService(deps);
  const tags = ['Account deletion'];

  app.post('/api/users/deletion', {
    config: { scope: 'users:write' },
    schema: {
      tags,
      summary: 'Ask to delete the account: emails a confirmation token valid 24 hours',
      description:
        'Rate limit: 1 accepted request per day per user (429 with Retry-After). 409 CONFLICT when a deletion is ' +
        'already scheduled.',
      response: { 200: envelope(deletionRequestedView), ...errorResponses(401, 409, 429, 503) },
    },
    handler: async (request) => ok(await deletion.request(principalOf(request).userId)),
  });

  app.post('/api/users/deletion/confirm', {
    config: { scope: 'users:write' },
    schema: {
      tags,
      summary: 'Confirm with the emailed token: the account is erased after a 30-day grace period',
      body: confirmDeletionBody,
      response: { 200: envelope(deletionScheduledView), ...errorResponses(400, 401) },
    },
    handler: async (request) => ok(await deletion.confirm(principalOf(request).userId, request.body.token)),
  });

  app.post('/api/users/deletion/cancel', {
    config: { scope: 'users:write' },
    schema: {
      tags,
      summary: 'Cancel a requested or scheduled deletion',
      response: { 200: successOnly, ...errorResponses(400, 401) },
    },
    handler: async (request) => {
      await deletion.cancel(principalOf(request).userId);
      return done('Account deletion cancelled');
    },
  });

  app.get('/api/users/deletion/status', {
    config: { scope: 'users:read' },
    schema: {
      tags,
      summary: 'Deletion state: none, requested (awaiting the emailed token) or scheduled',
      response: { 200: envelope(deletionStatusView), ...errorResponses(401) },
    },
    handler: async (request) => ok(await deletion.status(principalOf(request).userId)),
  });
};
