/**
 * The secret box's binary form (browser profiles and snapshots at rest): a round trip, a fresh IV each time, and a
 * value sealed under another key or altered refused; plaintext JSON and gzip are told apart from sealed values.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import zlib from 'node:zlib';
import { createSecretBox, isSealedBytes } from '../src/shared/crypto.ts';

const box = createSecretBox('a'.repeat(32));
const plain = Buffer.from('{"cookies":[{"name":"sid","value":"s3cret"}]}');

describe('SecretBox.sealBytes / openBytes', () => {
  it('round-trips, hides the value, and seals the same bytes differently each time', () => {
    const sealed = box.sealBytes(plain);
    assert.ok(isSealedBytes(sealed));
    assert.ok(!sealed.includes('s3cret'));
    assert.deepEqual(box.openBytes(sealed), plain);
    assert.notDeepEqual(box.sealBytes(plain), sealed);
    assert.deepEqual(box.openBytes(new Uint8Array(box.sealBytes(Buffer.alloc(0)))), Buffer.alloc(0));
  });

  it('refuses another key and an altered value', () => {
    const sealed = box.sealBytes(plain);
    assert.throws(() => createSecretBox('b'.repeat(32)).openBytes(sealed), /SECRET_KEY/);
    const altered = Buffer.from(sealed);
    altered[altered.length - 1]! ^= 1;
    assert.throws(() => box.openBytes(altered), /SECRET_KEY/);
  });

  it('tells legacy plaintext (JSON, gzip) from sealed values', () => {
    assert.equal(isSealedBytes(plain), false);
    assert.equal(isSealedBytes(zlib.gzipSync(plain)), false);
    assert.throws(() => box.openBytes(plain), /not a sealed value/);
  });
});
