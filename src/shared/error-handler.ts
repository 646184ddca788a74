import type { FastifyError, FastifyInstance } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { ZodError } from 'zod';
import { isConnectionError, pgErrorCode } from './db-errors.ts';
import { AppError, type ErrorDetail, validationError } from './errors.ts';

const send = (
  reply: import('fastify').FastifyReply,
  status: number,
  code: string,
  message: string,
  details?: ErrorDetail[],
) => reply.code(status).send({ success: false, error: { code, message, ...(details ? { details } : {}) } });

const fieldOf = (context: string | undefined, path: string) => {
  const field = path.replace(/^\//, '').replace(/\//g, '.');
  return field || context || 'body';
};

/** Maps every failure to the error envelope (docs/api.md, Errors); bad input is always a 400, never a 500. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | AppError | ZodError, request, reply) => {
    if (err instanceof AppError) {
      if (err.headers) reply.headers(err.headers);
      return send(reply, err.status, err.code, err.message, err.details);
    }
    if (hasZodFastifySchemaValidationErrors(err)) {
      const context = (err as FastifyError).validationContext;
      const details = onePerField(
        err.validation.map((v) => ({ field: fieldOf(context, v.instancePath), message: v.message ?? 'invalid' })),
      );
      return send(reply, 400, 'VALIDATION_ERROR', `Invalid ${details.map((d) => d.field).join(', ')}`, details);
    }
    if (err instanceof ZodError) {
      const details = onePerField(err.issues.map((i) => ({ field: i.path.join('.') || 'body', message: i.message })));
      return send(reply, 400, 'VALIDATION_ERROR', `Invalid ${details.map((d) => d.field).join(', ')}`, details);
    }
    // A value PostgreSQL refuses (SQLSTATE class 22, data exception) is the client's input: a 400.
    if (pgErrorCode(err)?.startsWith('22')) {
      request.log.warn({ err, reqId: request.id }, 'input refused by the database');
      return send(reply, 400, 'VALIDATION_ERROR', 'A value could not be stored', [
        { field: 'body', message: 'a value could not be stored' },
      ]);
    }
    const fe = err as FastifyError;
    if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return send(reply, 415, 'UNSUPPORTED_MEDIA_TYPE', fe.message, [{ field: 'content-type', message: fe.message }]);
    }
    if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return send(reply, 413, 'PAYLOAD_TOO_LARGE', fe.message);
    if (fe.validation || (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500)) {
      // Malformed JSON, empty JSON body, bad content length and similar client faults.
      const field = fe.validationContext ?? 'body';
      return send(
        reply,
        fe.statusCode === 413 ? 413 : 400,
        fe.statusCode === 413 ? 'PAYLOAD_TOO_LARGE' : 'VALIDATION_ERROR',
        fe.message,
        [{ field, message: fe.message }],
      );
    }
    if (isConnectionError(err)) {
      const where = { reqId: request.id, method: request.method, url: request.routeOptions.url };
      request.log.warn({ err, ...where }, 'database connection lost');
      reply.header('retry-after', String(DB_RETRY_AFTER_SECONDS));
      return send(reply, 503, 'SERVICE_UNAVAILABLE', 'The database connection was lost; try again shortly');
    }
    request.log.error(
      { err, reqId: request.id, method: request.method, url: request.routeOptions.url },
      'unhandled error',
    );
    return send(reply, 500, 'INTERNAL_ERROR', 'Internal server error');
  });
  retrySafeReadsOnce(app);

  // PostgreSQL text cannot hold U+0000: refuse it up front, naming the field, rather than fail in SQL.
  app.addHook('preValidation', async (request) => {
    for (const [part, value] of [
      ['body', request.body],
      ['query', request.query],
    ] as const) {
      const at = findNul(value, '');
      if (at !== undefined) throw validationError(at || part, 'must not contain NUL (U+0000) characters');
    }
  });

  app.setNotFoundHandler((request, reply) =>
    send(reply, 404, 'NOT_FOUND', `Route ${request.method} ${request.url.split('?')[0]} not found`),
  );
}

/** One detail per field (a value can fail several checks), its distinct messages joined, in first-seen order. */
function onePerField(details: ErrorDetail[]): ErrorDetail[] {
  const byField = new Map<string, string[]>();
  for (const { field, message } of details) {
    const messages = byField.get(field) ?? [];
    if (!messages.includes(message)) messages.push(message);
    byField.set(field, messages);
  }
  return [...byField].map(([field, messages]) => ({ field, message: messages.join('; ') }));
}

/** What a 503 for a lost database connection tells the client to wait (`Retry-After`). */
const DB_RETRY_AFTER_SECONDS = 5;

/**
 * A GET or HEAD handler that fails on a lost database connection runs once more: the pool has dropped
 * the broken connection, so the retry gets a working one (a read is safe to repeat). Routes added after
 * this hook, i.e. every route of the service.
 */
function retrySafeReadsOnce(app: FastifyInstance): void {
  const wrapped = new WeakSet<object>();
  app.addHook('onRoute', (route) => {
    const methods = [route.method].flat();
    if (!methods.every((m) => m === 'GET' || m === 'HEAD') || wrapped.has(route.handler)) return;
    const handler = route.handler;
    const retrying: typeof handler = async function (this: FastifyInstance, request, reply) {
      try {
        return await handler.call(this, request, reply);
      } catch (err) {
        if (reply.sent || !isConnectionError(err)) throw err;
        const url = request.routeOptions.url;
        request.log.warn({ err, reqId: request.id, url }, 'database connection lost; read again');
        return await handler.call(this, request, reply);
      }
    };
    wrapped.add(retrying);
    route.handler = retrying;
  });
}

/**
 * Path of the first string (or key) holding U+0000, or undefined. The path is built only on the way back from a find:
 * every JSON body goes through this, and nearly none holds one.
 */
function findNul(value: unknown, path: string, depth = 0): string | undefined {
  const keys = nulKeys(value, depth);
  if (keys === undefined) return undefined;
  return [path, ...keys.reverse()].filter(Boolean).join('.');
}

/** The keys down to the first U+0000, innermost first, or undefined. */
function nulKeys(value: unknown, depth: number): string[] | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? [] : undefined;
  if (!value || typeof value !== 'object' || depth > 32) return undefined;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (key.includes('\u0000')) return [key];
    const found = nulKeys((value as Record<string, unknown>)[key], depth + 1);
    if (found !== undefined) {
      found.push(key);
      return found;
    }
  }
  return undefined;
}
