// The coalesced write of the latest state (src/shared/coalesced.ts) that a scrape job's heartbeat and progress use.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { coalesced } from '../src/shared/coalesced.ts';

/** A task whose runs wait until released, recording the state each one read when it started. */
function gatedTask(state: { value: number }) {
  const reads: number[] = [];
  const gates: Array<() => void> = [];
  return {
    reads,
    task: () => {
      reads.push(state.value);
      return new Promise<void>((resolve) => gates.push(resolve));
    },
    /** Releases the runs started so far. */
    release: () => {
      for (const open of gates.splice(0)) open();
    },
  };
}
const tick = () => new Promise((r) => setImmediate(r));

test('asked 100 times while one run is in flight, it runs once more, with the state of when that run starts', async () => {
  const state = { value: 0 };
  const { reads, task, release } = gatedTask(state);
  const writes = coalesced(task, (err) => assert.fail(String(err)));
  writes.run();
  await tick();
  for (let i = 1; i <= 100; i++) {
    state.value = i;
    writes.run();
  }
  state.value = 101;
  let settled = false;
  void writes.settled().then(() => (settled = true));
  for (let turn = 0; turn < 500 && !settled; turn++) {
    release();
    await tick();
  }
  assert.deepEqual(reads, [0, 101]);
  // Idle again: the next ask runs at once.
  writes.run();
  await tick();
  release();
  await writes.settled();
  assert.deepEqual(reads, [0, 101, 101]);
});

test('a run that fails goes to onError and later runs go on; settled never rejects', async () => {
  const errors: unknown[] = [];
  let runs = 0;
  const writes = coalesced(
    async () => {
      runs++;
      if (runs === 1) throw new Error('database busy');
    },
    (err) => errors.push(err),
  );
  writes.run();
  await writes.settled();
  writes.run();
  await writes.settled();
  assert.equal(runs, 2);
  assert.deepEqual(
    errors.map((e) => (e as Error).message),
    ['database busy'],
  );
  // Even an error handler that throws does not stop it.
  const stubborn = coalesced(
    async () => {
      throw new Error('again');
    },
    () => {
      throw new Error('the logger failed too');
    },
  );
  stubborn.run();
  await stubborn.settled();
  stubborn.run();
  await stubborn.settled();
});
