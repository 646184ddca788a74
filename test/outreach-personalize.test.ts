import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MockLanguageModelV3 } from 'ai/test';
import { createTestContext, createTwoUserContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';

// README "Outreach", Personalization: the model writes a subject and a first line per lead, from the lead's facts.
let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
const prompts: string[] = [];
const model = new MockLanguageModelV3({
  modelId: 'mock-writer',
  doGenerate: async (options) => {
    const text = JSON.stringify(options.prompt).replace(/\\"/g, '"');
    prompts.push(text);
    if (text.includes('Broken Co')) throw new Error('model exploded');
    const company = text.match(/"company":"([^"]*)"/)?.[1] ?? '?';
    return {
      content: [
        {
          type: 'text',
          text: JSON.stringify({ subject: `Idea for ${company}`, firstLine: `Saw ${company} is hiring.` }),
        },
      ],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: {
        inputTokens: { total: 600, noCache: 600, cacheRead: 0, cacheWrite: 0 },
        outputTokens: { total: 400, text: 400, reasoning: 0 },
      },
      warnings: [],
    };
  },
});

before(async () => {
  ({ ctx, alice, bob } = await createTwoUserContext({ aiModel: model, workers: false }));
});
after(() => ctx?.close());

const lead = async (user: TestUser, company: string) =>
  (
    await ctx.call(user, 'POST', '/api/leads', {
      sourceUrl: 'https://example.com',
      email: `ceo@${company.toLowerCase().replace(/\W/g, '')}.test`,
      firstName: 'Dana',
      jobTitle: 'CEO',
      company,
    })
  ).json().data.lead.id as string;

test('dry run answers without storing; otherwise the lines are stored as custom fields; tokens are charged', async () => {
  const acme = await lead(alice, 'Acme Dental');
  const broken = await lead(alice, 'Broken Co');
  const bobs = await lead(bob, 'Bob Corp');
  const balance = await ctx.deps.credits.balance(ctx.deps.db, alice.id);
  const dry = await ctx.call(alice, 'POST', '/api/outreach/personalize', {
    leadIds: [acme, broken, bobs],
    dryRun: true,
    instructions: 'We sell bookkeeping to dentists',
  });
  assert.equal(dry.statusCode, 200, dry.body);
  const [a, b, c] = dry.json().data.results;
  assert.deepEqual(a, {
    leadId: acme,
    subject: 'Idea for Acme Dental',
    firstLine: 'Saw Acme Dental is hiring.',
    stored: false,
    error: null,
  });
  assert.equal(b.subject, null);
  assert.match(b.error, /exploded|failed|AI/i);
  assert.deepEqual(c, { leadId: bobs, subject: null, firstLine: null, stored: false, error: 'not_found' });
  assert.ok(prompts.some((p) => p.includes('We sell bookkeeping to dentists') && p.includes('"jobTitle":"CEO"')));
  assert.deepEqual((await ctx.call(alice, 'GET', `/api/leads/${acme}`)).json().data.lead.customFields, {});
  assert.ok((await ctx.deps.credits.balance(ctx.deps.db, alice.id)) < balance, 'tokens are charged');

  const stored = await ctx.call(alice, 'POST', '/api/outreach/personalize', { leadIds: [acme] });
  assert.equal(stored.json().data.results[0].stored, true);
  assert.deepEqual((await ctx.call(alice, 'GET', `/api/leads/${acme}`)).json().data.lead.customFields, {
    personalizedSubject: 'Idea for Acme Dental',
    personalizedFirstLine: 'Saw Acme Dental is hiring.',
  });
  assert.deepEqual((await ctx.call(bob, 'GET', `/api/leads/${bobs}`)).json().data.lead.customFields, {});
  assertValidation(
    await ctx.call(alice, 'POST', '/api/outreach/personalize', { leadIds: Array.from({ length: 101 }, () => acme) }),
    'leadIds',
  );
});

test('without an AI provider: 503 AI_NOT_CONFIGURED', async () => {
  const bare = await createTestContext({ workers: false });
  try {
    const user = await bare.signup();
    assertError(
      await bare.call(user, 'POST', '/api/outreach/personalize', { leadIds: ['0190a0a0-0000-7000-8000-000000000000'] }),
      503,
      'AI_NOT_CONFIGURED',
    );
  } finally {
    await bare.close();
  }
});
