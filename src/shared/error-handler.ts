import type { FastifyError, FastifyInstance } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { ZodError } from 'zod';
import { AppError, type ErrorDetail } from './errors.ts';

const send = (reply: import('fastify').FastifyReply, status: number, code: string, message: string, details?: ErrorDetail[]) =>
  reply.code(status).send({ success: false, error: { code, message, ...(details ? { details } : {}) } });

const fieldOf = (context: string | undefined, path: string) => {
  const field = path.replace(/^\//, '').replace(/\//g, '.');
  return field || context || 'body';
};

/** Maps every failure to the api-spec envelope; bad input is always a 400, never a 500. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | AppError | ZodError, request, reply) => {
    if (err instanceof AppError) {
      if (err.headers) reply.headers(err.headers);
      return send(reply, err.status, err.code, err.message, err.details);
    }
    if (hasZodFastifySchemaValidationErrors(err)) {
      const context = (err as FastifyError).validationContext;
      const details = err.validation.map((v) => ({ field: fieldOf(context, v.instancePath), message: v.message ?? 'invalid' }));
      return send(reply, 400, 'VALIDATION_ERROR', `Invalid ${details.map((d) => d.field).join(', ')}`, details);
    }
    if (err instanceof ZodError) {
      const details = err.issues.map((i) => ({ field: i.path.join('.') || 'body', message: i.message }));
      return send(reply, 400, 'VALIDATION_ERROR', `Invalid ${details.map((d) => d.field).join(', ')}`, details);
    }
    const fe = err as FastifyError;
    if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return send(reply, 415, 'UNSUPPORTED_MEDIA_TYPE', fe.message, [{ field: 'content-type', message: fe.message }]);
    }
    if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return send(reply, 413, 'PAYLOAD_TOO_LARGE', fe.message);
    if (fe.validation || (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500)) {
      // Malformed JSON, empty JSON body, bad content length and similar client faults.
      const field = fe.validationContext ?? 'body';
      return send(reply, fe.statusCode === 413 ? 413 : 400, fe.statusCode === 413 ? 'PAYLOAD_TOO_LARGE' : 'VALIDATION_ERROR', fe.message, [
        { field, message: fe.message },
      ]);
    }
    request.log.error({ err, reqId: request.id, method: request.method, url: request.routeOptions.url }, 'unhandled error');
    return send(reply, 500, 'INTERNAL_ERROR', 'Internal server error');
  });

  app.setNotFoundHandler((request, reply) =>
    send(reply, 404, 'NOT_FOUND', `Route ${request.method} ${request.url.split('?')[0]} not found`),
  );
}
