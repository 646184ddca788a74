import type { RouteModule } from '../../route-module.ts';
import { clientIp, envelope, errorResponses, ok } from '../../shared/http.ts';
import { hitWindowLimit, LOGIN_LIMIT, SIGNUP_LIMIT } from '../../shared/rate-limit.ts';
import { loginBody, sessionView, signupBody } from './auth.schemas.ts';
import { createAuthService } from './auth.service.ts';

export const authRoutes: RouteModule = (app, deps) => {
  const auth = createAuthService(deps);

  app.post('/api/auth/signup', {
    config: { public: true },
    // Counted before parsing: per-IP limits count every request, refused ones included.
    onRequest: async (request) => hitWindowLimit(deps.db, deps.clock, SIGNUP_LIMIT, request.ip),
    schema: {
      tags: ['Authentication'],
      summary: 'Create an account; answers the first API key (shown once)',
      security: [],
      body: signupBody,
      description:
        'Rate limit: 5 requests per 15 minutes per client IP. With `invitationToken` the account joins the ' +
        'organization that invited this email (400 INVALID_TOKEN, 403 for another email: nothing is created).',
      response: { 201: envelope(sessionView), ...errorResponses(400, 403, 409, 429) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok(await auth.signup(request.body, clientIp(request)));
    },
  });

  app.post('/api/auth/login', {
    config: { public: true },
    onRequest: async (request) => hitWindowLimit(deps.db, deps.clock, LOGIN_LIMIT, request.ip),
    schema: {
      tags: ['Authentication'],
      summary: 'Exchange email and password for a new API key',
      description:
        'Rate limit: 5 requests per 15 minutes per client IP. 403 ACCOUNT_SUSPENDED when an admin suspended the account.',
      security: [],
      body: loginBody,
      response: { 200: envelope(sessionView), ...errorResponses(400, 401, 403, 429) },
    },
    handler: async (request) => ok(await auth.login(request.body.email, request.body.password)),
  });
};
