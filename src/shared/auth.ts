import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authorize, type OrgRole, refusal } from './authorization.ts';
import { AppError } from './errors.ts';
import { assertConsoleRequest, sessionKeyOf } from './session-cookie.ts';

/**
 * The caller of a request, as resolved from its API key. For an organization's key (docs/organizations.md)
 * `userId` is the organization's account, so every module's ownership filter scopes to the organization; the
 * human behind the key is `actorUserId` (and `email`), acting with their current role in it.
 */
export interface Principal {
  userId: string;
  keyId: string;
  /** The human's email (an organization account has none). */
  email: string;
  scopes: string[];
  /** The person who holds the key: `userId` itself for a personal key. */
  actorUserId?: string;
  /** Set for an organization's key: the organization (= `userId`) and the holder's role in it now. */
  orgId?: string;
  orgRole?: OrgRole;
}

/**
 * What authentication needs from the API-key module: a bearer token resolved to its caller (undefined when
 * it is no live key; throws 403 ACCOUNT_SUSPENDED for a live key of a suspended user).
 */
export interface Authenticator {
  authenticate(token: string): Promise<Principal | undefined>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** No credential needed. */
    public?: boolean;
    /** Scope the calling key must hold, e.g. `leads:read`. */
    scope?: string;
  }
  interface FastifyRequest {
    principal?: Principal;
  }
}

const unauthorized = () =>
  new AppError('UNAUTHORIZED', 'Authentication required: send Authorization: Bearer <API key>');

/** A header that is there but not `Bearer <key>` (a bare key, another scheme): say the form, never echo it. */
const malformedAuthorization = () =>
  new AppError(
    'UNAUTHORIZED',
    "The Authorization header must be 'Bearer <API key>': the word Bearer, a space, the key",
    {
      details: [{ field: 'authorization', message: "must be 'Bearer <API key>'" }],
    },
  );

/**
 * Bearer API-key authentication for every route not marked `config.public`; without an Authorization header, the web
 * console's session cookie, checked against cross-site use (src/shared/session-cookie.ts).
 */
export function registerAuth(app: FastifyInstance, apiKeys: Authenticator, options: { publicUrl?: string } = {}): void {
  app.decorateRequest('principal', undefined);
  app.addHook('onRequest', async (request) => {
    const config = request.routeOptions.config;
    const url = request.routeOptions.url;
    // Unknown routes fall through to 404; pages outside /api (docs) are public.
    if (config?.public || !url || !url.startsWith('/api/')) return;
    const header = request.headers.authorization;
    let token: string;
    if (header) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!match) throw malformedAuthorization();
      token = match[1]!;
    } else {
      const sessionKey = sessionKeyOf(request);
      if (!sessionKey) throw unauthorized();
      assertConsoleRequest(request, sessionKey, options.publicUrl);
      token = sessionKey;
    }
    const principal = await apiKeys.authenticate(token);
    if (!principal) throw new AppError('UNAUTHORIZED', 'Invalid, expired or revoked API key');
    if (config?.scope) {
      const decision = authorize(principal, config.scope);
      if (!decision.allowed) throw refusal(decision, config.scope);
    }
    request.principal = principal;
  });
}

/** The person behind a request: the holder of an organization's key, or the owner of a personal one. */
export const actorOf = (principal: Principal): string => principal.actorUserId ?? principal.userId;

/** The authenticated caller of a protected route. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw unauthorized();
  return request.principal;
}
