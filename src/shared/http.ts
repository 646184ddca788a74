import net from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AppError } from './errors.ts';

/** `{ success: true, data }`: the envelope of every successful answer (docs/api.md, API conventions). */
export const envelope = <T extends z.ZodType>(data: T) => z.object({ success: z.literal(true), data });

export const successOnly = z
  .object({ success: z.literal(true), message: z.string().optional() })
  .meta({ id: 'SuccessResponse' });

export const errorEnvelope = z
  .object({
    success: z.literal(false),
    error: z.object({
      code: z.string(),
      message: z.string(),
      details: z.array(z.object({ field: z.string(), message: z.string() })).optional(),
    }),
  })
  .meta({ id: 'ErrorResponse' });

/** A successful answer carrying data: `{ success: true, data }`. */
export const ok = <T>(data: T) => ({ success: true as const, data });

/** A successful answer with nothing to return but, optionally, what happened: `{ success: true, message }`. */
export const done = (message?: string) =>
  message === undefined ? { success: true as const } : { success: true as const, message };

/**
 * Path parameter `{id}`: any string; ids that name nothing of the caller's answer 404, not 400 (services
 * check isUuid; the router's maxParamLength answers 404 beyond 500 characters).
 */
export const idParams = z.object({ id: z.string().min(1) });

/**
 * Why a request's work stops when its client goes away: an AppError, so the answer nobody receives is not logged as a
 * 500.
 */
export const clientClosedError = () => new AppError('SERVICE_UNAVAILABLE', 'The client closed the connection');

/** Aborts when the client goes away (or already has) before the answer is sent, so pending AI calls stop. */
export function disconnectSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) controller.abort(clientClosedError());
  };
  if (reply.raw.destroyed) onClose();
  else reply.raw.once('close', onClose);
  return controller.signal;
}

export const isoDate = z.iso.datetime({ offset: true });

/**
 * The client's address for records that store one (consent audit): the socket address, or with
 * TRUST_PROXY the forwarded one, and only when it is an IP at all (X-Forwarded-For is client text).
 */
export const clientIp = (request: FastifyRequest): string | undefined =>
  net.isIP(request.ip) ? request.ip : undefined;

/** Standard error responses attached to a route's OpenAPI description. */
export function errorResponses(...statuses: number[]) {
  return Object.fromEntries(statuses.map((s) => [s, errorEnvelope])) as Record<number, typeof errorEnvelope>;
}
