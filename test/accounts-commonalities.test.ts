import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { aiUsage } from '../src/db/schema/index.ts';
import { accountIdOf } from '../src/modules/accounts/account-key.ts';
import { createAiContext, createAiTwoUserContext } from './helpers/ai-context.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError } from './helpers/assertions.ts';
import { type OpenAiStub, promptText } from './helpers/openai-stub.ts';
import { type SearchStub, startSearchStub } from './helpers/search-stub.ts';
import { type SeedLead, seedLeads, seedProfiles, seedProfileType } from './helpers/seed.ts';

const ACME = accountIdOf('domain:acme.com');
const url = (id: string) => `/api/accounts/${id}/commonalities`;

const acmeLeads: SeedLead[] = [
  {
    firstName: 'Ann',
    email: 'ann@acme.com',
    company: 'Acme Corp',
    jobTitle: 'VP Engineering',
    status: 'QUALIFIED',
    customFields: { team: 'Platform' },
  },
  {
    firstName: 'Bob',
    email: 'bob@acme.com',
    company: 'Acme Corp',
    jobTitle: 'Staff Engineer',
    status: 'VALID',
    customFields: { team: 'Platform' },
  },
  { firstName: 'Cid', email: 'cid@acme.com', company: 'Acme Corp', jobTitle: 'Engineering Manager', status: 'VALID' },
];

const searchResults = [
  {
    title: 'Acme Corp: about us',
    url: 'https://acme.com/about',
    description: 'Acme Corp builds rockets in Arizona, 500 employees.',
  },
  {
    title: 'Acme Corp raises Series C',
    url: 'https://news.example/acme-series-c',
    description: 'Funding round led by Road Runner Ventures.',
  },
];

const answer = {
  summary: 'Senior engineering people in the platform team.',
  traits: [
    { trait: 'Engineering leadership', evidence: 'VP Engineering, Engineering Manager', leadCount: 2 },
    { trait: 'Platform team', evidence: 'customFields.team = Platform', leadCount: 99 },
  ],
  companyFacts: [
    { fact: 'Builds rockets in Arizona', sourceUrl: 'https://acme.com/about' },
    { fact: 'Raised a Series C', sourceUrl: 'https://news.example/acme-series-c' },
    { fact: 'Was founded in 1949', sourceUrl: 'https://invented.example/acme-history' },
  ],
};

/** The answer the model gives over the wire, with token counts. */
const reply = () => ({ json: answer, usage: { prompt_tokens: 120, completion_tokens: 30 } });

describe('configuration checks', () => {
  let search: SearchStub;
  before(async () => (search = await startSearchStub()));
  after(async () => search?.close());

  test('without SEARCH_API_KEY: 503 SEARCH_NOT_CONFIGURED, and the model is never asked', async () => {
    const { ctx, ai, close } = await createAiContext();
    try {
      ai.respond(reply);
      const user = await ctx.signup();
      await seedLeads(ctx.deps.db, user.id, acmeLeads);
      const res = await ctx.call(user, 'GET', url(ACME));
      assertError(res, 503, 'SEARCH_NOT_CONFIGURED');
      assert.match(res.json().error.message, /SEARCH_API_KEY/);
      assert.equal(ai.requests.length, 0);
    } finally {
      await close();
    }
  });

  test('without an AI provider: 503 AI_NOT_CONFIGURED, and nothing is searched', async () => {
    const ctx = await createTestContext({
      workers: false,
      env: { SEARCH_API_URL: search.url, SEARCH_API_KEY: search.key },
    });
    try {
      const user = await ctx.signup();
      await seedLeads(ctx.deps.db, user.id, acmeLeads);
      assertError(await ctx.call(user, 'GET', url(ACME)), 503, 'AI_NOT_CONFIGURED');
      assert.equal(search.requests.length, 0);
    } finally {
      await ctx.close();
    }
  });
});

describe('answers scripted on the loopback OpenAI-compatible server, with the search stub', () => {
  let ctx: TestContext;
  let alice: TestUser;
  let bob: TestUser;
  let ai: OpenAiStub;
  let search: SearchStub;
  let close: () => Promise<void>;
  before(async () => {
    ({ ctx, alice, bob, ai, search, close } = await createAiTwoUserContext({ search: true }));
    ai.respond(reply);
    search.respond((q) => (q.includes('acme.com') ? searchResults : []));
    await seedLeads(ctx.deps.db, alice.id, acmeLeads);
    // A profile made from one of the leads: its data reaches the prompt too.
    const typeId = await seedProfileType(ctx.deps.db, alice.id, [{ name: 'seniority', type: 'string' }]);
    await seedProfiles(ctx.deps.db, alice.id, typeId, [
      {
        data: { seniority: 'Director-level' },
        lead: { email: 'dee@acme.com', company: 'Acme Corp', jobTitle: 'Director of Platform' },
      },
    ]);
  });
  after(async () => close?.());

  test('traits and facts; a fact citing a URL that search did not return is dropped', async () => {
    const res = await ctx.call(alice, 'GET', url(ACME));
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.equal(data.accountId, ACME);
    assert.equal(data.method, 'ai');
    assert.equal(data.model, 'stub-model');
    assert.equal(data.leadCount, 4);
    assert.equal(data.summary, answer.summary);
    assert.deepEqual(data.traits, [
      { trait: 'Engineering leadership', evidence: 'VP Engineering, Engineering Manager', leadCount: 2 },
      // A count above the account's lead count is capped.
      { trait: 'Platform team', evidence: 'customFields.team = Platform', leadCount: 4 },
    ]);
    assert.deepEqual(data.companyFacts, [
      { fact: 'Builds rockets in Arizona', sourceUrl: 'https://acme.com/about' },
      { fact: 'Raised a Series C', sourceUrl: 'https://news.example/acme-series-c' },
    ]);
    assert.deepEqual(data.sources, searchResults);

    const request = search.requests.at(-1)!;
    assert.equal(request.q, '"Acme Corp" acme.com');
    assert.equal(request.count, 5);
    const prompt = promptText(ai.requests.at(-1)!);
    for (const text of [
      'VP Engineering',
      'Staff Engineer',
      'Director of Platform',
      'Director-level',
      'Platform',
      'https://acme.com/about',
    ]) {
      assert.ok(prompt.includes(text), `prompt mentions ${text}`);
    }
    assert.ok(!prompt.includes('ann@acme.com'), 'no email addresses are sent to the model');
    const usage = await ctx.deps.db
      .select()
      .from(aiUsage)
      .where(and(eq(aiUsage.userId, alice.id), eq(aiUsage.feature, 'accounts.commonalities')));
    assert.deepEqual(
      usage.map((u) => u.totalTokens),
      [150],
    );
  });

  test("another user's account, an unknown or malformed id: 404, and nothing is searched or asked", async () => {
    const searches = search.requests.length;
    const calls = ai.requests.length;
    assertError(await ctx.call(bob, 'GET', url(ACME)), 404, 'NOT_FOUND');
    assertError(await ctx.call(alice, 'GET', url(accountIdOf('domain:nowhere.example'))), 404, 'NOT_FOUND');
    assertError(await ctx.call(alice, 'GET', url('bad!id')), 404, 'NOT_FOUND');
    // A key with NUL (PostgreSQL text cannot hold it) is not one of ours either.
    assertError(await ctx.call(alice, 'GET', url(accountIdOf('domain:acme.com\u0000'))), 404, 'NOT_FOUND');
    assert.equal(search.requests.length, searches);
    assert.equal(ai.requests.length, calls);
  });

  test('a failing search provider is a 502 SEARCH_PROVIDER_ERROR', async () => {
    search.fail(500);
    assertError(await ctx.call(alice, 'GET', url(ACME)), 502, 'SEARCH_PROVIDER_ERROR');
  });
});

describe('with the loopback OpenAI-compatible server', () => {
  let ctx: TestContext;
  let user: TestUser;
  let ai: OpenAiStub;
  let search: SearchStub;
  let close: () => Promise<void>;
  before(async () => {
    ({ ctx, ai, search, close } = await createAiContext({ apiKey: 'sk-accounts', search: true }));
    search.respond(() => searchResults);
    user = await ctx.signup();
    // Free-mail addresses: a company account, searched by name only.
    await seedLeads(ctx.deps.db, user.id, [
      {
        email: 'x@gmail.com',
        company: 'Umbrella Corporation',
        jobTitle: 'Head of Research',
        customFields: { lab: 'Raccoon City' },
      },
      { email: 'y@yahoo.com', company: 'umbrella corp.', jobTitle: 'Lab Director' },
    ]);
  });
  after(async () => close?.());

  const UMBRELLA = accountIdOf('company:umbrella');

  test('the prompt carries the leads and the search results; the answer is filtered; usage is recorded', async () => {
    ai.enqueue({
      json: {
        summary: 'Research leadership.',
        traits: [{ trait: 'Research roles', evidence: 'Head of Research, Lab Director', leadCount: 2 }],
        companyFacts: [
          // The same URL with the host in capitals: still a citation of that result, answered in its spelling.
          { fact: 'Based in Arizona', sourceUrl: 'HTTPS://ACME.COM/about' },
          { fact: 'Made up', sourceUrl: 'https://elsewhere.example/' },
        ],
      },
      usage: { prompt_tokens: 400, completion_tokens: 60 },
    });
    const res = await ctx.call(user, 'GET', url(UMBRELLA));
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.equal(data.model, 'stub-model');
    assert.equal(data.leadCount, 2);
    assert.deepEqual(data.traits, [
      { trait: 'Research roles', evidence: 'Head of Research, Lab Director', leadCount: 2 },
    ]);
    assert.deepEqual(data.companyFacts, [{ fact: 'Based in Arizona', sourceUrl: 'https://acme.com/about' }]);
    assert.equal(search.requests.at(-1)!.q, '"Umbrella Corporation"');

    const [request] = ai.requests;
    assert.equal(request!.body.response_format.type, 'json_schema');
    const prompt = promptText(request!);
    for (const text of ['Head of Research', 'Lab Director', 'Raccoon City', 'https://news.example/acme-series-c'])
      assert.ok(prompt.includes(text), `prompt mentions ${text}`);
    const usage = await ctx.deps.db
      .select()
      .from(aiUsage)
      .where(and(eq(aiUsage.userId, user.id), eq(aiUsage.feature, 'accounts.commonalities')));
    assert.deepEqual(
      usage.map((u) => [u.model, u.inputTokens, u.outputTokens, u.totalTokens]),
      [['stub-model', 400, 60, 460]],
    );
  });

  test('a failing AI provider is a 502 AI_PROVIDER_ERROR', async () => {
    ai.reset();
    ai.enqueue({ status: 500, message: 'upstream exploded' });
    const res = await ctx.call(user, 'GET', url(UMBRELLA));
    assertError(res, 502, 'AI_PROVIDER_ERROR');
    assert.ok(!res.body.includes('upstream exploded'));
  });

  test('an answer that does not match the structure is a 502, not a 500', async () => {
    ai.reset();
    ai.enqueue({ json: { summary: 'no lists' } });
    assertError(await ctx.call(user, 'GET', url(UMBRELLA)), 502, 'AI_PROVIDER_ERROR');
  });
});
