import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq, inArray } from 'drizzle-orm';
import { aiUsage, campaignSources, matchingRules, sources } from '../src/db/schema/index.ts';
import { ruleDefinitionSchema } from '../src/modules/matching/matching.conditions.ts';
import { createAiTwoUserContext } from './helpers/ai-context.ts';
import type { TestContext, TestUser } from './helpers/app.ts';
import { assertError } from './helpers/assertions.ts';
import { type OpenAiStub, promptText, requestedSchema } from './helpers/openai-stub.ts';
import type { SearchStub } from './helpers/search-stub.ts';
import { seedProfiles, seedProfileType } from './helpers/seed.ts';

const FIELDS = [
  { name: 'companyName', type: 'string' as const },
  { name: 'city', type: 'string' as const },
  { name: 'employees', type: 'integer' as const },
  { name: 'industry', type: 'string' as const },
];
const TARGET = {
  industries: ['Dental'],
  locations: ['Austin'],
  companySize: { min: 10, max: 200 },
  titles: ['Owner'],
  keywords: ['orthodontics'],
};

const cond = (field: string, operator: string, value: unknown) => ({ field, operator, value });
const modelRule = (type: string, extra: Record<string, unknown>) => ({
  type,
  name: `Model ${type}`,
  description: `A ${type} rule`,
  rationale: `Because ${type}`,
  match: null,
  conditions: null,
  criteria: null,
  threshold: null,
  aiPrompt: null,
  ...extra,
});
const goodAnswer = {
  reasoning: 'Dental owners in Austin.',
  rules: [
    modelRule('FILTER', {
      match: 'ALL',
      conditions: [cond('profile.industry', 'contains', 'dental'), cond('lead.jobTitle', 'contains', 'owner')],
    }),
    modelRule('SCORED', {
      threshold: 60,
      criteria: [
        { label: 'Austin', weight: 30, condition: cond('profile.city', 'equals', 'Austin') },
        { label: 'Size', weight: 70, condition: cond('profile.employees', 'gte', 10) },
      ],
    }),
    modelRule('AI', { aiPrompt: 'Is this a dental practice in Austin run by its owner?', threshold: 70 }),
  ],
};

async function campaignWithType(ctx: TestContext, user: TestUser, extra: Record<string, unknown> = {}) {
  const profileTypeId = await seedProfileType(ctx.deps.db, user.id, FIELDS);
  const res = await ctx.call(user, 'POST', '/api/campaigns', {
    name: 'Dentists',
    target: TARGET,
    profileTypeId,
    ...extra,
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.campaign as { id: string; profileTypeId: string; projectId: string | null };
}

const assertRulesValid = (rules: any[]) => {
  for (const rule of rules) {
    const parsed = ruleDefinitionSchema.safeParse(rule);
    assert.ok(parsed.success, JSON.stringify(parsed.error?.issues));
  }
};

describe('suggest-matching (answers scripted on the loopback OpenAI-compatible server)', () => {
  let ctx: TestContext;
  let alice: TestUser;
  let ai: OpenAiStub;
  let close: () => Promise<void>;
  let answer: unknown = goodAnswer;
  before(async () => {
    ({ ctx, alice, ai, close } = await createAiTwoUserContext());
    ai.respond(() => ({ json: answer, usage: { prompt_tokens: 50, completion_tokens: 20 } }));
  });
  after(async () => close?.());

  test(
    "valid output is used as the model wrote it; the prompt carries the target and the type's fields; usage " +
      'recorded',
    async () => {
      answer = goodAnswer;
      const c = await campaignWithType(ctx, alice);
      const calls = ai.requests.length;
      const res = await ctx.call(alice, 'POST', `/api/campaigns/${c.id}/suggest-matching`, {});
      assert.equal(res.statusCode, 200, res.body);
      const data = res.json().data;
      assert.equal(data.method, 'ai');
      assert.equal(data.reasoning, 'Dental owners in Austin.');
      assert.deepEqual(data.adjustments, []);
      assert.deepEqual(
        data.rules.map((r: any) => [r.type, r.method, r.name]),
        [
          ['FILTER', 'ai', 'Model FILTER'],
          ['SCORED', 'ai', 'Model SCORED'],
          ['AI', 'ai', 'Model AI'],
        ],
      );
      assert.deepEqual(data.rules[0].conditions, {
        operator: 'AND',
        conditions: [
          { field: 'profile.industry', operator: 'contains', value: 'dental' },
          { field: 'lead.jobTitle', operator: 'contains', value: 'owner' },
        ],
      });
      assert.deepEqual([data.rules[1].threshold, data.rules[1].criteria.length], [60, 2]);
      assert.deepEqual(
        [data.rules[2].aiPrompt, data.rules[2].threshold],
        ['Is this a dental practice in Austin run by its owner?', 70],
      );
      assertRulesValid(data.rules);
      assert.equal(ai.requests.length, calls + 1);
      const prompt = promptText(ai.requests.at(-1)!);
      assert.match(prompt, /profile\.employees \(integer\)/);
      assert.match(prompt, /industries Dental; locations Austin; company size 10–200 employees; titles Owner/);
      const usage = await ctx.deps.db
        .select()
        .from(aiUsage)
        .where(and(eq(aiUsage.userId, alice.id), eq(aiUsage.feature, 'campaigns.suggest-matching')));
      assert.deepEqual(
        usage.map((u) => u.totalTokens),
        [70],
      );
    },
  );

  test(
    'invalid output: conditions repaired or dropped, a type the model got wrong falls back to rule-based, all ' +
      'labelled',
    async () => {
      answer = {
        reasoning: 'Mixed.',
        rules: [
          // Only unknown fields: unusable → the rule-based FILTER replaces it.
          modelRule('FILTER', {
            match: 'ALL',
            conditions: [cond('profile.revenue', 'gt', 5), cond('lead.customFields.x', 'exists', null)],
          }),
          // A scalar for `in` (wrapped), a number as text (read), an unknown operator and field (dropped).
          modelRule('SCORED', {
            threshold: 250,
            criteria: [
              { label: 'City', weight: 40, condition: cond('profile.city', 'in', 'Austin') },
              { label: 'Size', weight: 30.6, condition: cond('profile.employees', 'gte', '1,000') },
              { label: 'Fuzzy', weight: 30, condition: cond('profile.industry', 'approximately', 'dent') },
              { label: 'Ghost', weight: 30, condition: cond('profile.ghost', 'equals', 'x') },
            ],
          }),
          // An empty prompt: unusable → rule-based AI rule.
          modelRule('AI', { aiPrompt: '   ' }),
          // A type nobody asked for.
          modelRule('MAGIC', {}),
        ],
      };
      const c = await campaignWithType(ctx, alice);
      const res = await ctx.call(alice, 'POST', `/api/campaigns/${c.id}/suggest-matching`, {});
      assert.equal(res.statusCode, 200, res.body);
      const data = res.json().data;
      assert.equal(data.method, 'ai');
      assert.deepEqual(
        data.rules.map((r: any) => [r.type, r.method]),
        [
          ['FILTER', 'rule-based'],
          ['SCORED', 'ai'],
          ['AI', 'rule-based'],
        ],
      );
      assertRulesValid(data.rules);
      const scored = data.rules[1];
      assert.equal(scored.threshold, 100);
      assert.deepEqual(scored.criteria, [
        { label: 'City', weight: 40, condition: { field: 'profile.city', operator: 'in', value: ['Austin'] } },
        { label: 'Size', weight: 31, condition: { field: 'profile.employees', operator: 'gte', value: 1000 } },
      ]);
      const notes = data.adjustments.join('\n');
      assert.match(notes, /model rule 1 .*dropped .*profile\.revenue/);
      assert.match(
        notes,
        /model rule 2 .*unusable conditions removed: profile\.industry approximately, profile\.ghost \(no such field\)/,
      );
      assert.match(notes, /model rule 2 .*repaired: .*wrapped in a list.*read as the number 1000/);
      assert.match(notes, /model rule 4 .*type MAGIC was not asked for/);
      assert.match(notes, /FILTER: the model gave no usable FILTER rule, so the rule-based proposal is used instead/);
      assert.match(notes, /AI: the model gave no usable AI rule/);
      assert.deepEqual(data.rules[0].conditions.conditions[0], {
        field: 'lead.jobTitle',
        operator: 'contains',
        value: 'Owner',
      });
    },
  );

  test('nothing usable: every rule rule-based and method says so; save=true creates and links them', async () => {
    answer = { reasoning: 'Oops.', rules: [modelRule('FILTER', { conditions: [] })] };
    const c = await campaignWithType(ctx, alice);
    const res = await ctx.call(alice, 'POST', `/api/campaigns/${c.id}/suggest-matching`, {
      types: ['FILTER', 'SCORED'],
      save: true,
    });
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.equal(data.method, 'rule-based');
    assert.match(data.reasoning, /None of the model's rules could be used/);
    assert.deepEqual(
      data.rules.map((r: any) => [r.type, r.method]),
      [
        ['FILTER', 'rule-based'],
        ['SCORED', 'rule-based'],
      ],
    );
    const rows = await ctx.deps.db
      .select()
      .from(matchingRules)
      .where(
        inArray(
          matchingRules.id,
          data.rules.map((r: any) => r.id),
        ),
      );
    assert.deepEqual(rows.map((r) => r.type).sort(), ['FILTER', 'SCORED']);
    const campaign = (await ctx.call(alice, 'GET', `/api/campaigns/${c.id}`)).json().data.campaign;
    assert.equal(campaign.rules.length, 2);
  });

  test(
    'proposals pass the matching check (operands, PostgreSQL regexes): bad conditions removed, a rule left with ' +
      'none replaced, preview and save alike',
    async () => {
      answer = {
        reasoning: 'Checked by the matching rules.',
        rules: [
          // gt with a non-date text: operandProblem rejects it; the good condition stays.
          modelRule('FILTER', {
            match: 'ALL',
            conditions: [cond('profile.city', 'gt', 'Austin'), cond('profile.industry', 'contains', 'dental')],
          }),
          // A named group: JavaScript compiles it, PostgreSQL does not; the only criterion, so the rule is unusable.
          modelRule('SCORED', {
            threshold: 50,
            criteria: [{ label: 'Named', weight: 50, condition: cond('profile.industry', 'regex', '(?<n>a)') }],
          }),
          modelRule('AI', { aiPrompt: 'Dental practice?', threshold: 60 }),
        ],
      };
      const c = await campaignWithType(ctx, alice);
      await seedProfiles(ctx.deps.db, alice.id, c.profileTypeId, [
        {
          data: { companyName: 'Smile', city: 'Austin', employees: 20, industry: 'Dental care' },
          lead: { jobTitle: 'Owner' },
        },
      ]);
      for (const save of [false, true]) {
        const res = await ctx.call(alice, 'POST', `/api/campaigns/${c.id}/suggest-matching`, { save });
        assert.equal(res.statusCode, 200, res.body);
        const data = res.json().data;
        assert.deepEqual(
          data.rules.map((r: any) => [r.type, r.method]),
          [
            ['FILTER', 'ai'],
            ['SCORED', 'rule-based'],
            ['AI', 'ai'],
          ],
        );
        assert.deepEqual(data.rules[0].conditions, {
          operator: 'AND',
          conditions: [{ field: 'profile.industry', operator: 'contains', value: 'dental' }],
        });
        assert.ok(!JSON.stringify(data.rules).includes('(?<n>a)'));
        const notes = data.adjustments.join('\n');
        assert.match(
          notes,
          /model rule 1 .*unusable conditions removed: profile\.city gt \(conditions\.conditions\.0\.value: /,
        );
        assert.match(notes, /model rule 2 .*dropped .*profile\.industry regex .*not a valid regular expression/);
        assert.match(notes, /SCORED: the model gave no usable SCORED rule, so the rule-based proposal is used instead/);
        if (!save) continue;
        // What was saved runs: preview uses the same SQL as execute.
        for (const rule of data.rules.filter((r: any) => r.type !== 'AI')) {
          const preview = await ctx.call(alice, 'POST', '/api/matching/preview', { ruleId: rule.id });
          assert.equal(preview.statusCode, 200, preview.body);
          assert.equal(preview.json().data.summary.evaluated, 1);
        }
        const rows = await ctx.deps.db
          .select()
          .from(matchingRules)
          .where(
            inArray(
              matchingRules.id,
              data.rules.map((r: any) => r.id),
            ),
          );
        assert.equal(rows.length, 3);
        assert.ok(!JSON.stringify(rows).includes('(?<n>a)'));
      }
    },
  );

  test('discover-sources with AI but no web search: 503 SEARCH_NOT_CONFIGURED', async () => {
    const c = await campaignWithType(ctx, alice);
    assertError(
      await ctx.call(alice, 'POST', `/api/campaigns/${c.id}/discover-sources`, {}),
      503,
      'SEARCH_NOT_CONFIGURED',
    );
  });
});

describe('with the loopback OpenAI server and search stub', () => {
  let ctx: TestContext;
  let alice: TestUser;
  let bob: TestUser;
  let ai: OpenAiStub;
  let search: SearchStub;
  let close: () => Promise<void>;
  before(
    async () =>
      ({ ctx, alice, bob, ai, search, close } = await createAiTwoUserContext({ apiKey: 'sk-campaigns', search: true })),
  );
  after(async () => close?.());

  const pick = (result: number) => ({
    result,
    name: `Pick ${result}`,
    category: 'association',
    estimatedLeads: 40,
    scrapeType: 'STATIC',
    description: 'Members',
    reasoning: 'Lists dentists',
  });

  test(
    'discover-sources: query from the target, model picks among search results; autoSave creates DRAFT sources ' +
      'linked to the campaign',
    async () => {
      const project = (await ctx.call(alice, 'POST', '/api/projects', { name: 'Dental' })).json().data.project.id;
      const c = await campaignWithType(ctx, alice, { projectId: project });
      ai.reset();
      search.respond(() => [
        { title: 'Texas Dental Association', url: 'https://tda.example.org/members' },
        { title: 'Austin dentists', url: 'https://austin.example.com/dentists' },
      ]);
      ai.enqueue({ json: { sources: [pick(2), pick(1), pick(9)] } });
      const res = await ctx.call(alice, 'POST', `/api/campaigns/${c.id}/discover-sources`, {
        count: 5,
        autoSave: true,
      });
      assert.equal(res.statusCode, 200, res.body);
      const data = res.json().data;
      assert.equal(data.method, 'ai+search');
      assert.equal(data.query, 'Dental Owner orthodontics Austin directory list');
      assert.equal(search.requests.at(-1)!.q, data.query);
      assert.match(
        promptText(ai.requests[0]!),
        /Industries: Dental[\s\S]*Locations: Austin[\s\S]*Company size: 10–200 employees[\s\S]*tda\.example\.org/,
      );
      assert.deepEqual(
        data.sources.map((s: any) => [s.url, s.status]),
        [
          ['https://austin.example.com/dentists', 'DRAFT'],
          ['https://tda.example.org/members', 'DRAFT'],
        ],
      );
      const rows = await ctx.deps.db
        .select()
        .from(sources)
        .where(
          inArray(
            sources.id,
            data.sources.map((s: any) => s.id),
          ),
        );
      assert.equal(rows.length, 2);
      for (const row of rows)
        assert.deepEqual(
          [row.userId, row.status, row.projectId, row.profileTypeId, row.reasoning],
          [alice.id, 'DRAFT', project, c.profileTypeId, 'Lists dentists'],
        );
      const campaign = (await ctx.call(alice, 'GET', `/api/campaigns/${c.id}`)).json().data.campaign;
      assert.deepEqual([...campaign.sourceIds].sort(), data.sources.map((s: any) => s.id).sort());
      const usage = await ctx.deps.db
        .select()
        .from(aiUsage)
        .where(and(eq(aiUsage.userId, alice.id), eq(aiUsage.feature, 'campaigns.discover-sources')));
      assert.equal(usage.length, 1);
    },
  );

  test('discover-sources without autoSave saves nothing; a failing provider is 502 and saves nothing', async () => {
    const c = await campaignWithType(ctx, alice);
    ai.reset();
    search.respond(() => [{ title: 'Dentists', url: 'https://d.example.org/' }]);
    ai.enqueue({ json: { sources: [pick(1)] } });
    // No body at all: the defaults (count 10, no autoSave).
    const res = await ctx.call(alice, 'POST', `/api/campaigns/${c.id}/discover-sources`);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().data.sources[0].id, undefined);
    assert.equal(search.requests.at(-1)!.count, 20);
    ai.respond(() => ({ status: 500 }));
    assertError(
      await ctx.call(alice, 'POST', `/api/campaigns/${c.id}/discover-sources`, { autoSave: true }),
      502,
      'AI_PROVIDER_ERROR',
    );
    assert.equal(
      (await ctx.deps.db.select().from(campaignSources).where(eq(campaignSources.campaignId, c.id))).length,
      0,
    );
    assertError(await ctx.call(bob, 'POST', `/api/campaigns/${c.id}/discover-sources`, {}), 404, 'NOT_FOUND');
  });

  test('suggest-matching over the wire: structured output requested, answer checked and saved', async () => {
    const c = await campaignWithType(ctx, alice);
    ai.reset();
    ai.enqueue({ json: goodAnswer });
    const res = await ctx.call(alice, 'POST', `/api/campaigns/${c.id}/suggest-matching`, { save: true });
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.equal(data.method, 'ai');
    assert.equal(ai.requests[0]!.body.response_format.type, 'json_schema');
    assert.ok(requestedSchema(ai.requests[0]!).properties.rules);
    assert.match(promptText(ai.requests[0]!), /profile\.industry \(string\)/);
    const saved = await ctx.deps.db
      .select()
      .from(matchingRules)
      .where(
        inArray(
          matchingRules.id,
          data.rules.map((r: any) => r.id),
        ),
      );
    assert.deepEqual(saved.map((r) => r.name).sort(), ['Model AI', 'Model FILTER', 'Model SCORED']);
    // A provider failure with save=true: 502, no rule created.
    ai.respond(() => ({ status: 500 }));
    const before = (await ctx.deps.db.select().from(matchingRules)).length;
    assertError(
      await ctx.call(alice, 'POST', `/api/campaigns/${c.id}/suggest-matching`, { save: true }),
      502,
      'AI_PROVIDER_ERROR',
    );
    assert.equal((await ctx.deps.db.select().from(matchingRules)).length, before);
  });
});
