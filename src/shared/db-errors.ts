/** Looks through a driver error and its causes (drizzle wraps pg and PGlite errors in `cause`). */
function fromErrorChain<T>(err: unknown, pick: (e: Record<string, unknown>) => T | undefined): T | undefined {
  let e: unknown = err;
  for (let depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const found = pick(e as Record<string, unknown>);
    if (found !== undefined) return found;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** PostgreSQL error code (SQLSTATE) of a driver error. */
export const pgErrorCode = (err: unknown): string | undefined =>
  fromErrorChain(err, (e) => (typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? e.code : undefined));

/** Name of the constraint a driver error names, if any. */
export const pgConstraint = (err: unknown): string | undefined =>
  fromErrorChain(err, (e) => (typeof e.constraint === 'string' ? e.constraint : undefined));

export const isUniqueViolation = (err: unknown): boolean => pgErrorCode(err) === '23505';
export const isForeignKeyViolation = (err: unknown): boolean => pgErrorCode(err) === '23503';

/** SQLSTATEs of a lost or refused connection: class 08, server shutdown or restart (57P0x), too many connections. */
const CONNECTION_SQLSTATE = /^(08...|57P0[1-5]|53300)$/;
/** Socket-level failures reaching the database. */
const CONNECTION_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/** pg's and pg-pool's own messages for a connection that ended, timed out or cannot be used. */
const CONNECTION_MESSAGE = new RegExp(
  [
    'Connection terminated',
    'timeout exceeded when trying to connect',
    'is not queryable',
    'is not currently accepting connections',
    'the database system is (starting up|shutting down|in recovery mode)',
  ].join('|'),
);

/**
 * A failure of the connection rather than of the statement (the database restarted, a backend was
 * terminated, connections are refused or time out): worth a retry later, never the client's fault.
 */
export const isConnectionError = (err: unknown): boolean =>
  fromErrorChain(err, (e) => {
    const code = typeof e.code === 'string' ? e.code : undefined;
    if (code && (CONNECTION_SQLSTATE.test(code) || CONNECTION_ERRNO.has(code))) return true;
    return typeof e.message === 'string' && CONNECTION_MESSAGE.test(e.message) ? true : undefined;
  }) ?? false;
