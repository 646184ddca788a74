import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createAiTwoUserContext } from './helpers/ai-context.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';
import { type ChatRequest, type OpenAiStub, promptText, requestedSchema } from './helpers/openai-stub.ts';

// README "Outreach", Personalization: the model writes a subject and a first line per lead, from the lead's facts.
// The model is the loopback OpenAI-compatible server: the structured-output schema and the answer cross the wire.
let ctx: TestContext;
let ai: OpenAiStub;
let alice: TestUser;
let bob: TestUser;
let close: () => Promise<void>;

/** The recipient's facts as the prompt carries them (`The recipient (JSON):` then one JSON line). */
const factsOf = (request: ChatRequest) => JSON.parse(promptText(request).split('The recipient (JSON):\n')[1]!);

before(async () => {
  ({ ctx, ai, alice, bob, close } = await createAiTwoUserContext({ apiKey: 'sk-personalize' }));
  ai.respond((request) => {
    const { company } = factsOf(request);
    if (company === 'Broken Co') return { status: 500, message: 'model exploded' };
    // An answer that does not follow the schema (no firstLine): the client must refuse it.
    if (company === 'Sloppy Ltd') return { json: { subject: 'Hi' } };
    return {
      json: { subject: `Idea for ${company}`, firstLine: `Saw ${company} is hiring.` },
      usage: { prompt_tokens: 600, completion_tokens: 400 },
    };
  });
});
after(() => close?.());

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
  const sloppy = await lead(alice, 'Sloppy Ltd');
  const bobs = await lead(bob, 'Bob Corp');
  const balance = await ctx.deps.credits.balance(ctx.deps.db, alice.id);
  ai.requests.length = 0;
  const dry = await ctx.call(alice, 'POST', '/api/outreach/personalize', {
    leadIds: [acme, broken, sloppy, bobs],
    dryRun: true,
    instructions: 'We sell bookkeeping to dentists',
  });
  assert.equal(dry.statusCode, 200, dry.body);
  const [a, b, s, c] = dry.json().data.results;
  assert.deepEqual(a, {
    leadId: acme,
    subject: 'Idea for Acme Dental',
    firstLine: 'Saw Acme Dental is hiring.',
    stored: false,
    error: null,
  });
  assert.deepEqual([b.subject, b.firstLine, b.stored], [null, null, false]);
  assert.match(b.error, /HTTP 500/);
  assert.deepEqual([s.subject, s.firstLine, s.stored], [null, null, false]);
  assert.match(s.error, /did not match the expected structure/);
  assert.deepEqual(c, { leadId: bobs, subject: null, firstLine: null, stored: false, error: 'not_found' });

  // What went over the wire: one request per lead of the caller's, each asking for the personalization schema.
  assert.equal(ai.requests.length, 3);
  for (const request of ai.requests) {
    assert.equal(request.headers.authorization, 'Bearer sk-personalize');
    assert.equal(request.body.model, 'stub-model');
    assert.equal(request.body.response_format.type, 'json_schema');
    assert.equal(request.body.response_format.json_schema.name, 'personalization');
    const schema = requestedSchema(request);
    assert.equal(schema.type, 'object');
    assert.deepEqual(Object.keys(schema.properties), ['subject', 'firstLine']);
    assert.deepEqual(schema.required, ['subject', 'firstLine']);
    assert.equal(schema.additionalProperties, false);
    assert.equal(schema.properties.subject.type, 'string');
    assert.equal(schema.properties.firstLine.type, 'string');
  }
  const acmeRequest = ai.requests.find((r) => factsOf(r).company === 'Acme Dental')!;
  assert.ok(promptText(acmeRequest).includes('We sell bookkeeping to dentists'));
  assert.deepEqual(factsOf(acmeRequest), {
    name: 'Dana',
    jobTitle: 'CEO',
    company: 'Acme Dental',
    emailDomain: 'acmedental.test',
    customFields: {},
    profiles: [],
  });
  assert.deepEqual((await ctx.call(alice, 'GET', `/api/leads/${acme}`)).json().data.lead.customFields, {});
  assert.ok((await ctx.deps.credits.balance(ctx.deps.db, alice.id)) < balance, 'tokens are charged');

  const stored = await ctx.call(alice, 'POST', '/api/outreach/personalize', { leadIds: [acme, sloppy] });
  assert.deepEqual(
    stored.json().data.results.map((r: { stored: boolean }) => r.stored),
    [true, false],
  );
  assert.deepEqual((await ctx.call(alice, 'GET', `/api/leads/${acme}`)).json().data.lead.customFields, {
    personalizedSubject: 'Idea for Acme Dental',
    personalizedFirstLine: 'Saw Acme Dental is hiring.',
  });
  assert.deepEqual((await ctx.call(alice, 'GET', `/api/leads/${sloppy}`)).json().data.lead.customFields, {});
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
