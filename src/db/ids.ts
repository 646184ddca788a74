import { randomFillSync } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

/**
 * Random bytes drawn 4 KiB at a time: a crawl makes tens of thousands of ids a second, and asking the system for
 * 16 bytes per id (what `uuid` does by default) cost more than the rest of building a lead.
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

/**
 * Time-ordered ids (UUIDv7) for every primary key: keyset pagination on `id` follows creation order, within a
 * millisecond too. Here, beside the schema that uses it as the columns' default; src/shared/ids.ts offers it.
 */
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
