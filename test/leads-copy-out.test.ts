/**
 * The leads module's COPY-out (createLeadCopyOut, used by pushes to PostgreSQL destinations): on PostgreSQL a batch
 * is exactly the leads list's page for the same filter, however the filter values are spelled (quotes, backslashes,
 * `$1`, the COPY statement inlines them as literals); ids that are not uuids are refused before any SQL; on the
 * embedded database there is none (pushes read the list there).
 */
import assert from 'node:assert/strict';
import { text } from 'node:stream/consumers';
import { after, before, describe, test } from 'node:test';
import { createLeadCopyOut, createLeadService } from '../src/modules/leads/index.ts';
import { newId } from '../src/shared/ids.ts';
import { createTwoUserContext, type TestContext, type TestUser } from './helpers/app.ts';
import { seedLeads } from './helpers/seed.ts';

const HOSTILE = `O'Brien \\' "x" $1 ); DROP TABLE leads; --`;

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
/** Above every seeded lead (UUIDv7 ids follow creation), as a push's own id is. */
let TOP: string;

before(async () => {
  ({ ctx, alice, bob } = await createTwoUserContext());
  await seedLeads(
    ctx.deps.db,
    alice.id,
    Array.from({ length: 30 }, (_, i) => ({
      firstName: `First${i}`,
      company: i % 3 ? HOSTILE : 'Globex',
      tags: i % 2 ? [HOSTILE] : ['plain'],
    })),
  );
  await seedLeads(ctx.deps.db, bob.id, [{ company: HOSTILE, tags: [HOSTILE] }]);
  TOP = newId();
});
after(async () => {
  await ctx?.close();
});

describe('leads COPY-out', () => {
  test('a batch is the list page of the same filter, hostile values included', async (t) => {
    const copyOut = createLeadCopyOut(ctx.deps);
    if (ctx.deps.database.kind !== 'postgres') {
      assert.equal(copyOut, undefined);
      return t.skip('PostgreSQL only: the embedded database has no COPY TO STDOUT');
    }
    assert.ok(copyOut);
    const filter = { company: HOSTILE, tag: HOSTILE };
    const listed = (await createLeadService(ctx.deps).list(alice.id, { ...filter, limit: 100 })).leads;
    assert.equal(listed.length, 10); // i % 3 && i % 2 among 0..29
    const range = await copyOut.boundary(alice.id, filter, TOP, 4);
    assert.deepEqual(range, { boundary: listed[3]!.id, count: 4 });
    const csv = await text(await copyOut.open(alice.id, filter, TOP, range!.boundary, 'csv'));
    const ids = csv
      .trim()
      .split('\n')
      .map((line) => line.split(',')[0]);
    assert.deepEqual(
      ids,
      listed.slice(0, 4).map((l) => l.id),
    );
    // The whole rest, in one batch: count below the size says it is the last.
    const rest = await copyOut.boundary(alice.id, filter, range!.boundary, 100);
    assert.deepEqual(rest, { boundary: listed.at(-1)!.id, count: 6 });
    const all = await text(await copyOut.open(alice.id, filter, range!.boundary, rest!.boundary, 'csv'));
    assert.equal(all.trim().split('\n').length, 6);
    assert.ok(all.includes(`"O'Brien \\' ""x"" $1 ); DROP TABLE leads; --"`), all.slice(0, 300));
    assert.equal(await copyOut.boundary(alice.id, filter, rest!.boundary, 100), undefined);
  });

  test('ids that are not uuids are refused before any SQL', async (t) => {
    const copyOut = createLeadCopyOut(ctx.deps);
    if (!copyOut) return t.skip('PostgreSQL only');
    await assert.rejects(copyOut.open(alice.id, {}, `${TOP}' OR true --`, TOP, 'csv'), /before is not a uuid/);
    await assert.rejects(copyOut.open(alice.id, { jobId: "x'" }, TOP, TOP, 'binary'), /jobId is not a uuid/);
  });
});
