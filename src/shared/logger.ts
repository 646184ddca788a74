import pino, { type Logger } from 'pino';

const PARAMS_IN_TEXT = /\nparams:[\s\S]*?(?=\n\s+at |$)/;

/**
 * Errors as pino serializes them, minus the bound parameters a failed query carries (drizzle puts
 * them in the message, the stack and `params`): they can hold password hashes and key hashes.
 */
export function scrubError(err: unknown): unknown {
  const out = pino.stdSerializers.err(err as Error) as unknown as Record<string, unknown>;
  const scrub = (o: Record<string, unknown> | undefined, depth: number): void => {
    if (!o || typeof o !== 'object' || depth > 5) return;
    for (const key of ['message', 'stack'])
      if (typeof o[key] === 'string') o[key] = (o[key] as string).replace(PARAMS_IN_TEXT, '\nparams: [redacted]');
    if ('params' in o) o.params = '[redacted]';
    scrub(o.cause as Record<string, unknown> | undefined, depth + 1);
  };
  scrub(out, 0);
  return out;
}

/** Query-string credentials (a cloud browser's `cdpUrl` carries `token=`) never reach the request log. */
const TOKEN_IN_QUERY = /([?&](?:token|key|secret)=)[^&#]*/gi;
export const scrubUrl = (url: string): string => url.replace(TOKEN_IN_QUERY, '$1[redacted]');

interface LoggedRequest {
  method?: string;
  url?: string;
  hostname?: string;
  ip?: string;
  headers?: Record<string, unknown>;
  socket?: { remoteAddress?: string };
}

/** A request as the request log shows it (Fastify's fields), its query credentials redacted. */
const scrubRequest = (req: LoggedRequest) => ({
  method: req.method,
  url: typeof req.url === 'string' ? scrubUrl(req.url) : req.url,
  host: req.hostname ?? req.headers?.host,
  remoteAddress: req.ip ?? req.socket?.remoteAddress,
});

/** Structured logs; credentials never reach them. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    serializers: { err: scrubError, error: scrubError, req: scrubRequest },
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["x-api-key"]',
        '*.password',
        '*.currentPassword',
        '*.newPassword',
        '*.token',
        '*.apiKey',
        '*.key',
        '*.secret',
      ],
      censor: '[redacted]',
    },
  });
}
