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
