import pino, { type Logger } from 'pino';

/** Structured logs; credentials never reach them. */
export function createLogger(level: string): Logger {
  return pino({
    level,
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
