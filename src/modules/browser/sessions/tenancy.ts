/**
 * X-Client-Ref (api-spec.md Authentication 4), in one place for every browser route: with the header a request
 * sees only what was recorded with the same ref (everything else is 404, as if it did not exist); without it,
 * the key-wide view. Create takes the ref from the header when the body omits it; a differing body ref is 400.
 */
import type { FastifyRequest } from 'fastify';
import { principalOf } from '../../../shared/auth.ts';
import { AppError, validationError } from '../../../shared/errors.ts';
import type { SessionScope } from './sessions.repository.ts';
import { clientRefSchema } from './sessions.schemas.ts';

export const CLIENT_REF_HEADER = 'x-client-ref';

/** The header's ref, checked; undefined without the header. */
export function clientRefOf(request: FastifyRequest): string | undefined {
  const header = request.headers[CLIENT_REF_HEADER];
  if (header === undefined) return undefined;
  const parsed = clientRefSchema.safeParse(header);
  if (!parsed.success) throw validationError('X-Client-Ref', parsed.error.issues[0]?.message ?? 'invalid');
  return parsed.data;
}

/** What this request may see. */
export function scopeOf(request: FastifyRequest): SessionScope {
  return { userId: principalOf(request).userId, clientRef: clientRefOf(request) };
}

/** The ref a created thing is recorded with. */
export function refForCreate(headerRef: string | undefined, bodyRef: string | undefined): string | null {
  if (headerRef !== undefined && bodyRef !== undefined && bodyRef !== headerRef) {
    throw new AppError('CLIENT_REF_MISMATCH', 'The body clientRef differs from the X-Client-Ref header', {
      details: [{ field: 'clientRef', message: 'must equal the X-Client-Ref header' }],
    });
  }
  return bodyRef ?? headerRef ?? null;
}
