/**
 * The browser hosts' registry: a host on another machine recording a loopback URL is never a forwarding target
 * (unit), and two processes claiming one host id at the same moment on PostgreSQL cannot both win.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  forwardableUrl,
  HostIdInUseError,
  HostRegistry,
  isLoopbackUrl,
} from '../src/modules/browser/hosts/registry.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

describe('forwarding targets', () => {
  it('a holder on another boot recording a loopback URL is not a target; the same boot, or a routable URL, is', () => {
    for (const url of ['http://127.0.0.1:3000', 'http://[::1]:3000', 'http://localhost:3000', 'http://127.8.0.1']) {
      assert.equal(isLoopbackUrl(url), true, url);
      assert.equal(forwardableUrl({ internalUrl: url, bootId: 'other-machine' }, 'this-machine'), undefined, url);
      assert.equal(forwardableUrl({ internalUrl: url, bootId: 'this-machine' }, 'this-machine'), url, url);
    }
    const routable = 'http://10.0.0.7:3000';
    assert.equal(isLoopbackUrl(routable), false);
    assert.equal(forwardableUrl({ internalUrl: routable, bootId: 'other-machine' }, 'this-machine'), routable);
    assert.equal(forwardableUrl({ internalUrl: '', bootId: 'this-machine' }, 'this-machine'), undefined);
  });
});

const skip = process.env.TEST_DATABASE_URL ? false : 'the hosts registry runs on PostgreSQL only';

describe('claiming a host id on PostgreSQL', { skip }, () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
  });
  after(async () => {
    await db?.database.close();
    await db?.drop();
  });

  it('two claims racing for one host id: exactly one wins, the other is refused', async () => {
    const errors: unknown[] = [];
    for (let round = 0; round < 5; round++) {
      const hostId = `race-${crypto.randomUUID()}`;
      // Two registries of one process: the same boot id and pid, as two containers' pid 1 would be.
      const registries = [0, 1].map(
        () =>
          new HostRegistry({
            db: db.database.db,
            hostId,
            internalUrl: 'http://10.0.0.1:3000',
            maxSessions: 2,
            liveSessions: () => 0,
            onError: (err) => errors.push(err),
          }),
      );
      const outcomes = await Promise.allSettled(registries.map((r) => r.claim()));
      const won = outcomes.filter((o) => o.status === 'fulfilled');
      const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
      assert.equal(won.length, 1, `round ${round}: exactly one claim wins`);
      assert.ok(lost[0]?.reason instanceof HostIdInUseError, `round ${round}: ${lost[0]?.reason}`);
      // The winner claiming again is itself, not a second process.
      const winner = registries[outcomes.findIndex((o) => o.status === 'fulfilled')]!;
      await winner.claim();
      await Promise.all(registries.map((r) => r.release()));
    }
    assert.deepEqual(errors, []);
  });
});
