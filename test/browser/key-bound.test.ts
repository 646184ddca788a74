// The registry that closes connections opened with a key's credentials (src/modules/browser/sessions/key-bound.ts):
// decisions only, with the keys' service as a small in-memory stand-in (the HTTP path is in browser-cdp and
// browser-live tests).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { createKeyBoundClients } from '../../src/modules/browser/sessions/key-bound.ts';

function keysStandIn() {
  const live = new Set<string>();
  const watchers = new Set<(keyId: string) => void>();
  return {
    live,
    revoke(keyId: string) {
      live.delete(keyId);
      for (const watcher of watchers) watcher(keyId);
    },
    watched: () => watchers.size,
    apiKeys: {
      liveKeyIds: async (keyIds: string[]) => new Set(keyIds.filter((id) => live.has(id))),
      watchKeys(watcher: (keyId: string) => void) {
        watchers.add(watcher);
        return () => void watchers.delete(watcher);
      },
    },
  };
}

/** A started registry over the stand-in with `live` keys; `closed` lists the connections it closed, in order. */
function startedRegistry(live: string[], recheckMs = 60_000) {
  const keys = keysStandIn();
  for (const id of live) keys.live.add(id);
  const clients = createKeyBoundClients(
    { apiKeys: keys.apiKeys as never, logger: pino({ level: 'silent' }) },
    recheckMs,
  );
  clients.start();
  return { keys, clients, closed: [] as string[] };
}

test('a revocation closes every connection of that key at once, and only those', () => {
  const { keys, clients, closed } = startedRegistry(['a', 'b']);
  clients.add('a', () => closed.push('a1'));
  clients.add('a', () => closed.push('a2'));
  clients.add('b', () => closed.push('b1'));
  const removeGone = clients.add('a', () => closed.push('gone'));
  removeGone(); // that connection closed by itself before
  clients.add(null, () => closed.push('keyless')); // made without a key (internal): never closed by a key
  keys.revoke('a');
  assert.deepEqual(closed, ['a1', 'a2']);
  keys.revoke('a'); // a second notice (another process) closes nothing twice
  assert.deepEqual(closed, ['a1', 'a2']);
  clients.stop();
  assert.equal(keys.watched(), 0);
  keys.revoke('b');
  assert.deepEqual(closed, ['a1', 'a2'], 'a stopped registry no longer listens');
});

test("a close that throws does not keep the key's other connections open", () => {
  const { keys, clients, closed } = startedRegistry(['a']);
  clients.add('a', () => {
    throw new Error('socket already gone');
  });
  clients.add('a', () => closed.push('a2'));
  keys.revoke('a');
  assert.deepEqual(closed, ['a2']);
  clients.stop();
});

test('a key that expired (no event) is found by the periodic recheck', async () => {
  const { keys, clients, closed } = startedRegistry(['a', 'b'], 20);
  clients.add('a', () => closed.push('a'));
  clients.add('b', () => closed.push('b'));
  keys.live.delete('a'); // expired: nothing is published
  const deadline = Date.now() + 2000;
  while (closed.length === 0 && Date.now() < deadline) await sleep(10);
  assert.deepEqual(closed, ['a']);
  await sleep(60);
  assert.deepEqual(closed, ['a'], 'a live key keeps its connection, and a closed one is not closed again');
  clients.stop();
});
