/**
 * Accounts at scale: each lead stores its account key and accounts are read from rollups the database
 * keeps marked. Whatever writes happen, the listed accounts equal a grouping of the leads from scratch
 * (test/oracles/accounts.ts); a change made by a transaction still open when the rollups are refreshed
 * is not lost; a change of the free-mail list re-keys the leads it concerns.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { syncFreeEmailDomains } from '../src/db/seed.ts';
import { accountIdOf } from '../src/modules/accounts/account-key.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { seedLeads } from './helpers/seed.ts';
import { oracleAccounts } from './oracles/accounts.ts';

let ctx: TestContext;
let user: TestUser;

/** Every account of the user as the API lists it (walking the pages of `sort`), in the oracle's shape and order. */
async function listed(who: TestUser, sort = 'name') {
  const all: Array<Record<string, unknown>> = [];
  let cursor = '';
  for (;;) {
    const res = await ctx.call(who, 'GET', `/api/accounts?limit=2&sort=${sort}${cursor ? `&cursor=${cursor}` : ''}`);
    assert.equal(res.statusCode, 200, res.body);
    const { accounts, nextCursor } = res.json().data;
    all.push(...accounts);
    if (!nextCursor) break;
    cursor = nextCursor;
  }
  return all
    .map((a) => ({
      id: a.id,
      name: a.name,
      leadCount: a.leadCount,
      sourceCount: a.sourceCount,
      titles: a.titles,
      statuses: a.statuses,
      lastActivityAt: a.lastActivityAt,
      firstSeenAt: a.firstSeenAt,
    }))
    .sort((a, b) => ((a.id as string) < (b.id as string) ? -1 : 1));
}

async function createLead(who: TestUser, fields: Record<string, unknown>): Promise<string> {
  const res = await ctx.call(who, 'POST', '/api/leads', { sourceUrl: 'https://example.com/team', ...fields });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.lead.id;
}

async function assertMatchesOracle(who: TestUser) {
  const expected = await oracleAccounts(ctx.deps.db, who.id);
  assert.ok(expected.length > 0);
  for (const sort of ['name', 'leadCount', 'lastActivity']) assert.deepEqual(await listed(who, sort), expected, sort);
  // The stored keys are the ones the function gives today.
  const stale = await ctx.deps.database.query(
    `SELECT id FROM leads WHERE user_id = $1 AND account_key IS DISTINCT FROM account_key_of(email, company)`,
    [who.id],
  );
  assert.deepEqual(stale, []);
}

before(async () => {
  ctx = await createTestContext({ workers: false });
  user = await ctx.signup();
});
after(() => ctx.close());

describe('account rollups', () => {
  test('equal a grouping of the leads from scratch after every kind of write', async () => {
    const ids: string[] = [];
    const people = [
      ['ann@acme.com', 'Acme Corp', 'CTO'],
      ['bob@acme.com', 'Acme Labs', 'CTO'],
      ['amy@acme.com', 'Acme Corp', 'buyer'],
      ['abe@acme.com', 'Acme Corp', 'Buyer'],
      ['ava@acme.com', 'Acme Corp', 'ceo'],
      ['cid@gmail.com', 'Globex GmbH', 'Buyer'],
      ['dan@yahoo.com', 'globex', 'Engineer'],
      [null, 'Initech, Inc.', 'Engineer'],
      ['eve@umbrella.io', null, null],
      [null, null, 'Nobody'],
    ] as const;
    for (const [email, company, jobTitle] of people) ids.push(await createLead(user, { email, company, jobTitle }));
    await assertMatchesOracle(user);

    // An email moves a lead from a company account to a domain one, and a company from one name to another.
    let res = await ctx.call(user, 'PATCH', `/api/leads/${ids[5]}`, { email: 'cid@globex.com' });
    assert.equal(res.statusCode, 200, res.body);
    res = await ctx.call(user, 'PATCH', `/api/leads/${ids[7]}`, { company: 'Initrode LLC' });
    assert.equal(res.statusCode, 200, res.body);
    await assertMatchesOracle(user);

    // Status and tags in bulk (counts and last activity move), then deletes (an account empties).
    res = await ctx.call(user, 'PATCH', '/api/leads/bulk', {
      leadIds: [ids[0], ids[1], ids[5], ids[6]],
      updates: { status: 'QUALIFIED', addTags: ['hot'] },
    });
    assert.equal(res.statusCode, 200, res.body);
    await assertMatchesOracle(user);
    res = await ctx.call(user, 'DELETE', `/api/leads/${ids[8]}`);
    assert.equal(res.statusCode, 200, res.body);
    res = await ctx.call(user, 'POST', '/api/leads/bulk', { leadIds: [ids[0], ids[1]] });
    assert.equal(res.statusCode, 200, res.body);
    await assertMatchesOracle(user);
    const gone = await ctx.call(user, 'GET', `/api/accounts/${accountIdOf('domain:umbrella.io')}`);
    assert.equal(gone.statusCode, 404);

    // Leads of a source go with it (a cascade): their accounts shrink or go.
    const source = await ctx.call(user, 'POST', '/api/sources', {
      name: 'Team page',
      url: 'https://example.com/team',
      scrapeType: 'STATIC',
      selectors: { item: '.m' },
    });
    assert.equal(source.statusCode, 201, source.body);
    const sourceId = source.json().data.source.id;
    await seedLeads(ctx.deps.db, user.id, [
      { email: 'sam@acme.com', company: 'Acme Corp', sourceId },
      { email: 'sue@soylent.com', company: 'Soylent', sourceId },
    ]);
    await assertMatchesOracle(user);
    res = await ctx.call(user, 'DELETE', `/api/sources/${sourceId}`);
    assert.equal(res.statusCode, 200, res.body);
    await assertMatchesOracle(user);
    assert.equal((await ctx.call(user, 'GET', `/api/accounts/${accountIdOf('domain:soylent.com')}`)).statusCode, 404);

    // A lead removed together with its user leaves nothing behind (no rollup, no mark).
    const other = await ctx.signup();
    await createLead(other, { email: 'x@initech.com', company: 'Initech' });
    assert.equal((await listed(other)).length, 1);
    await ctx.deps.database.query('DELETE FROM users WHERE id = $1', [other.id]);
    const left = await ctx.deps.database.query(
      `SELECT 'rollup' AS t FROM account_rollups WHERE user_id = $1
       UNION ALL SELECT 'mark' FROM account_rollup_marks WHERE user_id = $1`,
      [other.id],
    );
    assert.deepEqual(left, []);
  });

  test('a change of the free-mail list re-keys the leads at the domains that changed sides', async () => {
    const who = await ctx.signup();
    await ctx.deps.database.query(`DELETE FROM free_email_domains WHERE domain = 'gmail.com'`);
    try {
      await createLead(who, { email: 'kim@gmail.com', company: 'Hooli Inc' });
      assert.deepEqual(
        (await listed(who)).map((a) => a.id),
        [accountIdOf('domain:gmail.com')],
      );
    } finally {
      await syncFreeEmailDomains(ctx.deps.db);
    }
    assert.deepEqual(
      (await listed(who)).map((a) => a.id),
      [accountIdOf('company:hooli')],
    );
    await assertMatchesOracle(who);
  });

  test('the periodic refresh brings every user with pending changes up to date', async () => {
    const who = await ctx.signup();
    await createLead(who, { email: 'a@periodic.example', company: 'Periodic' });
    const pending = () => ctx.deps.database.query('SELECT 1 FROM account_rollup_marks WHERE user_id = $1', [who.id]);
    assert.equal((await pending()).length, 1);
    const { createAccountService } = await import('../src/modules/accounts/accounts.service.ts');
    assert.ok((await createAccountService(ctx.deps).refreshPending()) >= 1);
    assert.equal((await pending()).length, 0);
    const rollups = await ctx.deps.database.query(
      'SELECT account_key, lead_count FROM account_rollups WHERE user_id = $1',
      [who.id],
    );
    assert.deepEqual(rollups, [{ account_key: 'domain:periodic.example', lead_count: 1 }]);
  });
});

describe('account rollups and concurrent writers (PostgreSQL)', { skip: !process.env.TEST_DATABASE_URL }, () => {
  test('a lead written by a transaction still open during a refresh is counted once it commits', async () => {
    const who = await ctx.signup();
    const first = await createLead(who, { email: 'a@concurrent.example', company: 'Concurrent' });
    await createLead(who, { email: 'b@concurrent.example', company: 'Concurrent' });
    const account = accountIdOf('domain:concurrent.example');
    const count = async () => (await ctx.call(who, 'GET', `/api/accounts/${account}`)).json().data.account.leadCount;
    assert.equal(await count(), 2);

    const client = new pg.Client({ connectionString: ctx.deps.config.DATABASE_URL });
    await client.connect();
    try {
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO leads (id, user_id, email, company, source_url)
         VALUES (gen_random_uuid(), $1, 'c@concurrent.example', 'Concurrent', 'https://example.com/')`,
        [who.id],
      );
      // Meanwhile a committed change marks the same account, and a read refreshes it.
      const res = await ctx.call(who, 'PATCH', `/api/leads/${first}`, { jobTitle: 'CEO' });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(await count(), 2);
      await client.query('COMMIT');
    } finally {
      await client.end();
    }
    assert.equal(await count(), 3);
    await assertMatchesOracle(who);
  });
});
