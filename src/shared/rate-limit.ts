import { sql } from 'drizzle-orm';
import { type Db, queryRows } from '../db/client.ts';
import { rateLimitEvents } from '../db/schema/index.ts';
import type { Clock } from './clock.ts';
import { AppError } from './errors.ts';
import { newId } from './ids.ts';

export interface WindowLimit {
  bucket: string;
  limit: number;
  windowMs: number;
}

export const SIGNUP_LIMIT: WindowLimit = { bucket: 'auth:signup', limit: 5, windowMs: 15 * 60_000 };
export const LOGIN_LIMIT: WindowLimit = { bucket: 'auth:login', limit: 5, windowMs: 15 * 60_000 };

const UNITS: Array<[name: string, seconds: number]> = [
  ['day', 86_400],
  ['hour', 3_600],
  ['minute', 60],
  ['second', 1],
];
const counted = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`;

/**
 * A wait a person reads at a glance: days and hours, hours and minutes, minutes, or seconds. Rounded up
 * in its smallest unit, so a retry at the time it says is never early (`Retry-After` has the exact seconds).
 */
export function humanDuration(seconds: number): string {
  const s = Math.max(1, Math.ceil(seconds));
  const big = UNITS.findIndex(([, size]) => s >= size);
  const [bigName, bigSize] = UNITS[big]!;
  // Under an hour, minutes alone; under a minute, seconds alone.
  const small = bigSize >= 3_600 ? UNITS[big + 1]! : UNITS[big]!;
  const total = Math.ceil(s / small[1]);
  // Rounding up may reach the next larger unit (3,599 s → 60 minutes): told in that unit.
  if (big > 0 && total * small[1] >= UNITS[big - 1]![1]) return humanDuration(total * small[1]);
  const per = bigSize / small[1];
  const [whole, rest] = [Math.floor(total / per), total % per];
  if (small === UNITS[big] || rest === 0) return counted(whole, bigName);
  return `${counted(whole, bigName)} ${counted(rest, small[0])}`;
}

export function rateLimitError(retryAfterMs: number): AppError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new AppError('RATE_LIMIT_EXCEEDED', `Too many requests; retry in ${humanDuration(seconds)}`, {
    headers: { 'retry-after': String(seconds) },
  });
}

/**
 * Counts every request (refused ones included) against a per-subject sliding window kept in the
 * database, so the limit holds across restarts and across API processes. Throws 429 when over.
 */
export async function hitWindowLimit(db: Db, clock: Clock, limit: WindowLimit, subject: string): Promise<void> {
  const now = clock.now();
  const since = new Date(now.getTime() - limit.windowMs);
  const rows = await queryRows<{ count: number; oldest: Date | string | null }>(
    db,
    sql`
    WITH ins AS (
      INSERT INTO ${rateLimitEvents} (id, bucket, subject, created_at)
      VALUES (${newId()}, ${limit.bucket}, ${subject}, ${now.toISOString()})
    )
    SELECT count(*)::int AS count, min(created_at) AS oldest FROM ${rateLimitEvents}
    WHERE bucket = ${limit.bucket} AND subject = ${subject} AND created_at > ${since.toISOString()}`,
  );
  const row = rows[0]!;
  // The CTE's insert is not visible to the SELECT of the same statement: +1 for this request.
  if (Number(row.count) + 1 > limit.limit) {
    const oldest = row.oldest ? new Date(row.oldest).getTime() : now.getTime();
    throw rateLimitError(oldest + limit.windowMs - now.getTime());
  }
}

/** Drops window entries older than any window in use (run by the maintenance job). */
export async function pruneRateLimitEvents(db: Db, clock: Clock, olderThanMs = 24 * 60 * 60_000): Promise<void> {
  await db.execute(
    sql`DELETE FROM ${rateLimitEvents}
        WHERE created_at < ${new Date(clock.now().getTime() - olderThanMs).toISOString()}`,
  );
}
