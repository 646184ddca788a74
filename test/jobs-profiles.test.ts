import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { aiUsage, leads, profiles } from '../src/db/schema/index.ts';
import { DIRECTORY_SELECTORS, directoryLead, type FixtureSite, startFixtureSite } from './fixtures/sites.ts';
import { createAiContext } from './helpers/ai-context.ts';
import { createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { type OpenAiStub, promptText, requestedSchema } from './helpers/openai-stub.ts';

// A source linked to a profile type yields one profile per scraped item: fields from selectors named
// after the type's fields, and (with an AI provider) the rest from the page text.

let site: FixtureSite;
before(async () => {
  site = await startFixtureSite({ pages: 2, leadsPerPage: 3 });
});
after(async () => site?.close());

const personType = {
  name: 'Person',
  slug: 'person',
  fields: [
    { name: 'company', type: 'string' },
    { name: 'jobTitle', type: 'string' },
    { name: 'email', type: 'email' },
    { name: 'seniority', type: 'string', enum: ['junior', 'senior', 'executive'] },
  ],
};

async function runProfileJob(ctx: TestContext, user: TestUser) {
  const type = (await ctx.call(user, 'POST', '/api/profile-types', personType)).json().data;
  assert.ok(type?.id, 'profile type created');
  const source = (
    await ctx.call(user, 'POST', '/api/sources', {
      name: 'People',
      url: `${site.url}directory?page=1`,
      scrapeType: 'STATIC',
      selectors: DIRECTORY_SELECTORS,
      profileTypeId: type.id,
    })
  ).json().data.source;
  assert.equal(source.profileTypeId, type.id);
  await ctx.call(user, 'POST', `/api/sources/${source.id}/activate`);
  const job = (await ctx.call(user, 'POST', '/api/jobs', { name: 'Profiles', sourceId: source.id })).json().data.job;
  const done = await eventually(async () => {
    const j = (await ctx.call(user, 'GET', `/api/jobs/${job.id}`)).json().data.job;
    return j.status === 'COMPLETED' || j.status === 'FAILED' ? j : undefined;
  }, 30_000);
  assert.equal(done.status, 'COMPLETED', done.error);
  return { type, source, job: done };
}

describe('profile extraction without AI', () => {
  let ctx: TestContext;
  before(async () => (ctx = await createTestContext()));
  after(async () => ctx?.close());

  test('one profile per lead, from the selectors named after the fields, recording source, job and lead', async () => {
    const user = await ctx.signup();
    const { type, source, job } = await runProfileJob(ctx, user);
    const rows = await ctx.deps.db.select().from(profiles).where(eq(profiles.jobId, job.id));
    assert.equal(rows.length, 6);
    const lead = directoryLead(2, 0);
    const [leadRow] = await ctx.deps.db.select().from(leads).where(eq(leads.email, lead.email));
    const profile = rows.find((p) => p.leadId === leadRow!.id)!;
    assert.ok(profile, 'the profile points at its lead');
    assert.deepEqual(profile.data, { company: lead.company, jobTitle: lead.jobTitle, email: lead.email });
    assert.equal(profile.profileTypeId, type.id);
    assert.equal(profile.sourceId, source.id);
    assert.equal(profile.sourceUrl, `${site.url}directory?page=2`);
    const listed = (await ctx.call(user, 'GET', `/api/profiles?profileTypeId=${type.id}&limit=100`)).json().data
      .profiles;
    assert.equal(listed.length, 6);
  });
});

describe('profile extraction with AI (the loopback OpenAI-compatible server)', () => {
  let ctx: TestContext;
  let ai: OpenAiStub;
  let close: () => Promise<void>;
  before(async () => {
    ({ ctx, ai, close } = await createAiContext({ apiKey: 'sk-profiles', workers: true }));
  });
  after(async () => close?.());

  test('the model fills only the fields the selectors did not; its usage is recorded for the user', async () => {
    ai.reset();
    ai.respond(() => ({
      json: { company: 'Made Up Inc', jobTitle: null, email: null, seniority: 'executive' },
      usage: { prompt_tokens: 120, completion_tokens: 30 },
    }));
    const user = await ctx.signup();
    const { job } = await runProfileJob(ctx, user);
    const rows = await ctx.deps.db.select().from(profiles).where(eq(profiles.jobId, job.id));
    assert.equal(rows.length, 6);
    for (const p of rows) {
      assert.equal(p.data.seniority, 'executive', 'filled by the model');
      assert.notEqual(p.data.company, 'Made Up Inc', 'a selector value is never overwritten by the model');
    }
    // One structured-output request per item, asking for the profile type's fields (strict: all keys, nullable).
    assert.equal(ai.requests.length, 6);
    for (const request of ai.requests) {
      assert.equal(request.headers.authorization, 'Bearer sk-profiles');
      assert.equal(request.body.response_format.type, 'json_schema');
      const schema = requestedSchema(request);
      assert.deepEqual(Object.keys(schema.properties), ['company', 'jobTitle', 'email', 'seniority']);
      assert.deepEqual([...schema.required].sort(), ['company', 'email', 'jobTitle', 'seniority']);
      assert.equal(schema.additionalProperties, false);
      assert.deepEqual(enumOf(schema.properties.seniority), ['junior', 'senior', 'executive']);
      assert.match(promptText(request), /Fields wanted: seniority\./);
    }
    const usage = await ctx.deps.db.select().from(aiUsage).where(eq(aiUsage.userId, user.id));
    assert.equal(usage.length, 6);
    assert.ok(usage.every((u) => u.feature === 'scraping.profile' && u.inputTokens === 120 && u.outputTokens === 30));
  });

  test('an answer outside the schema (a value not in the enum) fills nothing; profiles are still stored', async () => {
    ai.reset();
    ai.respond(() => ({ json: { company: null, jobTitle: null, email: null, seniority: 'ceo' } }));
    const user = await ctx.signup();
    const { job } = await runProfileJob(ctx, user);
    assert.equal(ai.requests.length, 6);
    const rows = await ctx.deps.db.select().from(profiles).where(eq(profiles.jobId, job.id));
    assert.equal(rows.length, 6);
    for (const p of rows) assert.equal(p.data.seniority, undefined, 'nothing taken from a refused answer');
  });
});

/** The allowed values of a nullable enum as zod emits it (`anyOf: [{enum}, {type: null}]` or `enum` itself). */
function enumOf(property: { enum?: unknown[]; anyOf?: Array<{ enum?: unknown[] }> }): unknown[] | undefined {
  return (property.enum ?? property.anyOf?.find((p) => p.enum)?.enum)?.filter((v) => v !== null);
}
