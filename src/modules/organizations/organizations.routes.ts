import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { done, envelope, errorResponses, ok, successOnly } from '../../shared/http.ts';
import {
  acceptInvitationBody,
  changeRoleBody,
  createOrganizationBody,
  invitationParams,
  invitationView,
  inviteBody,
  memberParams,
  organizationDetailView,
  organizationView,
  orgParams,
} from './organizations.schemas.ts';
import { createOrganizationService } from './organizations.service.ts';

const tags = ['Organizations'];
const detail = envelope(z.object({ organization: organizationDetailView }));

/** Teams (docs/organizations.md): an organization is an account its members act for with organization keys. */
export const organizationRoutes: RouteModule = (app, deps) => {
  const orgs = createOrganizationService(deps);

  app.post('/api/orgs', {
    config: { scope: 'orgs:write' },
    schema: {
      tags,
      summary: 'Create an organization; the caller becomes its owner',
      description: 'The organization is an account of its own, with a credit balance starting at 0.',
      body: createOrganizationBody,
      response: { 201: detail, ...errorResponses(400, 401, 403) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ organization: await orgs.create(principalOf(request), request.body.name) });
    },
  });

  app.get('/api/orgs', {
    config: { scope: 'orgs:read' },
    schema: {
      tags,
      summary: "The caller's organizations with their role in each",
      response: { 200: envelope(z.object({ organizations: z.array(organizationView) })), ...errorResponses(401) },
    },
    handler: async (request) => ok({ organizations: await orgs.list(principalOf(request)) }),
  });

  app.post('/api/orgs/invitations/accept', {
    config: { scope: 'orgs:write' },
    schema: {
      tags,
      summary: 'Join an organization with the token of an invitation sent to your email',
      description:
        '400 INVALID_TOKEN when the token is unknown, expired (7 days) or used; 403 when the invitation names another ' +
        'email; 409 when you are already a member.',
      body: acceptInvitationBody,
      response: { 200: detail, ...errorResponses(400, 401, 403, 409) },
    },
    handler: async (request) => ok({ organization: await orgs.accept(principalOf(request), request.body.token) }),
  });

  app.get('/api/orgs/:orgId', {
    config: { scope: 'orgs:read' },
    schema: {
      tags,
      summary: 'The organization with its members and pending invitations',
      params: orgParams,
      response: { 200: detail, ...errorResponses(401, 403, 404) },
    },
    handler: async (request) => ok({ organization: await orgs.get(principalOf(request), request.params.orgId) }),
  });

  app.post('/api/orgs/:orgId/members', {
    config: { scope: 'orgs:write' },
    schema: {
      tags,
      summary: 'Invite a person by email with a role (admins and owners; only owners invite owners)',
      description:
        'Mails a single-use token valid for 7 days: a person with an account accepts it with ' +
        'POST /api/orgs/invitations/accept, a new one signs up with `invitationToken`.',
      params: orgParams,
      body: inviteBody,
      response: {
        201: envelope(z.object({ invitation: invitationView })),
        ...errorResponses(400, 401, 403, 404, 409, 503),
      },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ invitation: await orgs.invite(principalOf(request), request.params.orgId, request.body) });
    },
  });

  app.patch('/api/orgs/:orgId/members/:memberId', {
    config: { scope: 'orgs:write' },
    schema: {
      tags,
      summary: "Change a member's role (admins: members and admins; owners: anyone)",
      description: '409 LAST_OWNER when it would leave the organization without an owner.',
      params: memberParams,
      body: changeRoleBody,
      response: { 200: detail, ...errorResponses(400, 401, 403, 404, 409) },
    },
    handler: async (request) => {
      const { orgId, memberId } = request.params;
      return ok({ organization: await orgs.changeRole(principalOf(request), orgId, memberId, request.body.role) });
    },
  });

  app.delete('/api/orgs/:orgId/members/:memberId', {
    config: { scope: 'orgs:write' },
    schema: {
      tags,
      summary: 'Remove a member, or leave (your own id); their keys of the organization stop at once',
      description: '409 LAST_OWNER for the last owner.',
      params: memberParams,
      response: { 200: successOnly, ...errorResponses(401, 403, 404, 409) },
    },
    handler: async (request) => {
      await orgs.remove(principalOf(request), request.params.orgId, request.params.memberId);
      return done('Member removed');
    },
  });

  app.delete('/api/orgs/:orgId/invitations/:invitationId', {
    config: { scope: 'orgs:write' },
    schema: {
      tags,
      summary: 'Withdraw a pending invitation (admins and owners; only owners withdraw an owner invitation)',
      description: 'Its token no longer joins. 404 for an unknown, accepted or another organization’s invitation.',
      params: invitationParams,
      response: { 200: successOnly, ...errorResponses(401, 403, 404) },
    },
    handler: async (request) => {
      const { orgId, invitationId } = request.params;
      await orgs.withdrawInvitation(principalOf(request), orgId, invitationId);
      return done('Invitation withdrawn');
    },
  });
};
