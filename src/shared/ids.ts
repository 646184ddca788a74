import { randomFillSync } from 'node:crypto';
import { v7 as uuidv7, validate, version } from 'uuid';
import { notFound } from './errors.ts';

/**
 * Random bytes drawn 4 KiB at a time: a crawl makes tens of thousands of ids a second, and asking the
 * system for 16 bytes per id (what `uuid` does by default) cost more than the rest of building a lead.
 */
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let poolOffset = POOL_BYTES;
/** The sequence state of RFC 9562's method 1 (a counter seeded at random each millisecond), as `uuid` keeps it. */
const state = { msecs: Number.NEGATIVE_INFINITY, seq: 0 };

function randomBytes16(): Buffer {
  if (poolOffset === POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  poolOffset += 16;
  return pool.subarray(poolOffset - 16, poolOffset);
}

/** Time-ordered ids (UUIDv7): keyset pagination on `id` follows creation order, within a millisecond too. */
export function newId(): string {
  const random = randomBytes16();
  const now = Date.now();
  if (now > state.msecs) {
    state.msecs = now;
    // 31 random bits, as `uuid` seeds it, leaving room to count up within the millisecond.
    state.seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
  } else {
    state.seq = (state.seq + 1) | 0;
    if (state.seq === 0) state.msecs++;
  }
  return uuidv7({ random, msecs: state.msecs, seq: state.seq });
}

/** True when `value` is a UUID the database can compare without a cast error. */
export const isUuid = (value: unknown): value is string =>
  typeof value === 'string' && validate(value) && version(value) <= 8;

/** A client-supplied id in the form the database stores (lower case), or undefined when it cannot name a row. */
export const storedId = (value: unknown): string | undefined => (isUuid(value) ? value.toLowerCase() : undefined);

/**
 * The one guard for ids that come from clients: an id that is not a UUID names nothing (404, never a
 * database cast error); otherwise `find` runs on its stored form, and a miss is a 404 too. `field` names
 * the body field for ids that arrive in a body.
 */
export async function findOwned<T>(
  id: unknown,
  what: string,
  find: (id: string) => Promise<T | undefined | null | false>,
  field?: string,
): Promise<Exclude<T, undefined | null | false>> {
  const key = storedId(id);
  const row = key === undefined ? undefined : await find(key);
  if (!row) throw notFound(what, field);
  return row as Exclude<T, undefined | null | false>;
}
