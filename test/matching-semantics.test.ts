import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  type Condition,
  type ConditionGroup,
  conditionOperators,
} from '../src/modules/matching/matching.conditions.ts';
import { matchingRepository, type ProfileWithLead } from '../src/modules/matching/matching.repository.ts';
import type { SetRule } from '../src/modules/matching/matching.sql.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { type SeedProfile, seedProfiles, seedProfileType } from './helpers/seed.ts';
import { evaluateRule } from './oracles/matching-evaluate.ts';

let ctx: TestContext;
let user: TestUser;
let typeId: string;
let rows: ProfileWithLead[];
const nameOf = new Map<string, string>();

const FIELDS = ['name', 'state', 'notes', 'founded']
  .map((name) => ({ name, type: 'string' as const }))
  .concat([
    { name: 'revenue', type: 'number' as never },
    { name: 'active', type: 'boolean' as never },
  ])
  .concat([{ name: 'products', type: 'array' as never, items: { type: 'string' } } as never]);

const day = (s: string) => new Date(`${s}T00:00:00Z`);
const FIXTURE: SeedProfile[] = [
  {
    data: {
      name: 'Alpha',
      state: 'CA',
      revenue: 1_500_000,
      products: ['FHA', 'VA'],
      founded: '2010-05-01',
      active: true,
    },
    lead: {
      firstName: 'Ada',
      lastName: 'Lovelace',
      email: 'Ada@Acme.IO',
      company: 'Acme Lending',
      tags: ['vip', 'west'],
      status: 'VALID',
      createdAt: day('2024-01-10'),
      customFields: { employees: 250, segment: 'Enterprise' },
    },
  },
  {
    data: {
      name: 'Beta',
      state: 'ny',
      revenue: 900_000,
      products: ['Jumbo'],
      founded: '2019-12-31T23:30:00Z',
      active: false,
    },
    lead: {
      firstName: 'Bob',
      lastName: null,
      email: 'bob@beta.com',
      company: 'Beta Bank',
      tags: [],
      createdAt: day('2023-06-01'),
      customFields: { employees: '40', segment: 'smb' },
    },
  },
  { data: { name: 'Gamma', state: '', products: [], notes: 'Works with 100% remote' } },
  {
    data: { name: 'Delta', state: 'TX', revenue: 50, products: ['fha'], founded: '2024-02-30', active: true },
    lead: {
      firstName: null,
      lastName: 'Smith',
      email: null,
      company: 'Delta_Co',
      tags: ['east'],
      createdAt: day('2025-01-01'),
    },
  },
  {
    data: { name: 'Epsilon', state: 'CA', revenue: 1_500_000.5, founded: '2015-07-04' },
    lead: { company: 'ACME LENDING', tags: ['VIP'], createdAt: day('2022-01-01') },
  },
];

before(async () => {
  ctx = await createTestContext({ workers: false });
  user = await ctx.signup();
  typeId = await seedProfileType(ctx.deps.db, user.id, FIELDS as never, 'Semantics');
  const ids = await seedProfiles(ctx.deps.db, user.id, typeId, FIXTURE);
  ids.forEach((id, i) => {
    nameOf.set(id, FIXTURE[i]!.data.name as string);
  });
  rows = await matchingRepository(ctx.deps.db).profilesWithLeads(
    { userId: user.id, profileTypeId: typeId },
    { limit: 100 },
  );
});
after(() => ctx?.close());

/** Names the SQL (through POST /api/matching/preview) matches, checked against the Node evaluator on the same rows. */
async function matchedBy(rule: SetRule): Promise<string[]> {
  const res = await ctx.call(user, 'POST', '/api/matching/preview', {
    rule: { profileTypeId: typeId, ...rule },
    sampleSize: 100,
  });
  assert.equal(res.statusCode, 200, res.body);
  const results = res.json().data.results as Array<{ profileId: string; matched: boolean; matchScore: number }>;
  assert.equal(results.length, FIXTURE.length);
  for (const r of results) {
    const js = evaluateRule(rule, rows.find((p) => p.id === r.profileId)!);
    assert.deepEqual(
      [r.matched, r.matchScore],
      [js.matched, js.matchScore],
      `SQL and Node differ on ${nameOf.get(r.profileId)}`,
    );
  }
  return results
    .filter((r) => r.matched)
    .map((r) => nameOf.get(r.profileId)!)
    .sort();
}
const filter = (c: Condition | ConditionGroup, operator: 'AND' | 'OR' = 'AND'): SetRule => ({
  type: 'FILTER',
  conditions: { operator, conditions: [c] },
});
const cond = (
  field: string,
  operator: Condition['operator'],
  value?: Condition['value'],
  caseSensitive?: boolean,
): Condition =>
  ({
    field,
    operator,
    ...(value !== undefined ? { value } : {}),
    ...(caseSensitive ? { caseSensitive } : {}),
  }) as Condition;

describe('rule semantics, operator by operator (SQL via preview, checked against the Node evaluator)', () => {
  const cases: Array<[string, Condition, string[]]> = [
    ['equals ignores case', cond('profile.state', 'equals', 'ca'), ['Alpha', 'Epsilon']],
    ['equals caseSensitive', cond('profile.state', 'equals', 'ca', true), []],
    ['equals caseSensitive, same case', cond('profile.state', 'equals', 'CA', true), ['Alpha', 'Epsilon']],
    ['not_equals holds when absent or empty', cond('profile.state', 'not_equals', 'CA'), ['Beta', 'Delta', 'Gamma']],
    ['equals a number', cond('profile.revenue', 'equals', 1_500_000), ['Alpha']],
    ['equals a boolean', cond('profile.active', 'equals', true), ['Alpha', 'Delta']],
    ['gt a number', cond('profile.revenue', 'gt', 1_000_000), ['Alpha', 'Epsilon']],
    ['gte a decimal', cond('profile.revenue', 'gte', 1_500_000.5), ['Epsilon']],
    ['lt', cond('profile.revenue', 'lt', 1000), ['Delta']],
    ['lte', cond('profile.revenue', 'lte', 900_000), ['Beta', 'Delta']],
    ['in over array elements, ignoring case', cond('profile.products', 'in', ['FHA']), ['Alpha', 'Delta']],
    ['not_in: no element is in the list', cond('profile.products', 'not_in', ['FHA']), ['Beta', 'Epsilon', 'Gamma']],
    ['in with numbers', cond('profile.revenue', 'in', [900_000, 50]), ['Beta', 'Delta']],
    ['in with a numeric string compares text', cond('profile.revenue', 'in', ['50']), ['Delta']],
    ['contains', cond('profile.products', 'contains', 'umb'), ['Beta']],
    ['not_contains', cond('profile.products', 'not_contains', 'a'), ['Beta', 'Epsilon', 'Gamma']],
    ['contains takes % literally', cond('profile.notes', 'contains', '100%'), ['Gamma']],
    ['contains takes _ literally', cond('lead.company', 'contains', 'a_c'), ['Delta']],
    ['contains % matches nothing else', cond('lead.company', 'contains', '%'), []],
    ['exists: array with elements', cond('profile.products', 'exists'), ['Alpha', 'Beta', 'Delta']],
    ['not_exists: "" counts as absent', cond('profile.state', 'not_exists'), ['Gamma']],
    ['regex ignores case', cond('profile.name', 'regex', '^[ab]'), ['Alpha', 'Beta']],
    ['regex caseSensitive', cond('profile.name', 'regex', '^[ab]', true), []],
    [
      'regex \\y is a word boundary (PostgreSQL syntax)',
      cond('lead.company', 'regex', '\\ylending\\y'),
      ['Alpha', 'Epsilon'],
    ],
    ['regex \\y does not match inside a word', cond('lead.company', 'regex', '\\ycme'), []],
    ['regex \\Y is a non-boundary', cond('lead.company', 'regex', '\\Yank\\y'), ['Beta']],
    ['gt a date (invalid dates never match)', cond('profile.founded', 'gt', '2012-01-01'), ['Beta', 'Epsilon']],
    [
      'lt a date-time with offset',
      cond('profile.founded', 'lt', '2019-12-31T23:00:00-01:00'),
      ['Alpha', 'Beta', 'Epsilon'],
    ],
    ['lead text column', cond('lead.firstName', 'equals', 'ada'), ['Alpha']],
    ['lead.fullName', cond('lead.fullName', 'equals', 'ada lovelace'), ['Alpha']],
    ['lead.fullName with one part', cond('lead.fullName', 'equals', 'smith'), ['Delta']],
    ['lead.emailDomain', cond('lead.emailDomain', 'equals', 'acme.io'), ['Alpha']],
    ['lead.company contains', cond('lead.company', 'contains', 'acme'), ['Alpha', 'Epsilon']],
    ['lead.status in', cond('lead.status', 'in', ['valid']), ['Alpha']],
    ['lead.tags in', cond('lead.tags', 'in', ['vip']), ['Alpha', 'Epsilon']],
    ['lead.tags not_in holds without a lead', cond('lead.tags', 'not_in', ['vip']), ['Beta', 'Delta', 'Gamma']],
    ['lead.tags exists', cond('lead.tags', 'exists'), ['Alpha', 'Delta', 'Epsilon']],
    ['lead.email not_exists (no lead, or null)', cond('lead.email', 'not_exists'), ['Delta', 'Epsilon', 'Gamma']],
    ['lead.createdAt gte', cond('lead.createdAt', 'gte', '2024-01-01'), ['Alpha', 'Delta']],
    ['lead.createdAt lt', cond('lead.createdAt', 'lt', '2024-01-01T00:00:00Z'), ['Beta', 'Epsilon']],
    ['customFields number', cond('lead.customFields.employees', 'gt', 100), ['Alpha']],
    [
      'customFields numeric text compares as a number',
      cond('lead.customFields.employees', 'gt', 30),
      ['Alpha', 'Beta'],
    ],
    ['customFields in', cond('lead.customFields.segment', 'in', ['enterprise', 'SMB']), ['Alpha', 'Beta']],
  ];
  for (const [label, c, expected] of cases) {
    test(`${c.field} ${c.operator} ${JSON.stringify(c.value ?? null)}: ${label}`, async () => {
      assert.deepEqual(await matchedBy(filter(c)), expected);
    });
  }

  test('groups: AND, OR and nesting', async () => {
    const ca = cond('profile.state', 'equals', 'CA');
    const small = cond('profile.revenue', 'lt', 1000);
    const fha = cond('profile.products', 'in', ['fha']);
    assert.deepEqual(await matchedBy({ type: 'FILTER', conditions: { operator: 'AND', conditions: [ca, fha] } }), [
      'Alpha',
    ]);
    assert.deepEqual(await matchedBy({ type: 'FILTER', conditions: { operator: 'OR', conditions: [ca, fha] } }), [
      'Alpha',
      'Delta',
      'Epsilon',
    ]);
    assert.deepEqual(
      await matchedBy({
        type: 'FILTER',
        conditions: { operator: 'OR', conditions: [ca, { operator: 'AND', conditions: [small, fha] }] },
      }),
      ['Alpha', 'Delta', 'Epsilon'],
    );
    assert.deepEqual(
      await matchedBy({
        type: 'FILTER',
        conditions: {
          operator: 'AND',
          conditions: [
            cond('lead.tags', 'not_in', ['vip']),
            { operator: 'OR', conditions: [small, cond('profile.state', 'not_exists')] },
          ],
        },
      }),
      ['Delta', 'Gamma'],
    );
  });

  test('SCORED: weights sum to 0–100 with rounding; threshold decides matched', async () => {
    const criteria = [
      { weight: 2, condition: cond('profile.state', 'equals', 'CA') },
      { weight: 1, condition: cond('profile.products', 'exists') },
      { weight: 1, condition: cond('lead.tags', 'exists') },
    ];
    const scores = async (rule: SetRule) => {
      const res = await ctx.call(user, 'POST', '/api/matching/preview', {
        rule: { profileTypeId: typeId, ...rule },
        sampleSize: 100,
      });
      return Object.fromEntries(
        (res.json().data.results as Array<{ profileId: string; matchScore: number }>).map((r) => [
          nameOf.get(r.profileId),
          r.matchScore,
        ]),
      );
    };
    assert.deepEqual(await scores({ type: 'SCORED', criteria, threshold: 50 }), {
      Alpha: 100,
      Beta: 25,
      Gamma: 0,
      Delta: 50,
      Epsilon: 75,
    });
    assert.deepEqual(await matchedBy({ type: 'SCORED', criteria, threshold: 50 }), ['Alpha', 'Delta', 'Epsilon']);
    assert.deepEqual(await matchedBy({ type: 'SCORED', criteria, threshold: 51 }), ['Alpha', 'Epsilon']);
    assert.deepEqual(await matchedBy({ type: 'SCORED', criteria, threshold: 0 }), [
      'Alpha',
      'Beta',
      'Delta',
      'Epsilon',
      'Gamma',
    ]);
    const thirds = [
      { weight: 1, condition: cond('profile.state', 'equals', 'CA') },
      { weight: 2, condition: cond('profile.products', 'exists') },
    ];
    assert.deepEqual(await scores({ type: 'SCORED', criteria: thirds, threshold: 50 }), {
      Alpha: 100,
      Beta: 67,
      Gamma: 0,
      Delta: 67,
      Epsilon: 33,
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Parity: random rows and random rules over every operator; SQL (the statement execute runs,
// without its INSERT) must agree with the Node evaluator on every profile and every criterion.

function rng(seed: number) {
  let s = seed >>> 0;
  return () => (s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32;
}
const rand = rng(20240601);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
const maybe = <T>(p: number, v: () => T): T | undefined => (rand() < p ? v() : undefined);

const STRINGS = [
  'CA',
  'ca',
  'NY',
  'ny ',
  '',
  'Acme Lending',
  'x_y',
  '100%',
  '42',
  '-3.5',
  'true',
  'FALSE',
  'Ünïcode',
  'fha',
  'FHA',
  'a.b',
];
const DATES = [
  '2020-01-05',
  '2019-02-29',
  '2020-02-29',
  '2021-06-01T10:00:00Z',
  '2021-06-01T10:00',
  '2021-06-01 10:00:00+02:00',
  '2021-06-01T10:00:00.123Z',
  'not a date',
  '2021-13-01',
  '0999-01-01',
];
const NUMBERS = [0, 1, 42, -3.5, 1_000_000, 2.25];
const anyValue = (): unknown =>
  pick([
    () => pick(STRINGS),
    () => pick(NUMBERS),
    () => rand() < 0.5,
    () => pick(DATES),
    () => null,
    () => ({ a: 1 }),
    () => [pick(STRINGS), pick(NUMBERS)],
    () => [],
    () => [[pick(STRINGS)]],
  ])();

function randomRow(): SeedProfile {
  const data: Record<string, unknown> = {};
  for (const [k, gen] of [
    ['s', () => pick(STRINGS)],
    ['n', () => pick(NUMBERS)],
    ['arr', () => Array.from({ length: Math.floor(rand() * 3) }, () => pick(STRINGS))],
    ['b', () => rand() < 0.5],
    ['d', () => pick(DATES)],
    ['mixed', anyValue],
  ] as const) {
    const v = maybe(0.85, gen as () => unknown);
    if (v !== undefined) data[k] = v;
  }
  const lead = maybe(0.75, () => ({
    firstName: maybe(0.8, () => pick(['Ada', 'ada', '', 'Bob', 'Ünal'])) ?? null,
    lastName: maybe(0.8, () => pick(['Lovelace', 'smith', ''])) ?? null,
    email: maybe(0.8, () => pick(['Ada@Acme.IO', 'bob@beta.com', 'no-at-sign', 'x@', 'a@b@c.com'])) ?? null,
    company: maybe(0.8, () => pick(STRINGS)) ?? null,
    tags: Array.from({ length: Math.floor(rand() * 3) }, () => pick(['vip', 'VIP', 'east', '42', 'x_y'])),
    status: pick(['NEW', 'VALID', 'INVALID'] as const),
    createdAt: new Date(
      Date.UTC(
        2019 + Math.floor(rand() * 5),
        Math.floor(rand() * 12),
        1 + Math.floor(rand() * 28),
        Math.floor(rand() * 24),
      ),
    ),
    customFields: rand() < 0.7 ? { k: anyValue() } : {},
  }));
  return { data, ...(lead ? { lead } : {}) };
}

const JSON_FIELDS = [
  'profile.s',
  'profile.n',
  'profile.arr',
  'profile.b',
  'profile.d',
  'profile.mixed',
  'profile.missing',
  'lead.customFields.k',
];
const TEXT_FIELDS = [
  'lead.firstName',
  'lead.lastName',
  'lead.fullName',
  'lead.email',
  'lead.emailDomain',
  'lead.company',
  'lead.status',
  'lead.tags',
];
const REGEXES = ['^a', 'ca$', '[0-9]+', 'x_y', '^(ny|tx)$', '\\.', 'a.*b'];

function randomCondition(): Condition {
  const field = rand() < 0.1 ? 'lead.createdAt' : pick([...JSON_FIELDS, ...TEXT_FIELDS]);
  const caseSensitive = rand() < 0.25 ? true : undefined;
  if (field === 'lead.createdAt') return dated();
  const op = pick(conditionOperators);
  let value: Condition['value'];
  if (op === 'equals' || op === 'not_equals')
    value = pick([() => pick(STRINGS.filter(Boolean)), () => pick(NUMBERS), () => rand() < 0.5])();
  else if (op === 'in' || op === 'not_in')
    value = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => (rand() < 0.6 ? pick(STRINGS) : pick(NUMBERS)));
  else if (op === 'contains' || op === 'not_contains')
    value = rand() < 0.8 ? pick(STRINGS.filter(Boolean)) : pick(NUMBERS);
  else if (op === 'regex') value = pick(REGEXES);
  else if (op !== 'exists' && op !== 'not_exists')
    value =
      rand() < 0.5
        ? pick(NUMBERS)
        : pick(['2020-01-05', '2021-06-01T09:00:00Z', '2021-06-01T10:00:00+01:00', '2020-02-29']);
  return cond(field, op, value, caseSensitive);
}
function dated(): Condition {
  const op = pick(['gt', 'gte', 'lt', 'lte', 'exists', 'not_exists'] as const);
  return cond(
    'lead.createdAt',
    op,
    op.includes('exists') ? undefined : pick(['2021-01-01', '2022-06-15T12:00:00Z', '2020-03-01T00:00:00+05:00']),
  );
}
function randomNode(depth: number): Condition | ConditionGroup {
  if (depth >= 2 || rand() < 0.6) return randomCondition();
  return {
    operator: rand() < 0.5 ? 'AND' : 'OR',
    conditions: Array.from({ length: 1 + Math.floor(rand() * 3) }, () => randomNode(depth + 1)),
  };
}

describe('SQL ⇔ Node parity on random data', () => {
  test('300 random profiles × 60 random SCORED rules (6 criteria each, every operator, nested groups)', async () => {
    const u = await ctx.signup();
    const t = await seedProfileType(ctx.deps.db, u.id, [], 'Random');
    await seedProfiles(ctx.deps.db, u.id, t, Array.from({ length: 300 }, randomRow));
    const repo = matchingRepository(ctx.deps.db);
    const scope = { userId: u.id, profileTypeId: t };
    const all = await repo.profilesWithLeads(scope, { limit: 1000 });
    const byId = new Map(all.map((p) => [p.id, p]));
    let compared = 0;
    let held = 0;
    for (let r = 0; r < 60; r++) {
      const rule: SetRule = {
        type: 'SCORED',
        threshold: Math.floor(rand() * 101),
        criteria: Array.from({ length: 6 }, () => ({ weight: 1 + Math.floor(rand() * 10), condition: randomNode(0) })),
      };
      const sqlRows = await repo.evaluateSample(rule, scope, { limit: 1000 });
      assert.equal(sqlRows.length, 300);
      for (const row of sqlRows) {
        const js = evaluateRule(rule, byId.get(row.profile_id)!);
        const sqlSide = { matched: row.matched, matchScore: Number(row.match_score), details: row.details };
        if (JSON.stringify(sqlSide) !== JSON.stringify(js)) {
          const i = js.details.findIndex((d, k) => d !== row.details[k]);
          assert.fail(
            `rule ${r}, criterion ${i} ${JSON.stringify(rule.criteria[i]?.condition)} ` +
              `on ${JSON.stringify(byId.get(row.profile_id))}: SQL ${row.details[i]} vs Node ${js.details[i]}`,
          );
        }
        compared += js.details.length;
        held += js.details.filter(Boolean).length;
      }
    }
    // The random conditions are not degenerate: a fair share holds and a fair share does not.
    assert.ok(held > compared * 0.15 && held < compared * 0.85, `${held} of ${compared} held`);
  });
});
