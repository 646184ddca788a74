import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { matchingResults } from '../src/db/schema/index.ts';
import { parseCsv } from '../src/shared/csv.ts';
import { newId } from '../src/shared/ids.ts';
import { createTwoUserContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';
import { seedProfiles, seedProfileType } from './helpers/seed.ts';

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
let typeId: string;
let otherTypeId: string;
let bobTypeId: string;
let ids: string[];

const FIELDS = [
  { name: 'name', type: 'string' as const, required: true },
  { name: 'state', type: 'string' as const },
  { name: 'revenue', type: 'number' as const },
  { name: 'loanTypes', type: 'array' as const, items: { type: 'string' as const } },
];

const scored = (over: Record<string, unknown> = {}) => ({
  name: 'Big lenders in CA',
  profileTypeId: typeId,
  type: 'SCORED',
  threshold: 60,
  criteria: [
    { label: 'In CA', weight: 50, condition: { field: 'profile.state', operator: 'equals', value: 'ca' } },
    { label: 'Revenue ≥ 1M', weight: 30, condition: { field: 'profile.revenue', operator: 'gte', value: 1_000_000 } },
    { label: 'Does FHA', weight: 20, condition: { field: 'profile.loanTypes', operator: 'in', value: ['FHA'] } },
  ],
  ...over,
});

before(async () => {
  ({ ctx, alice, bob } = await createTwoUserContext());
  typeId = await seedProfileType(ctx.deps.db, alice.id, FIELDS, 'Lender');
  otherTypeId = await seedProfileType(ctx.deps.db, alice.id, FIELDS, 'Other');
  bobTypeId = await seedProfileType(ctx.deps.db, bob.id, FIELDS, 'Bob type');
  // Scores under `scored()`: 100, 80, 50, 30, 20, 0 (in that order of creation).
  ids = await seedProfiles(ctx.deps.db, alice.id, typeId, [
    {
      data: { name: 'A', state: 'CA', revenue: 2_000_000, loanTypes: ['FHA', 'VA'] },
      lead: { firstName: 'Ada', company: 'Acme', email: 'ada@acme.io' },
    },
    { data: { name: 'B', state: 'CA', revenue: 5_000_000 } },
    { data: { name: 'C', state: 'Ca', revenue: 10 } },
    { data: { name: 'D', state: 'NY', revenue: 1_000_000 } },
    { data: { name: 'E', state: 'TX', loanTypes: ['fha'] } },
    { data: { name: 'F' } },
  ]);
  await seedProfiles(ctx.deps.db, alice.id, otherTypeId, [{ data: { name: 'other', state: 'CA' } }]);
  await seedProfiles(ctx.deps.db, bob.id, bobTypeId, [{ data: { name: 'bob', state: 'CA' } }]);
});
after(() => ctx?.close());

const create = async (user: TestUser, body: unknown) => {
  const res = await ctx.call(user, 'POST', '/api/matching/rules', body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.rule;
};

async function executeAndWait(user: TestUser, ruleId: string) {
  const res = await ctx.call(user, 'POST', '/api/matching/execute', { ruleId });
  assert.equal(res.statusCode, 202, res.body);
  assert.equal(res.json().data.run.status, 'PENDING');
  return eventually(async () => {
    const run = (await ctx.call(user, 'GET', `/api/matching/rules/${ruleId}`)).json().data.rule.lastRun;
    return run && ['COMPLETED', 'FAILED'].includes(run.status) ? run : undefined;
  });
}

describe('matching rules CRUD', () => {
  test('POST creates each type; GET one; list with filters and cursor', async () => {
    const s = await create(alice, scored());
    assert.equal(s.type, 'SCORED');
    assert.equal(s.threshold, 60);
    assert.equal(s.criteria.length, 3);
    assert.equal(s.conditions, null);
    assert.equal(s.lastRun, null);
    const f = await create(alice, {
      name: 'CA only',
      profileTypeId: typeId,
      type: 'FILTER',
      conditions: { operator: 'AND', conditions: [{ field: 'profile.state', operator: 'equals', value: 'CA' }] },
    });
    assert.equal(f.threshold, null);
    const a = await create(alice, {
      name: 'AI',
      profileTypeId: otherTypeId,
      type: 'AI',
      aiPrompt: 'Lenders doing FHA',
    });
    assert.equal(a.aiPrompt, 'Lenders doing FHA');

    const got = await ctx.call(alice, 'GET', `/api/matching/rules/${s.id}`);
    assert.equal(got.statusCode, 200);
    assert.deepEqual(got.json().data.rule.criteria, s.criteria);

    const page1 = (await ctx.call(alice, 'GET', '/api/matching/rules?limit=2')).json().data;
    assert.equal(page1.rules.length, 2);
    assert.equal(page1.rules[0].id, a.id, 'newest first');
    const page2 = (await ctx.call(alice, 'GET', `/api/matching/rules?limit=2&cursor=${page1.nextCursor}`)).json().data;
    assert.ok(page2.rules.some((r: { id: string }) => r.id === s.id));
    const onlyAi = (await ctx.call(alice, 'GET', '/api/matching/rules?type=AI')).json().data.rules;
    assert.deepEqual(
      onlyAi.map((r: { id: string }) => r.id),
      [a.id],
    );
    const byType = (await ctx.call(alice, 'GET', `/api/matching/rules?profileTypeId=${otherTypeId}`)).json().data.rules;
    assert.deepEqual(
      byType.map((r: { id: string }) => r.id),
      [a.id],
    );
    assertValidation(await ctx.call(alice, 'GET', '/api/matching/rules?cursor=bad'), 'cursor');
    assertValidation(await ctx.call(alice, 'GET', '/api/matching/rules?type=NOPE'), 'type');
  });

  test('validation: fields, operators, values, regex, profile type', async () => {
    const filter = (conditions: unknown[]) => ({
      name: 'x',
      profileTypeId: typeId,
      type: 'FILTER',
      conditions: { operator: 'AND', conditions },
    });
    const bad = async (body: unknown, field: string) =>
      assertValidation(await ctx.call(alice, 'POST', '/api/matching/rules', body), field);
    await bad(
      filter([
        { field: 'profile.state', operator: 'exists' },
        { field: 'profile.nope', operator: 'exists' },
      ]),
      'conditions.conditions.1.field',
    );
    await bad(filter([{ field: 'lead.nope', operator: 'exists' }]), 'conditions.conditions.0.field');
    await bad(filter([{ field: 'profile.state', operator: 'in', value: 'CA' }]), 'conditions.conditions.0.value');
    await bad(filter([{ field: 'profile.state', operator: 'equals', value: ['CA'] }]), 'conditions.conditions.0.value');
    await bad(filter([{ field: 'profile.revenue', operator: 'gt', value: 'lots' }]), 'conditions.conditions.0.value');
    await bad(
      filter([{ field: 'profile.revenue', operator: 'gt', value: '2024-02-30' }]),
      'conditions.conditions.0.value',
    );
    // Valid ISO text whose instant is in year 10000 (toISOString '+010000-…' fails in PostgreSQL), or year 999.
    await bad(
      filter([{ field: 'profile.state', operator: 'gt', value: '9999-12-31T23:00-05:00' }]),
      'conditions.conditions.0.value',
    );
    await bad(
      filter([{ field: 'lead.createdAt', operator: 'lt', value: '1000-01-01T00:30+01:00' }]),
      'conditions.conditions.0.value',
    );
    // PostgreSQL reads \b as a backspace: a word-boundary pattern written for JS would never match.
    const wordBoundary = await ctx.call(
      alice,
      'POST',
      '/api/matching/rules',
      filter([{ field: 'profile.name', operator: 'regex', value: '\\bbank\\b' }]),
    );
    assertValidation(wordBoundary, 'conditions.conditions.0.value');
    assert.match(wordBoundary.json().error.details[0].message, /\\y/);
    await bad(filter([{ field: 'profile.name', operator: 'regex', value: 'a\\Bb' }]), 'conditions.conditions.0.value');
    await bad(
      filter([{ field: 'profile.name', operator: 'regex', value: '[\\\\]\\b' }]),
      'conditions.conditions.0.value',
    );
    for (const ok of ['\\ybank\\y', 'a\\\\b', 'a\\\\B']) {
      assert.equal(
        (
          await ctx.call(
            alice,
            'POST',
            '/api/matching/rules',
            filter([{ field: 'profile.name', operator: 'regex', value: ok }]),
          )
        ).statusCode,
        201,
        ok,
      );
    }
    await bad(filter([{ field: 'profile.state', operator: 'exists', value: 'x' }]), 'conditions.conditions.0.value');
    await bad(filter([{ field: 'profile.state', operator: 'equals' }]), 'conditions.conditions.0.value');
    await bad(
      filter([{ field: 'profile.state', operator: 'regex', value: '(unclosed' }]),
      'conditions.conditions.0.value',
    );
    await bad(
      filter([{ field: 'lead.createdAt', operator: 'equals', value: '2024-01-01' }]),
      'conditions.conditions.0.operator',
    );
    await bad(filter([{ field: 'lead.createdAt', operator: 'gt', value: 5 }]), 'conditions.conditions.0.value');
    await bad(
      filter([{ operator: 'OR', conditions: [{ field: 'profile.x', operator: 'exists' }] }]),
      'conditions.conditions.0.conditions.0.field',
    );
    await bad(
      scored({ criteria: [{ weight: 10, condition: { field: 'profile.zzz', operator: 'exists' } }] }),
      'criteria.0.condition.field',
    );
    await bad(scored({ threshold: 101 }), 'threshold');
    await bad({ ...scored(), type: 'AI' }, 'aiPrompt');
    await bad(scored({ name: '' }), 'name');
    await bad(scored({ profileTypeId: 'nope' }), 'profileTypeId');
    await bad({ name: 'x', profileTypeId: typeId, type: 'NOPE' }, 'type');
    // Each condition becomes several bound parameters: 10,000 of them once overflowed PostgreSQL's 65,535 (a 500).
    const wide = (n: number) => ({
      operator: 'OR',
      conditions: Array.from({ length: n }, () => ({ field: 'profile.revenue', operator: 'gt', value: 1 })),
    });
    const huge = {
      operator: 'OR',
      conditions: Array.from({ length: 50 }, () => ({
        operator: 'OR',
        conditions: Array.from({ length: 50 }, () => wide(4)),
      })),
    };
    await bad({ ...filter([]), conditions: huge }, 'conditions');
    assertValidation(
      await ctx.call(alice, 'POST', '/api/matching/preview', {
        rule: { profileTypeId: typeId, type: 'FILTER', conditions: huge },
      }),
      'rule.conditions',
    );
    await bad(scored({ criteria: Array.from({ length: 5 }, () => ({ weight: 1, condition: wide(41) })) }), 'criteria');
    assert.equal(
      (await ctx.call(alice, 'POST', '/api/matching/rules', { ...filter([]), conditions: wide(50) })).statusCode,
      201,
      'a wide rule within the limit',
    );
    for (const pt of [bobTypeId, '0190a0a0-0000-7000-8000-000000000000']) {
      const res = await ctx.call(alice, 'POST', '/api/matching/rules', scored({ profileTypeId: pt }));
      assertError(res, 404, 'NOT_FOUND');
      assert.equal(res.json().error.details[0].field, 'profileTypeId');
    }
  });

  test("another user's rules: 404 on get, patch, delete, execute, preview and results; absent from lists", async () => {
    const rule = await create(alice, scored({ name: 'private' }));
    for (const [method, url, body] of [
      ['GET', `/api/matching/rules/${rule.id}`],
      ['PATCH', `/api/matching/rules/${rule.id}`, { name: 'mine' }],
      ['DELETE', `/api/matching/rules/${rule.id}`],
      ['POST', '/api/matching/execute', { ruleId: rule.id }],
      ['POST', '/api/matching/preview', { ruleId: rule.id }],
      ['GET', `/api/matching/results?ruleId=${rule.id}`],
    ] as const) {
      assertError(await ctx.call(bob, method, url, body), 404, 'NOT_FOUND');
    }
    assert.equal((await ctx.call(bob, 'GET', '/api/matching/rules')).json().data.rules.length, 0);
    assertError(await ctx.call(alice, 'GET', '/api/matching/rules/not-a-uuid'), 404, 'NOT_FOUND');
    assertError(await ctx.call(alice, 'DELETE', '/api/matching/rules/not-a-uuid'), 404, 'NOT_FOUND');
    assertError(await ctx.call(undefined, 'GET', '/api/matching/rules'), 401, 'UNAUTHORIZED');
  });
});

describe('execute and results', () => {
  test('SCORED execute: run with progress, results best first, filters, keyset pagination, details', async () => {
    const rule = await create(alice, scored());
    const run = await executeAndWait(alice, rule.id);
    assert.equal(run.status, 'COMPLETED', JSON.stringify(run));
    assert.deepEqual([run.total, run.processed, run.matched, run.failed, run.progress], [6, 6, 2, 0, 100]);
    assert.ok(run.startedAt && run.finishedAt);

    const all = (await ctx.call(alice, 'GET', `/api/matching/results?ruleId=${rule.id}`)).json().data;
    assert.deepEqual(all.rule, { id: rule.id, name: rule.name, type: 'SCORED' });
    assert.equal(all.run.id, run.id);
    assert.deepEqual(
      all.results.map((r: { matchScore: number }) => r.matchScore),
      [100, 80, 50, 30, 20, 0],
    );
    assert.deepEqual(
      all.results.map((r: { matched: boolean }) => r.matched),
      [true, true, false, false, false, false],
    );
    assert.deepEqual(
      all.results.map((r: { profileId: string }) => r.profileId),
      ids,
    );
    const first = all.results[0];
    assert.equal(first.profile.data.name, 'A');
    assert.ok(first.leadId);
    assert.deepEqual(first.details.criteria, [
      { label: 'In CA', weight: 50, held: true },
      { label: 'Revenue ≥ 1M', weight: 30, held: true },
      { label: 'Does FHA', weight: 20, held: true },
    ]);
    assert.deepEqual(
      all.results[3].details.criteria.map((c: { held: boolean }) => c.held),
      [false, true, false],
    );

    const filtered = (
      await ctx.call(alice, 'GET', `/api/matching/results?ruleId=${rule.id}&minScore=20&maxScore=80`)
    ).json().data.results;
    assert.deepEqual(
      filtered.map((r: { matchScore: number }) => r.matchScore),
      [80, 50, 30, 20],
    );
    const unmatched = (await ctx.call(alice, 'GET', `/api/matching/results?ruleId=${rule.id}&matched=false`)).json()
      .data.results;
    assert.equal(unmatched.length, 4);

    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const q: string = `/api/matching/results?ruleId=${rule.id}&limit=4${cursor ? `&cursor=${cursor}` : ''}`;
      const page = (await ctx.call(alice, 'GET', q)).json().data;
      seen.push(...page.results.map((r: { matchScore: number }) => r.matchScore));
      cursor = page.nextCursor;
    } while (cursor);
    assert.deepEqual(seen, [100, 80, 50, 30, 20, 0]);

    assertValidation(await ctx.call(alice, 'GET', `/api/matching/results?ruleId=${rule.id}&cursor=xyz`), 'cursor');
    // Scores outside match_score's 0–100, or an id with NUL: 400 naming cursor, not a database error naming the body.
    const rc = (v: unknown) => Buffer.from(JSON.stringify(v), 'utf8').toString('base64url');
    for (const bad of [
      [1e300, ids[0]],
      [-1, ids[0]],
      [101, ids[0]],
      [50, `${ids[0]}\u0000`],
      [50, '\u0000'],
    ]) {
      assertValidation(
        await ctx.call(alice, 'GET', `/api/matching/results?ruleId=${rule.id}&cursor=${rc(bad)}`),
        'cursor',
      );
    }
    const fromNull = await ctx.call(
      alice,
      'GET',
      `/api/matching/results?ruleId=${rule.id}&cursor=${rc([null, ids[0]])}`,
    );
    assert.equal(fromNull.statusCode, 200, fromNull.body);
    assertValidation(
      await ctx.call(alice, 'GET', `/api/matching/results?ruleId=${rule.id}&minScore=90&maxScore=10`),
      'minScore',
    );
    assertValidation(await ctx.call(alice, 'GET', `/api/matching/results?ruleId=${rule.id}&matched=yes`), 'matched');
    assertValidation(await ctx.call(alice, 'GET', '/api/matching/results'), 'ruleId');
    const unknown = await ctx.call(alice, 'GET', '/api/matching/results?ruleId=0190a0a0-0000-7000-8000-000000000000');
    assertError(unknown, 404, 'NOT_FOUND');
    assert.equal(unknown.json().error.details[0].field, 'ruleId');
  });

  test(
    're-execute replaces results; deleted profiles drop out; threshold PATCH re-derives matched; definition PATCH ' +
      'clears results',
    async () => {
      const [extra] = await seedProfiles(ctx.deps.db, alice.id, typeId, [{ data: { name: 'tmp', state: 'CA' } }]);
      const rule = await create(alice, scored({ name: 'rerun' }));
      await executeAndWait(alice, rule.id);
      assert.equal(
        (await ctx.call(alice, 'GET', `/api/matching/results?ruleId=${rule.id}`)).json().data.results.length,
        7,
      );
      await ctx.deps.database.query('DELETE FROM profiles WHERE id = $1', [extra]);
      const run2 = await executeAndWait(alice, rule.id);
      assert.equal(run2.processed, 6);
      const results = (await ctx.call(alice, 'GET', `/api/matching/results?ruleId=${rule.id}`)).json().data.results;
      assert.equal(results.length, 6);
      assert.ok(results.every((r: { id: string }) => r.id));

      const lowered = await ctx.call(alice, 'PATCH', `/api/matching/rules/${rule.id}`, { threshold: 20 });
      assert.equal(lowered.statusCode, 200, lowered.body);
      assert.equal(lowered.json().data.rule.threshold, 20);
      const after = (await ctx.call(alice, 'GET', `/api/matching/results?ruleId=${rule.id}&matched=true`)).json().data
        .results;
      assert.deepEqual(
        after.map((r: { matchScore: number }) => r.matchScore),
        [100, 80, 50, 30, 20],
      );

      const renamed = await ctx.call(alice, 'PATCH', `/api/matching/rules/${rule.id}`, {
        name: 'renamed',
        description: 'd',
      });
      assert.equal(renamed.json().data.rule.name, 'renamed');
      assert.equal(
        (await ctx.call(alice, 'GET', `/api/matching/results?ruleId=${rule.id}`)).json().data.results.length,
        6,
        'a rename keeps results',
      );

      const redefined = await ctx.call(alice, 'PATCH', `/api/matching/rules/${rule.id}`, {
        criteria: [{ weight: 1, condition: { field: 'profile.state', operator: 'exists' } }],
      });
      assert.equal(redefined.statusCode, 200, redefined.body);
      assert.equal(
        (await ctx.call(alice, 'GET', `/api/matching/results?ruleId=${rule.id}`)).json().data.results.length,
        0,
      );

      const toFilter = await ctx.call(alice, 'PATCH', `/api/matching/rules/${rule.id}`, { type: 'FILTER' });
      assertValidation(toFilter, 'conditions');
      const switched = await ctx.call(alice, 'PATCH', `/api/matching/rules/${rule.id}`, {
        type: 'FILTER',
        conditions: { operator: 'OR', conditions: [{ field: 'profile.state', operator: 'exists' }] },
      });
      assert.equal(switched.statusCode, 200, switched.body);
      assert.deepEqual(
        [switched.json().data.rule.type, switched.json().data.rule.criteria, switched.json().data.rule.threshold],
        ['FILTER', null, null],
      );
      assertValidation(await ctx.call(alice, 'PATCH', `/api/matching/rules/${rule.id}`, { aiPrompt: 'x' }), 'aiPrompt');
      assertValidation(
        await ctx.call(alice, 'PATCH', `/api/matching/rules/${rule.id}`, {
          conditions: { operator: 'AND', conditions: [{ field: 'profile.nope', operator: 'exists' }] },
        }),
        'conditions.conditions.0.field',
      );
      assertValidation(await ctx.call(alice, 'PATCH', `/api/matching/rules/${rule.id}`, { bogus: 1 }), 'body');
      const empty = await ctx.call(alice, 'PATCH', `/api/matching/rules/${rule.id}`, {});
      assert.equal(empty.statusCode, 200);

      const filterRun = await executeAndWait(alice, rule.id);
      assert.equal(filterRun.matched, 5);
      const fr = (await ctx.call(alice, 'GET', `/api/matching/results?ruleId=${rule.id}`)).json().data.results;
      assert.deepEqual(
        fr.map((r: { matchScore: number }) => r.matchScore),
        [100, 100, 100, 100, 100, 0],
      );
      assert.deepEqual(fr[5].details.criteria, [{ label: 'profile.state exists', weight: null, held: false }]);
    },
  );

  test(
    're-execute writes only what changed: same verdicts keep their row, a changed profile is rewritten; counts ' +
      'cover every profile',
    async () => {
      const rule = await create(alice, scored({ name: 'only what moved' }));
      await executeAndWait(alice, rule.id);
      const rows = async () =>
        new Map(
          (
            await ctx.deps.database.query<{ profile_id: string; run_id: string; match_score: number }>(
              'SELECT profile_id, run_id, match_score FROM matching_results WHERE rule_id = $1',
              [rule.id],
            )
          ).map((r) => [r.profile_id, r]),
        );
      const first = await rows();
      await ctx.deps.database.query(`UPDATE profiles SET data = data || '{"state":"CA"}'::jsonb WHERE id = $1`, [
        ids[3],
      ]);
      try {
        const run2 = await executeAndWait(alice, rule.id);
        assert.deepEqual([run2.status, run2.processed, run2.total], ['COMPLETED', 6, 6]);
        const second = await rows();
        const rewritten = [...second.values()].filter((r) => r.run_id === run2.id).map((r) => r.profile_id);
        assert.deepEqual(rewritten, [ids[3]], 'only D (NY → CA) was written again');
        assert.equal(second.get(ids[3]!)!.match_score, 80);
        assert.equal(second.get(ids[0]!)!.run_id, first.get(ids[0]!)!.run_id);
      } finally {
        await ctx.deps.database.query(`UPDATE profiles SET data = data || '{"state":"NY"}'::jsonb WHERE id = $1`, [
          ids[3],
        ]);
      }
    },
  );

  test(
    'while a run is in progress: execute answers that run, definition PATCH is 409; DELETE removes rule, runs and ' +
      'results',
    async () => {
      const rule = await create(alice, scored({ name: 'twice' }));
      // A run in progress (as a worker elsewhere would hold it), so the answer does not race the worker here.
      const [busy] = await ctx.deps.database.query<{ id: string }>(
        `INSERT INTO matching_runs (id, user_id, rule_id, status, started_at) VALUES ($1, $2, $3, 'RUNNING', now()) ` +
          `RETURNING id`,
        [newId(), alice.id, rule.id],
      );
      const again = await ctx.call(alice, 'POST', '/api/matching/execute', { ruleId: rule.id });
      assert.equal(again.statusCode, 200, again.body);
      assert.deepEqual(
        [again.json().data.run.id, again.json().data.run.status, again.json().data.started],
        [busy!.id, 'RUNNING', false],
      );
      assertError(await ctx.call(alice, 'PATCH', `/api/matching/rules/${rule.id}`, { threshold: 10 }), 409, 'CONFLICT');
      assert.equal(
        (await ctx.call(alice, 'PATCH', `/api/matching/rules/${rule.id}`, { name: 'still renamable' })).statusCode,
        200,
      );
      await ctx.deps.database.query(`UPDATE matching_runs SET status = 'FAILED' WHERE id = $1`, [busy!.id]);
      const res = await ctx.call(alice, 'POST', '/api/matching/execute', { ruleId: rule.id });
      assert.equal(res.statusCode, 202, res.body);
      await eventually(
        async () =>
          (await ctx.call(alice, 'GET', `/api/matching/rules/${rule.id}`)).json().data.rule.lastRun.status ===
          'COMPLETED',
      );
      assert.ok(
        (await ctx.deps.db.select().from(matchingResults).where(eq(matchingResults.ruleId, rule.id))).length > 0,
      );
      const del = await ctx.call(alice, 'DELETE', `/api/matching/rules/${rule.id}`);
      assert.equal(del.statusCode, 200);
      assertError(await ctx.call(alice, 'GET', `/api/matching/rules/${rule.id}`), 404, 'NOT_FOUND');
      assert.equal(
        (await ctx.deps.db.select().from(matchingResults).where(eq(matchingResults.ruleId, rule.id))).length,
        0,
      );
      const runs = await ctx.deps.database.query('SELECT id FROM matching_runs WHERE rule_id = $1', [rule.id]);
      assert.equal(runs.length, 0);
      assertValidation(await ctx.call(alice, 'POST', '/api/matching/execute', {}), 'ruleId');
      assertError(await ctx.call(alice, 'POST', '/api/matching/execute', { ruleId: 'nope' }), 404, 'NOT_FOUND');
    },
  );
});

describe('results follow what they describe (no foreign keys: statement-level delete triggers)', () => {
  const resultCount = async (where: string, params: unknown[]) =>
    (
      await ctx.deps.database.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM matching_results WHERE ${where}`,
        params,
      )
    )[0]!.n;

  test(
    'deleting a profile, then its whole profile type, removes their results; other rules and types keep ' + 'theirs',
    async () => {
      const lenders = await seedProfileType(ctx.deps.db, alice.id, FIELDS, 'Cascade');
      const [first, second] = await seedProfiles(ctx.deps.db, alice.id, lenders, [
        { data: { name: 'x', state: 'CA' } },
        { data: { name: 'y', state: 'NY' } },
        { data: { name: 'z', state: 'TX' } },
      ]);
      const rule = await create(alice, scored({ name: 'cascade', profileTypeId: lenders }));
      const keep = await create(alice, scored({ name: 'keeps its results' }));
      await executeAndWait(alice, rule.id);
      await executeAndWait(alice, keep.id);
      assert.equal(await resultCount('rule_id = $1', [rule.id]), 3);
      const kept = await resultCount('rule_id = $1', [keep.id]);
      assert.ok(kept > 0);

      await ctx.deps.database.query('DELETE FROM profiles WHERE id = $1', [first]);
      assert.equal(await resultCount('profile_id = $1', [first]), 0);
      assert.equal(await resultCount('rule_id = $1', [rule.id]), 2);

      // The type's deletion cascades to its profiles (FK) and to its rules (FK); both triggers fire.
      assert.equal((await ctx.call(alice, 'DELETE', `/api/profile-types/${lenders}`)).statusCode, 200);
      assert.equal(await resultCount('profile_id = $1 OR rule_id = $2', [second, rule.id]), 0);
      assert.equal(await resultCount('rule_id = $1', [keep.id]), kept);
    },
  );
});

describe('preview', () => {
  test('unsaved and saved rules on a sample or given profiles; nothing is stored', async () => {
    const before = await ctx.deps.database.query<{ n: number }>('SELECT count(*)::int AS n FROM matching_results');
    const runsBefore = await ctx.deps.database.query<{ n: number }>('SELECT count(*)::int AS n FROM matching_runs');
    const { name: _n, ...unsaved } = scored();
    const res = await ctx.call(alice, 'POST', '/api/matching/preview', { rule: unsaved, sampleSize: 3 });
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.equal(data.results.length, 3);
    assert.deepEqual(
      data.results.map((r: { profile: { data: { name: string } } }) => r.profile.data.name),
      ['F', 'E', 'D'],
      'newest first',
    );
    assert.deepEqual(
      data.results.map((r: { matchScore: number }) => r.matchScore),
      [0, 20, 30],
    );
    assert.deepEqual(data.summary, { evaluated: 3, matched: 0 });

    const rule = await create(alice, scored({ name: 'preview me' }));
    const byIds = (
      await ctx.call(alice, 'POST', '/api/matching/preview', { ruleId: rule.id, profileIds: [ids[0], ids[2]] })
    ).json().data;
    assert.deepEqual(byIds.results.map((r: { profileId: string }) => r.profileId).sort(), [ids[0], ids[2]].sort());
    assert.equal(byIds.summary.matched, 1);

    const after = await ctx.deps.database.query<{ n: number }>('SELECT count(*)::int AS n FROM matching_results');
    const runsAfter = await ctx.deps.database.query<{ n: number }>('SELECT count(*)::int AS n FROM matching_runs');
    assert.equal(Number(after[0]!.n), Number(before[0]!.n));
    assert.equal(Number(runsAfter[0]!.n), Number(runsBefore[0]!.n));

    assertValidation(await ctx.call(alice, 'POST', '/api/matching/preview', {}), 'ruleId');
    assertValidation(
      await ctx.call(alice, 'POST', '/api/matching/preview', { ruleId: rule.id, sampleSize: 101 }),
      'sampleSize',
    );
    assertValidation(
      await ctx.call(alice, 'POST', '/api/matching/preview', {
        rule: { ...unsaved, criteria: [{ weight: 1, condition: { field: 'profile.zz', operator: 'exists' } }] },
      }),
      'rule.criteria.0.condition.field',
    );
    const otherType = await seedProfiles(ctx.deps.db, alice.id, otherTypeId, [{ data: { name: 'x' } }]);
    assertValidation(
      await ctx.call(alice, 'POST', '/api/matching/preview', { ruleId: rule.id, profileIds: [otherType[0]] }),
      'profileIds.0',
    );
    const bobs = await ctx.deps.database.query<{ id: string }>('SELECT id FROM profiles WHERE user_id = $1', [bob.id]);
    const foreign = await ctx.call(alice, 'POST', '/api/matching/preview', {
      ruleId: rule.id,
      profileIds: [ids[0], bobs[0]!.id],
    });
    assertError(foreign, 404, 'NOT_FOUND');
    assert.equal(foreign.json().error.details[0].field, 'profileIds.1');
    const bobsType = await ctx.call(alice, 'POST', '/api/matching/preview', {
      rule: { ...unsaved, profileTypeId: bobTypeId },
    });
    assertError(bobsType, 404, 'NOT_FOUND');
    assert.equal(bobsType.json().error.details[0].field, 'rule.profileTypeId');
  });

  test('AI rules without an AI provider: 503 AI_NOT_CONFIGURED on preview and execute', async () => {
    const rule = await create(alice, { name: 'AI', profileTypeId: typeId, type: 'AI', aiPrompt: 'Good lenders' });
    assertError(await ctx.call(alice, 'POST', '/api/matching/execute', { ruleId: rule.id }), 503, 'AI_NOT_CONFIGURED');
    assertError(await ctx.call(alice, 'POST', '/api/matching/preview', { ruleId: rule.id }), 503, 'AI_NOT_CONFIGURED');
    assert.equal((await ctx.call(alice, 'GET', `/api/matching/rules/${rule.id}`)).json().data.rule.lastRun, null);
  });
});

describe('profile export with ?ruleId=', () => {
  test('matched profiles with matchScore and aiReasoning columns; includeUnmatched adds matched; errors', async () => {
    const rule = await create(alice, scored({ name: 'export' }));
    await executeAndWait(alice, rule.id);
    const res = await ctx.call(alice, 'GET', `/api/profiles/export?ruleId=${rule.id}`);
    assert.equal(res.statusCode, 200, res.body);
    const rows = parseCsv(res.body);
    const header = rows[0]!;
    assert.deepEqual(header.slice(-2), ['matchScore', 'aiReasoning']);
    assert.ok(header.includes('state'));
    const body = rows.slice(1);
    assert.equal(body.length, 2);
    const score = header.indexOf('matchScore');
    assert.deepEqual(body.map((r) => r[score]).sort(), ['100', '80']);

    const all = parseCsv(
      (await ctx.call(alice, 'GET', `/api/profiles/export?ruleId=${rule.id}&includeUnmatched=true`)).body,
    );
    assert.deepEqual(all[0]!.slice(-3), ['matched', 'matchScore', 'aiReasoning']);
    assert.equal(all.length - 1, 6);
    assert.equal(all.slice(1).filter((r) => r[all[0]!.indexOf('matched')] === 'true').length, 2);

    const unknown = await ctx.call(alice, 'GET', '/api/profiles/export?ruleId=0190a0a0-0000-7000-8000-000000000000');
    assertError(unknown, 404, 'NOT_FOUND');
    assert.equal(unknown.json().error.details[0].field, 'ruleId');
    assertError(await ctx.call(bob, 'GET', `/api/profiles/export?ruleId=${rule.id}`), 404, 'NOT_FOUND');
    assertValidation(await ctx.call(alice, 'GET', '/api/profiles/export?ruleId=nope'), 'ruleId');
    assertValidation(
      await ctx.call(alice, 'GET', `/api/profiles/export?ruleId=${rule.id}&profileTypeId=${otherTypeId}`),
      'profileTypeId',
    );
  });
});
