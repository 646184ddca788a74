import { and, eq, lt } from 'drizzle-orm';
import type { FastifyInstance, onSendAsyncHookHandler, preHandlerAsyncHookHandler } from 'fastify';
import type { Db } from '../db/client.ts';
import { idempotencyKeys } from '../db/schema/index.ts';
import { actorOf } from './auth.ts';
import type { Clock } from './clock.ts';
import { sha256 } from './crypto.ts';
import { AppError } from './errors.ts';

const TTL_MS = 24 * 60 * 60_000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `false` on routes whose answer carries a secret: it must never be stored, so the header is ignored. */
    idempotency?: false;
  }
  interface FastifyRequest {
    idempotency?: { userId: string; actorId: string; key: string };
  }
}

const owned = (userId: string, actorId: string, key: string) =>
  and(eq(idempotencyKeys.userId, userId), eq(idempotencyKeys.actorId, actorId), eq(idempotencyKeys.key, key));

/**
 * `Idempotency-Key` on authenticated writes (docs/api.md, API conventions): the first answer is stored and replayed
 * for a retry with the same key and the same request; the same key with another request is a 409.
 * Server errors are not stored, so a retry after one runs again.
 */
export function registerIdempotency(app: FastifyInstance, deps: { db: Db; clock: Clock }): void {
  app.decorateRequest('idempotency', undefined);

  const preHandler: preHandlerAsyncHookHandler = async (request, reply) => {
    const header = request.headers['idempotency-key'];
    if (header === undefined || !request.principal) return;
    const key = Array.isArray(header) ? header[0]! : header;
    if (!KEY_PATTERN.test(key)) {
      throw new AppError('VALIDATION_ERROR', 'Idempotency-Key must be 1–255 visible ASCII characters', {
        details: [{ field: 'idempotency-key', message: 'invalid' }],
      });
    }
    // Keyed by the account and the person: an organization's members choose their keys independently.
    const userId = request.principal.userId;
    const actorId = actorOf(request.principal);
    const path = request.url;
    const requestHash = sha256(`${request.method} ${path}\n${JSON.stringify(request.body ?? null)}`);
    const now = deps.clock.now();
    const inserted = await deps.db
      .insert(idempotencyKeys)
      .values({ userId, actorId, key, method: request.method, path, requestHash, createdAt: now })
      .onConflictDoNothing()
      .returning({ key: idempotencyKeys.key });
    if (inserted.length) {
      request.idempotency = { userId, actorId, key };
      return;
    }
    const [stored] = await deps.db
      .select()
      .from(idempotencyKeys)
      .where(owned(userId, actorId, key))
      .limit(1);
    if (!stored) return; // expired and pruned between the two statements: run it
    if (stored.createdAt.getTime() + TTL_MS < now.getTime()) {
      await deps.db
        .update(idempotencyKeys)
        .set({ method: request.method, path, requestHash, createdAt: now, statusCode: null, responseBody: null })
        .where(owned(userId, actorId, key));
      request.idempotency = { userId, actorId, key };
      return;
    }
    if (stored.requestHash !== requestHash) {
      throw new AppError('CONFLICT', 'This Idempotency-Key was used with a different request', {
        details: [{ field: 'idempotency-key', message: 'reused with a different method, path or body' }],
      });
    }
    if (stored.statusCode === null) {
      throw new AppError('CONFLICT', 'A request with this Idempotency-Key is still in progress', {
        details: [{ field: 'idempotency-key', message: 'in progress' }],
      });
    }
    reply.header('idempotent-replayed', 'true');
    if (stored.contentType) reply.header('content-type', stored.contentType);
    return reply.code(stored.statusCode).send(stored.responseBody);
  };

  const onSend: onSendAsyncHookHandler = async (request, reply, payload) => {
    const marker = request.idempotency;
    if (!marker) return payload;
    request.idempotency = undefined;
    const where = owned(marker.userId, marker.actorId, marker.key);
    if (reply.statusCode >= 500 || (typeof payload !== 'string' && !Buffer.isBuffer(payload))) {
      await deps.db.delete(idempotencyKeys).where(where);
    } else {
      await deps.db
        .update(idempotencyKeys)
        .set({
          statusCode: reply.statusCode,
          contentType: String(reply.getHeader('content-type') ?? ''),
          responseBody: payload.toString(),
        })
        .where(where);
    }
    return payload;
  };

  // Only writes carry the hooks: reads pay nothing for this feature.
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.some((m) => WRITE_METHODS.has(m)) || route.config?.idempotency === false) return;
    route.preHandler = [...toArray(route.preHandler), preHandler];
    route.onSend = [...toArray(route.onSend), onSend];
  });
}

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const toArray = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

export async function pruneIdempotencyKeys(db: Db, clock: Clock): Promise<void> {
  await db.delete(idempotencyKeys).where(lt(idempotencyKeys.createdAt, new Date(clock.now().getTime() - TTL_MS)));
}
