import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertValidation } from './helpers/assertions.ts';
import { seedProfileType } from './helpers/seed.ts';

/** A bad operator in a rule is reported at its own `…operator` path, naming the operators there are. */

let ctx: TestContext;
let alice: TestUser;
let typeId: string;
before(async () => {
  ctx = await createTestContext({ workers: false });
  alice = await ctx.signup();
  typeId = await seedProfileType(ctx.deps.db, alice.id, [{ name: 'state', type: 'string' }], 'Lender');
});
after(() => ctx?.close());

const ok = { field: 'profile.state', operator: 'equals', value: 'CA' };
const bogus = { field: 'profile.state', operator: 'bogus', value: 'CA' };
const filter = (conditions: unknown[]) => ({
  name: 'x',
  profileTypeId: typeId,
  type: 'FILTER',
  conditions: { operator: 'AND', conditions },
});
const scored = (condition: unknown) => ({
  name: 'x',
  profileTypeId: typeId,
  type: 'SCORED',
  criteria: [
    { weight: 10, condition: ok },
    { weight: 5, condition },
  ],
});
const CONDITION_OPERATORS =
  /equals, not_equals, in, not_in, contains, not_contains, gt, gte, lt, lte, exists, not_exists, regex/;

/** The answer is a 400 whose only detail is `field`, its message listing the condition operators. */
function assertOperatorError(res: Awaited<ReturnType<TestContext['call']>>, field: string) {
  assertValidation(res, field);
  const details = res.json().error.details as Array<{ field: string; message: string }>;
  assert.deepEqual(
    details.map((d) => d.field),
    [field],
  );
  assert.match(details[0]!.message, CONDITION_OPERATORS);
  return details[0]!.message;
}

test('FILTER: an unknown operator names conditions.conditions.N.operator, at every group level', async () => {
  const post = (body: unknown) => ctx.call(alice, 'POST', '/api/matching/rules', body);
  const top = assertOperatorError(await post(filter([ok, bogus])), 'conditions.conditions.1.operator');
  assert.match(top, /or, for a group, AND or OR/);
  assertOperatorError(
    await post(filter([{ field: 'profile.state', value: 'CA' }])),
    'conditions.conditions.0.operator',
  );
  assertOperatorError(
    await post(filter([{ operator: 'OR', conditions: [ok, bogus] }])),
    'conditions.conditions.0.conditions.1.operator',
  );
  assertOperatorError(
    await post(filter([ok, { operator: 'OR', conditions: [{ operator: 'AND', conditions: [bogus] }] }])),
    'conditions.conditions.1.conditions.0.conditions.0.operator',
  );
  // A fourth level of groups: named at its operator, saying why.
  const tooDeep = {
    operator: 'OR',
    conditions: [{ operator: 'AND', conditions: [{ operator: 'OR', conditions: [ok] }] }],
  };
  const deep = assertOperatorError(
    await post(filter([tooDeep])),
    'conditions.conditions.0.conditions.0.conditions.0.operator',
  );
  assert.match(deep, /groups nest at most 3 levels/);
  // Other mistakes inside a condition keep their own paths.
  assertValidation(await post(filter([{ ...ok, field: 7 }])), 'conditions.conditions.0.field');
  assertValidation(
    await post(filter([{ operator: 'OR', conditions: [{ ...ok, extra: 1 }] }])),
    'conditions.conditions.0.conditions.0',
  );
});

test('SCORED: an unknown operator names criteria.N.condition.operator (and inside a group)', async () => {
  const post = (body: unknown) => ctx.call(alice, 'POST', '/api/matching/rules', body);
  assertOperatorError(await post(scored(bogus)), 'criteria.1.condition.operator');
  assertOperatorError(
    await post(scored({ operator: 'AND', conditions: [ok, { operator: 'OR', conditions: [bogus] }] })),
    'criteria.1.condition.conditions.1.conditions.0.operator',
  );
});

test('preview and update: the same paths under rule. and in PATCH', async () => {
  const preview = await ctx.call(alice, 'POST', '/api/matching/preview', {
    rule: { profileTypeId: typeId, type: 'FILTER', conditions: { operator: 'AND', conditions: [bogus] } },
  });
  assertOperatorError(preview, 'rule.conditions.conditions.0.operator');
  const scoredPreview = await ctx.call(alice, 'POST', '/api/matching/preview', {
    rule: { ...scored(bogus), name: undefined },
  });
  assertOperatorError(scoredPreview, 'rule.criteria.1.condition.operator');

  const created = await ctx.call(alice, 'POST', '/api/matching/rules', filter([ok]));
  assert.equal(created.statusCode, 201, created.body);
  const id = created.json().data.rule.id;
  const patch = await ctx.call(alice, 'PATCH', `/api/matching/rules/${id}`, {
    conditions: { operator: 'AND', conditions: [ok, { operator: 'OR', conditions: [ok, bogus] }] },
  });
  assertOperatorError(patch, 'conditions.conditions.1.conditions.1.operator');
  // Nothing was written: the rule still holds its one condition.
  const rule = (await ctx.call(alice, 'GET', `/api/matching/rules/${id}`)).json().data.rule;
  assert.deepEqual(rule.conditions, { operator: 'AND', conditions: [ok] });
});
