import crypto from 'node:crypto';
import { parseCookie, stringifySetCookie } from 'cookie';
import type { FastifyRequest } from 'fastify';
import { safeEqual } from './crypto.ts';
import { AppError } from './errors.ts';

/**
 * The web console's sign-in (docs/console.md): a console-kind API key carried in an HttpOnly, SameSite=Lax cookie.
 * SameSite does not stop another port of the same host (same site, another origin), so a request authenticated by
 * the cookie is refused when it comes from another origin, and every unsafe one must also carry the CSRF token:
 * a value derived from the cookie that only the console's own pages can read (`GET /api/console/session`).
 */
export const SESSION_COOKIE = 'quarry_session';
export const CSRF_HEADER = 'x-csrf-token';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The CSRF token of a session: an HMAC of a fixed label under the session's own key (nothing stored). */
export const csrfTokenFor = (sessionKey: string): string =>
  crypto.createHmac('sha256', sessionKey).update('quarry console csrf v1').digest('base64url');

const crossSite = (message: string, field: string) =>
  new AppError('FORBIDDEN', message, { details: [{ field, message: 'refused for a cookie-authenticated request' }] });

/** This request's own origin, as the browser names it (proxy headers honoured when TRUST_PROXY is set). */
export const ownOrigin = (request: FastifyRequest): string => `${request.protocol}://${request.host}`;

/**
 * Refuses a request from another origin: browsers send `Origin` on every cross-origin fetch, form post and WebSocket
 * handshake (and on same-origin unsafe ones), so a present `Origin` must be this service's. Requests that carry no
 * `Origin` (an image, a script, a link followed) say where they come from in `Sec-Fetch-Site`: only `same-origin`
 * and `none` (typed, bookmarked) pass.
 */
export function assertSameOrigin(request: FastifyRequest, publicUrl?: string): void {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    throw crossSite('Cross-site request refused: the console session works only from its own pages', 'origin');
  }
  const origin = request.headers.origin;
  if (origin === undefined) return;
  if (origin === ownOrigin(request)) return;
  if (publicUrl && origin === new URL(publicUrl).origin) return;
  throw crossSite('Cross-origin request refused: the console session works only from its own pages', 'origin');
}

/** Checks a cookie-authenticated request: same origin always, and the CSRF token on every unsafe method. */
export function assertConsoleRequest(request: FastifyRequest, sessionKey: string, publicUrl?: string): void {
  assertSameOrigin(request, publicUrl);
  if (SAFE_METHODS.has(request.method)) return;
  const token = request.headers[CSRF_HEADER];
  if (typeof token !== 'string' || !safeEqual(token, csrfTokenFor(sessionKey))) {
    throw crossSite(`Missing or wrong ${CSRF_HEADER} header for a cookie-authenticated request`, CSRF_HEADER);
  }
}

/**
 * The session key a request's cookie carries, if any (parsed only when asked: bearer requests never pay for it).
 * Cookies are shared by every port of a host, and a page on another port can add a second `quarry_session` with a
 * longer path that the browser sends first: two of them are refused, never one picked (docs/console.md).
 */
export function sessionKeyOf(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  const key = parseCookie(header)[SESSION_COOKIE] || undefined;
  if (
    key !== undefined &&
    header.split(';').filter((part) => part.trim().startsWith(`${SESSION_COOKIE}=`)).length > 1
  ) {
    throw new AppError(
      'UNAUTHORIZED',
      `More than one ${SESSION_COOKIE} cookie was sent (another site on this host may have set one): clear this ` +
        "site's cookies and sign in again",
      { details: [{ field: 'cookie', message: `${SESSION_COOKIE} appears more than once` }] },
    );
  }
  return key;
}

/** The Set-Cookie value that stores a session (`maxAgeMs` 0 clears it). */
export const sessionCookie = (key: string, maxAgeMs: number, secure: boolean): string =>
  stringifySetCookie({
    name: SESSION_COOKIE,
    value: key,
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure,
    maxAge: Math.floor(maxAgeMs / 1000),
  });
