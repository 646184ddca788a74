import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { clientIp, envelope, errorResponses, ok } from '../../shared/http.ts';
import { hitWindowLimit, LOGIN_LIMIT, SIGNUP_LIMIT } from '../../shared/rate-limit.ts';
import {
  assertConsoleRequest,
  assertSameOrigin,
  CSRF_HEADER,
  csrfTokenFor,
  SESSION_COOKIE,
  sessionCookie,
  sessionKeyOf,
} from '../../shared/session-cookie.ts';
import { userView } from '../users/index.ts';
import { loginBody, signupBody } from './auth.schemas.ts';
import { CONSOLE_SESSION_MS, createAuthService } from './auth.service.ts';

const consoleSessionView = z
  .object({
    user: userView.pick({ id: true, email: true }),
    csrfToken: z
      .string()
      .describe(`Send it as the ${CSRF_HEADER} header on every unsafe request the cookie authenticates`),
  })
  .meta({ id: 'ConsoleSession' });

const TAGS = ['Web console'];
const COOKIE_NOTE =
  `Sets the \`${SESSION_COOKIE}\` cookie (HttpOnly, SameSite=Lax, Secure when PUBLIC_URL is https; 14 days). ` +
  'Refused (403) from another origin. Rate limit: 5 requests per 15 minutes per client IP, shared with the API route.';

/**
 * The web console's sign-in (docs/console.md): the same accounts as /api/auth, a session in an HttpOnly cookie
 * instead of a key handed to the page. Requests the cookie authenticates are checked in the auth hook.
 */
export const consoleSessionRoutes: RouteModule = (app, deps) => {
  const auth = createAuthService(deps);
  const secure = deps.config.PUBLIC_URL?.startsWith('https:') ?? false;
  const setSession = (reply: FastifyReply, key: string) =>
    reply.header('set-cookie', sessionCookie(key, CONSOLE_SESSION_MS, secure));
  /** The session a new sign-in replaces: ended, so signing in again never leaves the old one alive. */
  const endPrevious = async (request: FastifyRequest) => {
    const previous = (() => {
      try {
        return sessionKeyOf(request);
      } catch {
        return undefined;
      }
    })();
    if (previous) await deps.apiKeys.revokeConsoleKey(previous);
  };
  const sameOrigin = async (request: Parameters<typeof assertSameOrigin>[0]) =>
    assertSameOrigin(request, deps.config.PUBLIC_URL);

  app.post('/api/console/sign-up', {
    config: { public: true },
    onRequest: [sameOrigin, async (request) => hitWindowLimit(deps.db, deps.clock, SIGNUP_LIMIT, request.ip)],
    schema: {
      tags: TAGS,
      summary: 'Create an account and sign in to the web console',
      description: `The body of POST /api/auth/signup. ${COOKIE_NOTE}`,
      security: [],
      body: signupBody,
      response: { 201: envelope(consoleSessionView), ...errorResponses(400, 403, 409, 429) },
    },
    handler: async (request, reply) => {
      const { user, apiKey } = await auth.signup(request.body, clientIp(request), 'console-session');
      await endPrevious(request);
      setSession(reply, apiKey).code(201);
      return ok({ user: { id: user.id, email: user.email }, csrfToken: csrfTokenFor(apiKey) });
    },
  });

  app.post('/api/console/sign-in', {
    config: { public: true },
    onRequest: [sameOrigin, async (request) => hitWindowLimit(deps.db, deps.clock, LOGIN_LIMIT, request.ip)],
    schema: {
      tags: TAGS,
      summary: 'Sign in to the web console with email and password',
      description: COOKIE_NOTE,
      security: [],
      body: loginBody,
      response: { 200: envelope(consoleSessionView), ...errorResponses(400, 401, 403, 429) },
    },
    handler: async (request, reply) => {
      const { user, apiKey } = await auth.login(request.body.email, request.body.password, 'console-session');
      await endPrevious(request);
      setSession(reply, apiKey);
      return ok({ user: { id: user.id, email: user.email }, csrfToken: csrfTokenFor(apiKey) });
    },
  });

  app.get('/api/console/session', {
    schema: {
      tags: TAGS,
      summary: "The console session's user and CSRF token",
      description: 'Authenticated by the session cookie (401 without one). With a bearer key, `csrfToken` is empty.',
      response: { 200: envelope(consoleSessionView), ...errorResponses(401) },
    },
    handler: async (request) => {
      const principal = principalOf(request);
      const key = request.headers.authorization ? undefined : sessionKeyOf(request);
      return ok({
        user: { id: principal.userId, email: principal.email },
        csrfToken: key ? csrfTokenFor(key) : '',
      });
    },
  });

  app.post('/api/console/sign-out', {
    config: { public: true },
    onRequest: sameOrigin,
    schema: {
      tags: TAGS,
      summary: 'Sign out: ends the console session server-side and clears its cookie',
      description:
        `Needs the ${CSRF_HEADER} header when a session cookie is sent. Without a cookie it only clears it; either ` +
        'way the answer is 200.',
      security: [],
      response: { 200: z.object({ success: z.literal(true), message: z.string() }), ...errorResponses(403) },
    },
    handler: async (request, reply) => {
      const key = sessionKeyOf(request);
      // A session that still works is ended, and only from the console's own pages (a cross-site page must not
      // sign the user out); a dead one's cookie is just cleared, whoever asks.
      if (key && (await deps.apiKeys.authenticate(key).catch(() => undefined))) {
        assertConsoleRequest(request, key, deps.config.PUBLIC_URL);
        await deps.apiKeys.revokeConsoleKey(key);
      }
      reply.header('set-cookie', sessionCookie('', 0, secure));
      return { success: true as const, message: 'Signed out' };
    },
  });
};
