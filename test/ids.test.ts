import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validate, version } from 'uuid';
import { newId } from '../src/shared/ids.ts';

test('newId: valid UUIDv7s, all distinct, each greater than the one before (keyset order = creation order)', () => {
  const ids = Array.from({ length: 50_000 }, newId);
  assert.equal(new Set(ids).size, ids.length);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    assert.ok(validate(id) && version(id) === 7, id);
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    if (i > 0) assert.ok(id > ids[i - 1]!, `${id} after ${ids[i - 1]}`);
  }
  // The first 48 bits are the creation time in milliseconds.
  const msecs = Number.parseInt(ids.at(-1)!.replaceAll('-', '').slice(0, 12), 16);
  assert.ok(Math.abs(msecs - Date.now()) < 5_000);
  // Random bits differ between ids (the pool is refilled, not reused): the last 12 hex digits repeat never.
  assert.equal(new Set(ids.map((id) => id.slice(-12))).size, ids.length);
});
