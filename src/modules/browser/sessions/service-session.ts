/**
 * A browser session the service itself drives for one of its users (the professional network's enrichment,
 * docs/professional-network.md): created, counted, charged and ended as the user's own sessions are (it shows in
 * their session list with its `metadata`), released when `fn` settles. It goes through the sessions service's
 * request-facing create and release with a request made for the user (no X-Client-Ref: the key-wide view), so
 * admission, limits, credits and events stay in one place.
 */
import type { FastifyRequest } from 'fastify';
import type { Browser } from 'playwright-core';
import type { AppDeps } from '../../../deps.ts';
import { createSessionBody } from './sessions.schemas.ts';
import { browserSessionsOf } from './sessions.service.ts';

export async function withServiceSession<T>(
  deps: AppDeps,
  userId: string,
  metadata: Record<string, string>,
  fn: (browser: Browser) => Promise<T>,
): Promise<T> {
  const sessions = browserSessionsOf(deps);
  const request = {
    principal: { userId, keyId: null, email: '', scopes: ['browser:write'] },
    headers: {},
  } as unknown as FastifyRequest;
  const session = await sessions.create(request, createSessionBody.parse({ metadata }), '');
  try {
    return await fn(await sessions.playwright(session.id));
  } finally {
    await sessions.release(request, session.id, '').catch((err) => {
      deps.logger.warn({ err, sessionId: session.id }, 'a service browser session was not released');
    });
  }
}
