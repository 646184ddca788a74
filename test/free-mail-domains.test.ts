import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { syncFreeEmailDomains } from '../src/db/seed.ts';
import { createTestContext, type TestContext } from './helpers/app.ts';

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext({ workers: false });
});
after(() => ctx?.close());

const has = async (domain: string) =>
  (await ctx.deps.database.query('SELECT 1 FROM free_email_domains WHERE domain = $1', [domain])).length === 1;

test('the free-mail table follows the installed list, also when a change keeps the number of domains', async () => {
  assert.ok(await has('gmail.com'), 'filled by the migration step');
  await ctx.deps.database.query(`UPDATE free_email_domains SET domain = 'not-free.example' WHERE domain = 'gmail.com'`);
  await syncFreeEmailDomains(ctx.deps.db);
  assert.ok(await has('gmail.com'));
  assert.ok(!(await has('not-free.example')));
  const [{ n }] = await ctx.deps.database.query<{ n: number }>('SELECT count(*)::int AS n FROM free_email_domains');
  await syncFreeEmailDomains(ctx.deps.db);
  assert.equal(
    (await ctx.deps.database.query<{ n: number }>('SELECT count(*)::int AS n FROM free_email_domains'))[0]!.n,
    n,
    'in sync: nothing changes',
  );
});
