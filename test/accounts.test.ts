import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { queryRows } from '../src/db/client.ts';
import { accountMetadata } from '../src/db/schema/index.ts';
import { accountIdOf } from '../src/modules/accounts/account-key.ts';
import { createTwoUserContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';
import { type SeedLead, seedLeads } from './helpers/seed.ts';

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;

const at = (iso: string) => new Date(iso);
const ACME = accountIdOf('domain:acme.com');
const GLOBEX = accountIdOf('company:globex');
const INITECH = accountIdOf('company:initech');

/** Alice's leads: every grouping rule once, with known titles, statuses and dates. */
const aliceLeads: SeedLead[] = [
  // One domain, two company spellings → one account named after the more common spelling.
  {
    email: 'ann@acme.com',
    company: 'Acme Corp',
    jobTitle: 'CTO',
    status: 'VALID',
    createdAt: at('2024-01-01T00:00:00Z'),
    updatedAt: at('2024-03-01T00:00:00Z'),
  },
  {
    email: 'BOB@ACME.COM',
    company: 'Acme Corp',
    jobTitle: 'CTO',
    status: 'VALID',
    createdAt: at('2024-01-02T00:00:00Z'),
    updatedAt: at('2024-05-04T10:11:12.345Z'),
  },
  {
    email: 'cid@acme.com',
    company: 'Acme Labs',
    jobTitle: ' Engineer ',
    status: 'NEW',
    createdAt: at('2024-01-03T00:00:00Z'),
    updatedAt: at('2024-02-01T00:00:00Z'),
  },
  {
    email: 'dan@acme.com',
    company: null,
    jobTitle: null,
    status: 'NEW',
    createdAt: at('2024-01-04T00:00:00Z'),
    updatedAt: at('2024-02-01T00:00:00Z'),
  },
  // Free-mail addresses: grouped by company, legal suffix and case ignored.
  {
    email: 'eve@gmail.com',
    company: 'Globex GmbH',
    jobTitle: 'Buyer',
    status: 'CONTACTED',
    createdAt: at('2024-02-01T00:00:00Z'),
    updatedAt: at('2024-02-02T00:00:00Z'),
  },
  {
    email: 'fay@yahoo.com',
    company: 'globex',
    jobTitle: 'Buyer',
    status: 'REPLIED',
    createdAt: at('2024-02-03T00:00:00Z'),
    updatedAt: at('2024-02-04T00:00:00Z'),
  },
  {
    email: 'gus@hotmail.com',
    company: 'Globex GmbH',
    jobTitle: 'Head of Buying',
    status: 'REPLIED',
    createdAt: at('2024-02-05T00:00:00Z'),
    updatedAt: at('2024-02-06T00:00:00Z'),
  },
  // No email: company only; "Initech, Inc." and "INITECH inc" are one account.
  {
    firstName: 'Gil',
    company: 'Initech, Inc.',
    jobTitle: 'CEO',
    createdAt: at('2024-03-01T00:00:00Z'),
    updatedAt: at('2024-03-02T00:00:00Z'),
  },
  {
    firstName: 'Hal',
    company: 'INITECH inc',
    jobTitle: 'COO',
    createdAt: at('2024-03-03T00:00:00Z'),
    updatedAt: at('2024-03-04T00:00:00Z'),
  },
  {
    firstName: 'Ian',
    lastName: 'Moss',
    company: 'Initech, Inc.',
    jobTitle: 'CEO',
    status: 'QUALIFIED',
    createdAt: at('2024-03-05T00:00:00Z'),
    updatedAt: at('2024-03-01T00:00:00Z'),
  },
  // Neither a company domain nor a company: in no account.
  { firstName: 'Ivy', email: 'ivy@gmail.com', company: null },
  { firstName: 'Jon', company: ' , ' },
  { firstName: 'Kim', lastName: 'Nobody' },
];

before(async () => {
  ({ ctx, alice, bob } = await createTwoUserContext({ workers: false }));
  await seedLeads(ctx.deps.db, alice.id, aliceLeads);
});
after(async () => ctx?.close());

const list = async (user: TestUser, query = '') => {
  const res = await ctx.call(user, 'GET', `/api/accounts${query}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data as { accounts: any[]; nextCursor: string | null };
};

const metadataRows = (userId: string) =>
  ctx.deps.db.select().from(accountMetadata).where(eq(accountMetadata.userId, userId));

describe('grouping and the computed view', () => {
  test('leads group by company domain, else by normalized company; leads with neither are in no account', async () => {
    const { accounts, nextCursor } = await list(alice);
    assert.equal(nextCursor, null);
    assert.deepEqual(
      accounts.map((a) => [a.id, a.kind, a.name, a.domain, a.leadCount]),
      [
        [ACME, 'domain', 'Acme Corp', 'acme.com', 4],
        // Ties on leadCount in key order: company:globex < company:initech.
        [GLOBEX, 'company', 'Globex GmbH', null, 3],
        [INITECH, 'company', 'Initech, Inc.', null, 3],
      ],
    );
    assert.equal(
      accounts.reduce((n, a) => n + a.leadCount, 0),
      10,
      'the three leads without domain or company are in no account',
    );
  });

  test('company names normalize: case, punctuation and stacked legal suffixes are ignored', async () => {
    const names = [
      'Acme, Inc.',
      'ACME inc',
      'Acme Co., Ltd.',
      'acme L.L.C.',
      '  "Acme"  ',
      'Acme GmbH & Co. KG',
      'Inc',
      'Company Inc',
      'Café Müller S.A.',
      'Road Runner B.V.',
    ];
    const rows = await queryRows<{ n: string }>(
      ctx.deps.db,
      sql`SELECT normalized_company(v.name) AS n
        FROM jsonb_array_elements_text(${JSON.stringify(names)}::jsonb) WITH ORDINALITY AS v(name, i) ORDER BY v.i`,
    );
    assert.deepEqual(
      rows.map((r) => r.n),
      ['acme', 'acme', 'acme', 'acme', 'acme', 'acme', 'inc', 'company', 'café müller', 'road runner'],
    );
  });

  test('titles, statuses, sources, first and last activity are computed from the leads', async () => {
    const acme = (await list(alice)).accounts.find((a) => a.id === ACME);
    assert.deepEqual(acme.titles, ['CTO', 'Engineer']);
    assert.deepEqual(acme.statuses, {
      NEW: 2,
      VALID: 2,
      INVALID: 0,
      RISKY: 0,
      CONTACTED: 0,
      REPLIED: 0,
      QUALIFIED: 0,
      DISQUALIFIED: 0,
      CONVERTED: 0,
      UNSUBSCRIBED: 0,
    });
    assert.equal(acme.lastActivityAt, '2024-05-04T10:11:12.345Z');
    assert.equal(acme.firstSeenAt, '2024-01-01T00:00:00.000Z');
    assert.equal(acme.sourceCount, 0);
    assert.equal(acme.notes, null);
    assert.deepEqual(acme.tags, []);
  });

  test('the id is stable across calls and is accountIdOf(key)', async () => {
    const first = (await list(alice)).accounts.map((a) => a.id);
    await seedLeads(ctx.deps.db, alice.id, [{ email: 'zed@acme.com', company: 'Acme Corp' }]);
    const second = await list(alice);
    assert.deepEqual(
      second.accounts.map((a) => a.id),
      first,
    );
    assert.equal(second.accounts[0].leadCount, 5);
    const one = await ctx.call(alice, 'GET', `/api/accounts/${ACME}`);
    assert.equal(one.json().data.account.id, ACME);
  });

  test('titles: at most 10, most frequent first', async () => {
    const titles = Array.from({ length: 12 }, (_, i) => `Title ${String(i).padStart(2, '0')}`);
    // Title 00 three times, Title 01 twice, the rest once.
    const rows: SeedLead[] = [...titles, 'Title 00', 'Title 00', 'Title 01'].map((t) => ({
      email: `x@wide.example`,
      company: 'Wide',
      jobTitle: t,
    }));
    await seedLeads(ctx.deps.db, alice.id, rows);
    const res = await ctx.call(alice, 'GET', `/api/accounts/${accountIdOf('domain:wide.example')}`);
    assert.equal(res.statusCode, 200, res.body);
    const { titles: shown, leadCount } = res.json().data.account;
    assert.equal(leadCount, 15);
    assert.deepEqual(shown, ['Title 00', 'Title 01', ...titles.slice(2, 10)]);
  });
});

describe('GET /api/accounts/{accountId}', () => {
  test('the account view with its leads, most recently updated first', async () => {
    const res = await ctx.call(alice, 'GET', `/api/accounts/${INITECH}`);
    assert.equal(res.statusCode, 200, res.body);
    const { account } = res.json().data;
    assert.equal(account.name, 'Initech, Inc.');
    assert.equal(account.leadCount, 3);
    assert.deepEqual(account.titles, ['CEO', 'COO']);
    assert.equal(account.statuses.QUALIFIED, 1);
    assert.equal(account.statuses.NEW, 2);
    assert.equal(account.lastActivityAt, '2024-03-04T00:00:00.000Z');
    assert.equal(account.firstSeenAt, '2024-03-01T00:00:00.000Z');
    assert.deepEqual(
      account.leads.map((l: any) => [l.name, l.email, l.jobTitle, l.status, l.updatedAt]),
      [
        ['Hal', null, 'COO', 'NEW', '2024-03-04T00:00:00.000Z'],
        ['Gil', null, 'CEO', 'NEW', '2024-03-02T00:00:00.000Z'],
        ['Ian Moss', null, 'CEO', 'QUALIFIED', '2024-03-01T00:00:00.000Z'],
      ],
    );
  });

  test('a company with a 200-character name in 3-byte characters still has an id that works', async () => {
    const name = '漢字'.repeat(100);
    await seedLeads(ctx.deps.db, alice.id, [{ company: name, jobTitle: 'Long' }]);
    const listed = (await list(alice, '?limit=1000')).accounts.find((a) => a.name === name);
    assert.ok(listed && listed.id.length <= 500, 'listed, with an id within the path-segment limit');
    const res = await ctx.call(alice, 'GET', `/api/accounts/${listed.id}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().data.account.titles, ['Long']);
  });

  test('unknown, malformed or empty ids are 404', async () => {
    for (const id of [
      accountIdOf('domain:nowhere.example'),
      accountIdOf('company:nobody'),
      'not-base64!',
      accountIdOf('other:acme'),
      'AAAA',
      'x'.repeat(600),
    ]) {
      assertError(await ctx.call(alice, 'GET', `/api/accounts/${encodeURIComponent(id)}`), 404, 'NOT_FOUND');
    }
  });

  test('an id whose key contains NUL is a 404 on every account route, not a database error', async () => {
    for (const key of ['domain:acme.com\u0000', 'company:glo\u0000bex', 'domain:\u0000']) {
      const id = accountIdOf(key);
      assertError(await ctx.call(alice, 'GET', `/api/accounts/${id}`), 404, 'NOT_FOUND');
      assertError(await ctx.call(alice, 'PATCH', `/api/accounts/${id}`, { notes: 'x' }), 404, 'NOT_FOUND');
    }
    assert.equal((await metadataRows(alice.id)).filter((r) => r.accountKey.includes('\u0000')).length, 0);
  });

  test('an account whose leads are all deleted disappears, even with metadata', async () => {
    const [id1, id2] = await seedLeads(ctx.deps.db, alice.id, [
      { email: 'a@gone.example', jobTitle: 'X' },
      { email: 'b@gone.example', jobTitle: 'Y' },
    ]);
    const gone = accountIdOf('domain:gone.example');
    const patched = await ctx.call(alice, 'PATCH', `/api/accounts/${gone}`, { notes: 'keep an eye on them' });
    assert.equal(patched.statusCode, 200, patched.body);
    for (const id of [id1, id2]) assert.equal((await ctx.call(alice, 'DELETE', `/api/leads/${id}`)).statusCode, 200);
    assertError(await ctx.call(alice, 'GET', `/api/accounts/${gone}`), 404, 'NOT_FOUND');
    assertError(await ctx.call(alice, 'PATCH', `/api/accounts/${gone}`, { notes: 'again' }), 404, 'NOT_FOUND');
    assert.ok(!(await list(alice, '?limit=1000')).accounts.some((a) => a.id === gone));
  });
});

describe('PATCH /api/accounts/{accountId}', () => {
  test('stores notes and tags (trimmed, de-duplicated) and shows them in the views', async () => {
    const res = await ctx.call(alice, 'PATCH', `/api/accounts/${GLOBEX}`, {
      notes: 'Met at the fair',
      tags: [' hot ', 'emea', 'hot', 'Hot'],
    });
    assert.equal(res.statusCode, 200, res.body);
    const { account } = res.json().data;
    assert.equal(account.notes, 'Met at the fair');
    assert.deepEqual(account.tags, ['hot', 'emea', 'Hot']);
    assert.equal(account.leadCount, 3);
    assert.equal(account.leads.length, 3);

    const shown = (await list(alice)).accounts.find((a) => a.id === GLOBEX);
    assert.equal(shown.notes, 'Met at the fair');
    assert.deepEqual(shown.tags, ['hot', 'emea', 'Hot']);
    const rows = await metadataRows(alice.id);
    assert.deepEqual(
      rows.filter((r) => r.accountKey === 'company:globex').map((r) => [r.notes, r.tags]),
      [['Met at the fair', ['hot', 'emea', 'Hot']]],
    );
  });

  test('partial: tags alone keep the notes, notes null clears them, an empty body changes nothing', async () => {
    let res = await ctx.call(alice, 'PATCH', `/api/accounts/${GLOBEX}`, { tags: ['cold'] });
    assert.equal(res.json().data.account.notes, 'Met at the fair');
    assert.deepEqual(res.json().data.account.tags, ['cold']);
    res = await ctx.call(alice, 'PATCH', `/api/accounts/${GLOBEX}`, { notes: null });
    assert.equal(res.json().data.account.notes, null);
    assert.deepEqual(res.json().data.account.tags, ['cold']);
    res = await ctx.call(alice, 'PATCH', `/api/accounts/${GLOBEX}`, {});
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().data.account.tags, ['cold']);
    res = await ctx.call(alice, 'PATCH', `/api/accounts/${GLOBEX}`, { notes: 'Back', tags: [] });
    assert.equal(res.json().data.account.notes, 'Back');
    assert.deepEqual(res.json().data.account.tags, []);
  });

  test('bad input is a 400 naming the field, and nothing is written', async () => {
    const before = await metadataRows(alice.id);
    assertValidation(
      await ctx.call(alice, 'PATCH', `/api/accounts/${INITECH}`, { notes: 'x'.repeat(10_001) }),
      'notes',
    );
    assertValidation(await ctx.call(alice, 'PATCH', `/api/accounts/${INITECH}`, { notes: 42 }), 'notes');
    assertValidation(await ctx.call(alice, 'PATCH', `/api/accounts/${INITECH}`, { tags: 'hot' }), 'tags');
    assertValidation(
      await ctx.call(alice, 'PATCH', `/api/accounts/${INITECH}`, {
        tags: Array.from({ length: 51 }, (_, i) => `t${i}`),
      }),
      'tags',
    );
    assertValidation(
      await ctx.call(alice, 'PATCH', `/api/accounts/${INITECH}`, { tags: ['ok', 'x'.repeat(51)] }),
      'tags.1',
    );
    assertValidation(await ctx.call(alice, 'PATCH', `/api/accounts/${INITECH}`, { tags: ['ok', '   '] }), 'tags.1');
    assertValidation(await ctx.call(alice, 'PATCH', `/api/accounts/${INITECH}`, { notes: 'a\u0000b' }), 'notes');
    assert.deepEqual(await metadataRows(alice.id), before);
  });

  test('an account that does not exist is a 404 and gets no metadata', async () => {
    assertError(
      await ctx.call(alice, 'PATCH', `/api/accounts/${accountIdOf('domain:nowhere.example')}`, { notes: 'x' }),
      404,
      'NOT_FOUND',
    );
    assertError(await ctx.call(alice, 'PATCH', `/api/accounts/garbage!`, { notes: 'x' }), 404, 'NOT_FOUND');
    const rows = await metadataRows(alice.id);
    assert.ok(!rows.some((r) => r.accountKey === 'domain:nowhere.example'));
  });
});

describe('another user', () => {
  test("sees none of alice's accounts, and cannot read or annotate them", async () => {
    assert.deepEqual((await list(bob)).accounts, []);
    assertError(await ctx.call(bob, 'GET', `/api/accounts/${GLOBEX}`), 404, 'NOT_FOUND');
    assertError(await ctx.call(bob, 'PATCH', `/api/accounts/${GLOBEX}`, { notes: 'mine now' }), 404, 'NOT_FOUND');
    assert.deepEqual(await metadataRows(bob.id), []);
    const [row] = await ctx.deps.db
      .select()
      .from(accountMetadata)
      .where(and(eq(accountMetadata.userId, alice.id), eq(accountMetadata.accountKey, 'company:globex')));
    assert.equal(row?.notes, 'Back');
  });

  test('with leads of the same domain, bob sees his own account: same id, his counts, not her notes', async () => {
    await ctx.call(alice, 'PATCH', `/api/accounts/${ACME}`, { notes: 'alice only', tags: ['secret'] });
    await seedLeads(ctx.deps.db, bob.id, [
      { email: 'x@acme.com', company: 'ACME Bob Spelling', jobTitle: 'Intern', status: 'QUALIFIED' },
    ]);
    const { accounts } = await list(bob);
    assert.equal(accounts.length, 1);
    const [acme] = accounts;
    assert.equal(acme.id, ACME);
    assert.equal(acme.name, 'ACME Bob Spelling');
    assert.equal(acme.leadCount, 1);
    assert.deepEqual(acme.titles, ['Intern']);
    assert.equal(acme.statuses.QUALIFIED, 1);
    assert.equal(acme.notes, null);
    assert.deepEqual(acme.tags, []);
    const one = (await ctx.call(bob, 'GET', `/api/accounts/${ACME}`)).json().data.account;
    assert.equal(one.notes, null);
    assert.deepEqual(
      one.leads.map((l: any) => l.email),
      ['x@acme.com'],
    );
    assert.equal((await list(bob, '?tag=secret')).accounts.length, 0);
    assert.equal((await list(alice, '?tag=secret')).accounts[0].id, ACME);
  });
});

describe('filters and pagination', () => {
  let carol: TestUser;
  before(async () => {
    carol = await ctx.signup();
    // 30 accounts: lead counts 1..5 with many ties, distinct activity times, some tagged.
    const rows: SeedLead[] = [];
    for (let i = 0; i < 30; i++) {
      for (let n = 0; n <= i % 5; n++) {
        rows.push({
          email: `p${n}@firm${String(i).padStart(2, '0')}.example`,
          company: `Firm ${i % 7} Holdings`,
          updatedAt: new Date(Date.UTC(2024, 0, 1 + i, 0, 0, n)),
        });
      }
    }
    await seedLeads(ctx.deps.db, carol.id, rows);
    for (const i of [3, 9, 27]) {
      const res = await ctx.call(
        carol,
        'PATCH',
        `/api/accounts/${accountIdOf(`domain:firm${String(i).padStart(2, '0')}.example`)}`,
        { tags: ['target'] },
      );
      assert.equal(res.statusCode, 200, res.body);
    }
  });

  const walk = async (query: string, limit: number) => {
    const seen: any[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 100; page++) {
      const data = await list(carol, `?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ''}`);
      assert.ok(data.accounts.length <= limit);
      seen.push(...data.accounts);
      cursor = data.nextCursor;
      if (!cursor) return seen;
    }
    assert.fail('pagination did not end');
  };

  for (const sort of ['leadCount', 'lastActivity', 'name'] as const) {
    test(`sort=${sort}: walking every page gives each account once, in the order of one big page`, async () => {
      const all = (await list(carol, `?limit=1000&sort=${sort}`)).accounts;
      assert.equal(all.length, 30);
      for (const limit of [1, 4, 7]) {
        const walked = await walk(`&sort=${sort}`, limit);
        assert.deepEqual(
          walked.map((a) => a.id),
          all.map((a) => a.id),
        );
      }
      const key = (a: any) =>
        sort === 'leadCount'
          ? -a.leadCount
          : sort === 'lastActivity'
            ? -Date.parse(a.lastActivityAt)
            : a.name.toLowerCase();
      for (let i = 1; i < all.length; i++) assert.ok(key(all[i - 1]) <= key(all[i]), `${sort} order at ${i}`);
    });
  }

  test('leadCount is the default sort, most leads first', async () => {
    const { accounts } = await list(carol, '?limit=6');
    assert.deepEqual(
      accounts.map((a) => a.leadCount),
      [5, 5, 5, 5, 5, 5],
    );
  });

  test('q, tag and minLeads filter, also across pages', async () => {
    assert.deepEqual((await list(carol, '?q=FIRM0&limit=100')).accounts.map((a) => a.domain).sort(), [
      'firm00.example',
      'firm01.example',
      'firm02.example',
      'firm03.example',
      'firm04.example',
      'firm05.example',
      'firm06.example',
      'firm07.example',
      'firm08.example',
      'firm09.example',
    ]);
    // Name match: "Firm 3 Holdings" is the company of accounts 3, 10, 17, 24.
    assert.deepEqual((await list(carol, '?q=firm%203%20hold&sort=name')).accounts.map((a) => a.domain).sort(), [
      'firm03.example',
      'firm10.example',
      'firm17.example',
      'firm24.example',
    ]);
    assert.deepEqual((await list(carol, '?q=%25')).accounts, [], '% is a literal character, not a wildcard');
    assert.deepEqual((await list(carol, '?tag=target')).accounts.map((a) => a.domain).sort(), [
      'firm03.example',
      'firm09.example',
      'firm27.example',
    ]);
    const big = await walk('&minLeads=4&sort=lastActivity', 5);
    assert.equal(big.length, 12);
    assert.ok(big.every((a) => a.leadCount >= 4));
    assert.equal((await list(carol, '?minLeads=5&tag=target')).accounts.length, 1);
  });

  test('bad query parameters are 400s naming them', async () => {
    assertValidation(await ctx.call(carol, 'GET', '/api/accounts?sort=size'), 'sort');
    assertValidation(await ctx.call(carol, 'GET', '/api/accounts?limit=0'), 'limit');
    assertValidation(await ctx.call(carol, 'GET', '/api/accounts?limit=1001'), 'limit');
    assertValidation(await ctx.call(carol, 'GET', '/api/accounts?minLeads=0'), 'minLeads');
    assertValidation(await ctx.call(carol, 'GET', '/api/accounts?minLeads=two'), 'minLeads');
    for (const cursor of [
      'garbage',
      Buffer.from('{"s":"leadCount","v":"x","k":"domain:a"}').toString('base64url'),
      Buffer.from('[1]').toString('base64url'),
    ]) {
      assertValidation(await ctx.call(carol, 'GET', `/api/accounts?cursor=${cursor}`), 'cursor');
    }
    const { nextCursor } = await list(carol, '?limit=2&sort=name');
    assertValidation(await ctx.call(carol, 'GET', `/api/accounts?cursor=${nextCursor}&sort=leadCount`), 'cursor');
  });

  test('cursors with values the columns cannot hold (out of range, NUL) are 400s naming cursor', async () => {
    const c = (v: unknown, s = 'leadCount', k = 'domain:firm01.example') =>
      Buffer.from(JSON.stringify({ s, v, k }), 'utf8').toString('base64url');
    const bad = [
      [c(1e300), 'leadCount'],
      [c(2 ** 31), 'leadCount'],
      [c('9999999999999999999', 'lastActivity'), 'lastActivity'],
      [c('-9999999999999999999', 'lastActivity'), 'lastActivity'],
      [c('firm\u0000', 'name'), 'name'],
      [c('firm', 'name', 'domain:firm\u0000.example'), 'name'],
      [c(3, 'leadCount', 'company:a\u0000b'), 'leadCount'],
    ];
    for (const [cursor, sort] of bad)
      assertValidation(await ctx.call(carol, 'GET', `/api/accounts?sort=${sort}&cursor=${cursor}`), 'cursor');
    // The bounds themselves are fine.
    for (const [cursor, sort] of [
      [c(2 ** 31 - 1), 'leadCount'],
      [c('9223372036854775807', 'lastActivity'), 'lastActivity'],
      [c('-9223372036854775808', 'lastActivity'), 'lastActivity'],
    ]) {
      const res = await ctx.call(carol, 'GET', `/api/accounts?sort=${sort}&cursor=${cursor}`);
      assert.equal(res.statusCode, 200, res.body);
    }
  });
});
