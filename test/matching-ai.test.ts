import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createMatchingRecovery } from '../src/modules/matching/matching.recovery.ts';
import { matchingRepository } from '../src/modules/matching/matching.repository.ts';
import { createMatchingRunner } from '../src/modules/matching/matching.runner.ts';
import { parseCsv } from '../src/shared/csv.ts';
import { newId } from '../src/shared/ids.ts';
import { createAiContext, createAiTwoUserContext } from './helpers/ai-context.ts';
import { eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError } from './helpers/assertions.ts';
import { type OpenAiStub, promptText, requestedSchema } from './helpers/openai-stub.ts';
import { seedProfiles, seedProfileType } from './helpers/seed.ts';

const FIELDS = [
  { name: 'name', type: 'string' as const },
  { name: 'state', type: 'string' as const },
];
const PROFILES = [
  { data: { name: 'Alpha', state: 'CA' }, lead: { firstName: 'Ada', company: 'Acme' } },
  { data: { name: 'Beta', state: 'NY' } },
  { data: { name: 'Gamma', state: 'CA' } },
  { data: { name: 'Boom', state: 'TX' } },
];

/** The answer a model gives for a prompt: CA profiles match (90, or 55 for Gamma), others not (10). */
function verdictFor(prompt: string) {
  if (/"name":"Gamma"/.test(prompt)) return { match: true, score: 55, reasoning: 'In CA, but small.' };
  if (/"state":"CA"/.test(prompt)) return { match: true, score: 90, reasoning: 'Based in CA.' };
  return { match: false, score: 10, reasoning: 'Not in CA.' };
}

async function waitForRun(ctx: TestContext, user: TestUser, ruleId: string) {
  return eventually(async () => {
    const run = (await ctx.call(user, 'GET', `/api/matching/rules/${ruleId}`)).json().data.rule.lastRun;
    return run && ['COMPLETED', 'FAILED'].includes(run.status) ? run : undefined;
  }, 30_000);
}

const byName = (results: any[]): Record<string, any> =>
  Object.fromEntries(results.map((r) => [r.profile.data.name, r]));

describe('AI rules (answers scripted on the loopback OpenAI-compatible server)', () => {
  let ctx: TestContext;
  let alice: TestUser;
  let bob: TestUser;
  let typeId: string;
  let close: () => Promise<void>;
  const prompts: string[] = [];

  before(async () => {
    let ai: OpenAiStub;
    ({ ctx, alice, bob, ai, close } = await createAiTwoUserContext({ workers: true }));
    ai.respond((request) => {
      const text = promptText(request);
      prompts.push(text);
      if (text.includes('Boom')) return { status: 500, message: 'model exploded' };
      return { json: verdictFor(text), usage: { prompt_tokens: 20, completion_tokens: 5 } };
    });
    typeId = await seedProfileType(ctx.deps.db, alice.id, FIELDS, 'AI type');
    await seedProfiles(ctx.deps.db, alice.id, typeId, PROFILES);
  });
  after(() => close?.());

  test(
    'execute: model answers become matchScore/aiReasoning; a failing profile is counted in failed, the run ' +
      'completes',
    async () => {
      const created = await ctx.call(alice, 'POST', '/api/matching/rules', {
        name: 'CA lenders',
        profileTypeId: typeId,
        type: 'AI',
        aiPrompt: 'Lenders based in California',
        threshold: 60,
      });
      assert.equal(created.statusCode, 201, created.body);
      const rule = created.json().data.rule;
      const res = await ctx.call(alice, 'POST', '/api/matching/execute', { ruleId: rule.id });
      assert.equal(res.statusCode, 202, res.body);
      const run = await waitForRun(ctx, alice, rule.id);
      assert.equal(run.status, 'COMPLETED', JSON.stringify(run));
      assert.deepEqual([run.total, run.processed, run.matched, run.failed, run.progress], [4, 4, 1, 1, 100]);
      assert.ok(
        prompts.some((p) => p.includes('Lenders based in California') && p.includes('Acme')),
        'the prompt carries the rule prompt, profile and lead',
      );

      const data = (await ctx.call(alice, 'GET', `/api/matching/results?ruleId=${rule.id}`)).json().data;
      const r = byName(data.results);
      assert.deepEqual([r.Alpha.matched, r.Alpha.matchScore, r.Alpha.aiReasoning], [true, 90, 'Based in CA.']);
      assert.deepEqual(r.Alpha.details, { ai: { match: true, score: 90, reasoning: 'Based in CA.' } });
      assert.deepEqual([r.Gamma.matched, r.Gamma.matchScore], [false, 55], 'match but under the threshold');
      assert.deepEqual([r.Beta.matched, r.Beta.matchScore], [false, 10]);
      assert.deepEqual([r.Boom.matched, r.Boom.matchScore, r.Boom.aiReasoning], [false, null, null]);
      assert.match(r.Boom.error, /AI provider/);
      assert.equal(data.results[data.results.length - 1].profile.data.name, 'Boom', 'no score sorts last');

      // Threshold change re-derives matched from the stored answers.
      await ctx.call(alice, 'PATCH', `/api/matching/rules/${rule.id}`, { threshold: 50 });
      const matched = (await ctx.call(alice, 'GET', `/api/matching/results?ruleId=${rule.id}&matched=true`)).json().data
        .results;
      assert.deepEqual(matched.map((x: { profile: { data: { name: string } } }) => x.profile.data.name).sort(), [
        'Alpha',
        'Gamma',
      ]);

      const csv = parseCsv((await ctx.call(alice, 'GET', `/api/profiles/export?ruleId=${rule.id}`)).body);
      const reasoning = csv[0]!.indexOf('aiReasoning');
      assert.deepEqual(
        csv
          .slice(1)
          .map((row) => row[reasoning])
          .sort(),
        ['Based in CA.', 'In CA, but small.'],
      );

      const usage = await ctx.deps.database.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ai_usage WHERE user_id = $1 AND feature = 'matching.ai'`,
        [alice.id],
      );
      assert.ok(Number(usage[0]!.n) >= 3);
      assertError(await ctx.call(bob, 'GET', `/api/matching/results?ruleId=${rule.id}`), 404, 'NOT_FOUND');
    },
  );

  test('preview of an unsaved AI rule: per-profile answers, nothing stored; sample capped at 20', async () => {
    const before = await ctx.deps.database.query<{ n: number }>('SELECT count(*)::int AS n FROM matching_results');
    const res = await ctx.call(alice, 'POST', '/api/matching/preview', {
      rule: { profileTypeId: typeId, type: 'AI', aiPrompt: 'CA please' },
      sampleSize: 4,
    });
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.equal(data.type, 'AI');
    const r = byName(data.results);
    assert.deepEqual(
      [r.Alpha.matched, r.Gamma.matched, r.Beta.matched],
      [true, true, false],
      'no threshold: the model decides',
    );
    assert.match(r.Boom.error, /AI provider/);
    assert.deepEqual(data.summary, { evaluated: 4, matched: 2 });
    const after = await ctx.deps.database.query<{ n: number }>('SELECT count(*)::int AS n FROM matching_results');
    assert.equal(Number(after[0]!.n), Number(before[0]!.n));
    const tooMany = await ctx.call(alice, 'POST', '/api/matching/preview', {
      rule: { profileTypeId: typeId, type: 'AI', aiPrompt: 'x' },
      sampleSize: 21,
    });
    assert.equal(tooMany.json().error.details[0].field, 'sampleSize');
  });
});

describe('AI rules through the loopback OpenAI-compatible server', () => {
  let stub: OpenAiStub;
  let ctx: TestContext;
  let user: TestUser;
  let typeId: string;
  let close: () => Promise<void>;

  before(async () => {
    ({
      ctx,
      ai: stub,
      close,
    } = await createAiContext({
      apiKey: 'sk-match',
      workers: true,
      env: { AI_CONCURRENCY: '3', AI_MAX_RETRIES: '2' },
    }));
    user = await ctx.signup();
    typeId = await seedProfileType(ctx.deps.db, user.id, FIELDS, 'Stub type');
    await seedProfiles(ctx.deps.db, user.id, typeId, [
      ...PROFILES.filter((p) => p.data.name !== 'Boom'),
      ...Array.from({ length: 9 }, (_, i) => ({ data: { name: `Extra ${i}`, state: i % 3 ? 'NY' : 'CA' } })),
    ]);
  });
  after(async () => close?.());

  test(
    'execute over HTTP: json_schema requests, bounded concurrency, 429 with Retry-After retried, results ' + 'stored',
    async () => {
      stub.reset();
      let first429 = true;
      stub.respond(async (req) => {
        const prompt = promptText(req);
        if (prompt.includes('"name":"Beta"') && first429) {
          first429 = false;
          return { status: 429, message: 'slow down', headers: { 'retry-after': '0' } };
        }
        return { json: verdictFor(prompt), delayMs: 40 };
      });
      const rule = (
        await ctx.call(user, 'POST', '/api/matching/rules', {
          name: 'stub',
          profileTypeId: typeId,
          type: 'AI',
          aiPrompt: 'California lenders',
        })
      ).json().data.rule;
      assert.equal((await ctx.call(user, 'POST', '/api/matching/execute', { ruleId: rule.id })).statusCode, 202);
      const run = await waitForRun(ctx, user, rule.id);
      assert.deepEqual([run.status, run.processed, run.failed, run.matched], ['COMPLETED', 12, 0, 5]);
      assert.equal(stub.requests.length, 13, 'one retry for the 429');
      assert.ok(stub.maxInFlight <= 3 && stub.maxInFlight >= 2, `max in flight ${stub.maxInFlight}`);
      const schema = requestedSchema(stub.requests[0]!);
      assert.deepEqual(Object.keys(schema.properties).sort(), ['match', 'reasoning', 'score']);
      assert.ok(promptText(stub.requests[0]!).includes('California lenders'));
      const results = (await ctx.call(user, 'GET', `/api/matching/results?ruleId=${rule.id}&minScore=50`)).json().data
        .results;
      assert.equal(results.length, 5);
      assert.ok(
        results.every(
          (r: { aiReasoning: string }) => r.aiReasoning === 'Based in CA.' || r.aiReasoning === 'In CA, but small.',
        ),
      );
    },
  );

  test(
    'a profile the provider keeps failing gets an error result after the retries; preview answers 502 when every ' +
      'call fails',
    async () => {
      stub.reset();
      stub.respond((req) =>
        promptText(req).includes('"name":"Alpha"')
          ? { status: 500, message: 'upstream down' }
          : { json: verdictFor(promptText(req)) },
      );
      const rule = (
        await ctx.call(user, 'POST', '/api/matching/rules', {
          name: 'flaky',
          profileTypeId: typeId,
          type: 'AI',
          aiPrompt: 'CA',
        })
      ).json().data.rule;
      await ctx.call(user, 'POST', '/api/matching/execute', { ruleId: rule.id });
      const run = await waitForRun(ctx, user, rule.id);
      assert.deepEqual([run.status, run.processed, run.failed], ['COMPLETED', 12, 1]);
      assert.equal(
        stub.requests.filter((r) => promptText(r).includes('"name":"Alpha"')).length,
        3,
        'first attempt + AI_MAX_RETRIES',
      );
      const failed = (await ctx.call(user, 'GET', `/api/matching/results?ruleId=${rule.id}`))
        .json()
        .data.results.find((r: { error: string | null }) => r.error);
      assert.equal(failed.profile.data.name, 'Alpha');
      assert.match(failed.error, /HTTP 500/);
      assert.ok(!failed.error.includes('sk-match'));

      stub.reset();
      stub.respond(() => ({ status: 400, message: 'bad request' }));
      assertError(
        await ctx.call(user, 'POST', '/api/matching/preview', { ruleId: rule.id, sampleSize: 2 }),
        502,
        'AI_PROVIDER_ERROR',
      );
    },
  );

  test('a re-delivered run resumes: profiles it already wrote are not sent to the model again', async () => {
    stub.reset();
    stub.respond((req) => ({ json: verdictFor(promptText(req)) }));
    const rule = (
      await ctx.call(user, 'POST', '/api/matching/rules', {
        name: 'resume',
        profileTypeId: typeId,
        type: 'AI',
        aiPrompt: 'CA',
      })
    ).json().data.rule;
    const profiles = await ctx.deps.database.query<{ id: string }>(
      'SELECT id FROM profiles WHERE profile_type_id = $1 ORDER BY id LIMIT 5',
      [typeId],
    );
    // A run that crashed after writing 5 results (as a worker killed mid-run leaves it).
    const runId = newId();
    await ctx.deps.database.query(
      `INSERT INTO matching_runs (id, user_id, rule_id, status, started_at, processed) ` +
        `VALUES ($1, $2, $3, 'RUNNING', now(), 5)`,
      [runId, user.id, rule.id],
    );
    for (const p of profiles) {
      await ctx.deps.database.query(
        `INSERT INTO matching_results (id, user_id, rule_id, run_id, profile_id, matched, match_score, ai_reasoning, ` +
          `details) VALUES ($1, $2, $3, $4, $5, false, 1, 'earlier', ` +
          `'{"match":false,"score":1,"reasoning":"earlier"}')`,
        [newId(), user.id, rule.id, runId, p.id],
      );
    }
    await createMatchingRunner(ctx.deps).run(runId);
    assert.equal(stub.requests.length, 7, 'only the 7 profiles not yet written');
    const run = (await ctx.call(user, 'GET', `/api/matching/rules/${rule.id}`)).json().data.rule.lastRun;
    assert.deepEqual([run.status, run.processed, run.total], ['COMPLETED', 12, 12]);
    const earlier = (await ctx.call(user, 'GET', `/api/matching/results?ruleId=${rule.id}&maxScore=1`)).json().data
      .results;
    assert.equal(earlier.length, 5);
  });

  const pendingRun = async (name: string) => {
    const rule = (
      await ctx.call(user, 'POST', '/api/matching/rules', { name, profileTypeId: typeId, type: 'AI', aiPrompt: 'CA' })
    ).json().data.rule;
    const runId = newId();
    await ctx.deps.database.query(
      `INSERT INTO matching_runs (id, user_id, rule_id, status) VALUES ($1, $2, $3, 'PENDING')`,
      [runId, user.id, rule.id],
    );
    return { rule, runId };
  };

  test(
    'the same run delivered twice at once is executed once (the run lease), and a fresh lease keeps a third ' +
      'delivery out',
    async () => {
      stub.reset();
      stub.respond((req) => ({ json: verdictFor(promptText(req)), delayMs: 30 }));
      const { rule, runId } = await pendingRun('twice');
      const runner = createMatchingRunner(ctx.deps);
      await Promise.all([runner.run(runId), runner.run(runId)]);
      assert.equal(stub.requests.length, 12, 'each profile sent to the model once');
      const run = (await ctx.call(user, 'GET', `/api/matching/rules/${rule.id}`)).json().data.rule.lastRun;
      assert.deepEqual([run.status, run.processed], ['COMPLETED', 12]);

      const held = await pendingRun('held elsewhere');
      await ctx.deps.database.query(
        `UPDATE matching_runs SET status = 'RUNNING', lease_until = now() + interval '1 minute' WHERE id = $1`,
        [held.runId],
      );
      stub.reset();
      await runner.run(held.runId);
      assert.equal(stub.requests.length, 0, 'another worker holds the run');
    },
  );

  test(
    'a worker that lost its lease is fenced: its writes, renewals and final status are refused; the new owner ' +
      'counts',
    async () => {
      const { rule, runId } = await pendingRun('fenced');
      const repo = matchingRepository(ctx.deps.db);
      const a = (await repo.claimRun(runId, 60_000))!;
      assert.equal(await repo.claimRun(runId, 60_000), undefined, 'held by a');
      await ctx.deps.database.query(
        `UPDATE matching_runs SET lease_until = now() - interval '1 second' WHERE id = $1`,
        [runId],
      );
      const b = (await repo.claimRun(runId, 60_000))!;
      const [profile] = await ctx.deps.database.query<{ id: string }>(
        'SELECT id FROM profiles WHERE profile_type_id = $1 ORDER BY id LIMIT 1',
        [typeId],
      );
      const result = () => ({
        id: newId(),
        userId: user.id,
        ruleId: rule.id,
        runId,
        profileId: profile!.id,
        matched: true,
        matchScore: 90,
        aiReasoning: 'x',
        details: null,
        error: null,
        createdAt: new Date(),
        updatedAt: new Date(),
      });
      assert.equal(await repo.writeResults(a.lease, [result()], new Date()), false);
      assert.equal(await repo.renewLease(a.lease, 60_000), false);
      assert.equal(await repo.updateLeasedRun(a.lease, { status: 'COMPLETED' }), false);
      const count = async () =>
        (
          await ctx.deps.database.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM matching_results WHERE rule_id = $1',
            [rule.id],
          )
        )[0]!.n;
      assert.equal(await count(), 0);
      assert.equal(await repo.writeResults(b.lease, [result()], new Date()), true);
      assert.equal(await count(), 1);
      const run = (await repo.findRun(runId))!;
      assert.deepEqual([run.status, run.processed], ['RUNNING', 1]);
    },
  );

  test('a running worker whose run is taken over stops without completing it or counting anything', async () => {
    stub.reset();
    stub.respond((req) => ({ json: verdictFor(promptText(req)), delayMs: 300 }));
    const { runId } = await pendingRun('taken over');
    const running = createMatchingRunner(ctx.deps).run(runId);
    await eventually(async () => stub.requests.length > 0);
    await ctx.deps.database.query(`UPDATE matching_runs SET lease_owner = 'another worker' WHERE id = $1`, [runId]);
    await running;
    const run = (await matchingRepository(ctx.deps.db).findRun(runId))!;
    assert.deepEqual([run.status, run.processed, run.leaseOwner], ['RUNNING', 0, 'another worker']);
  });

  test('a run whose worker died (lease ran out) is sent again by the recovery sweep and completes', async () => {
    stub.reset();
    stub.respond((req) => ({ json: verdictFor(promptText(req)) }));
    const { rule, runId } = await pendingRun('orphaned');
    await ctx.deps.database.query(
      `UPDATE matching_runs SET status = 'RUNNING', started_at = now(), lease_until = ` +
        `now() - interval '1 second' WHERE id = $1`,
      [runId],
    );
    const resent = await createMatchingRecovery(ctx.deps).sweep();
    assert.deepEqual(resent, [runId]);
    assert.deepEqual(await createMatchingRecovery(ctx.deps).sweep(), [], 'sent once');
    const run = await waitForRun(ctx, user, rule.id);
    assert.deepEqual([run.status, run.processed], ['COMPLETED', 12]);
  });

  test(
    'a rule deleted mid-run leaves no results behind (writes hold the run; the delete trigger removes ' + 'them)',
    async () => {
      stub.reset();
      stub.respond((req) => ({ json: verdictFor(promptText(req)), delayMs: 400 }));
      const rule = (
        await ctx.call(user, 'POST', '/api/matching/rules', {
          name: 'deleted mid-run',
          profileTypeId: typeId,
          type: 'AI',
          aiPrompt: 'CA',
        })
      ).json().data.rule;
      assert.equal((await ctx.call(user, 'POST', '/api/matching/execute', { ruleId: rule.id })).statusCode, 202);
      await eventually(async () => stub.requests.length > 0);
      assert.equal((await ctx.call(user, 'DELETE', `/api/matching/rules/${rule.id}`)).statusCode, 200);
      // Let every in-flight answer arrive and every batch try to write.
      await eventually(async () => stub.inFlight === 0 && stub.requests.length === 12, 20_000);
      await new Promise((r) => setTimeout(r, 1000));
      const left = await ctx.deps.database.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM matching_results WHERE rule_id = $1',
        [rule.id],
      );
      assert.equal(left[0]!.n, 0);
    },
  );
});
