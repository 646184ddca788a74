import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { and, eq } from 'drizzle-orm';
import pino from 'pino';
import { z } from 'zod';
import type { Config } from '../src/config.ts';
import { aiUsage } from '../src/db/schema/index.ts';
import { createAiService } from '../src/shared/ai/ai.service.ts';
import { createSearchProvider } from '../src/shared/ai/search.ts';
import { AppError } from '../src/shared/errors.ts';
import { createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { type OpenAiStub, promptText, requestedSchema, startOpenAiStub } from './helpers/openai-stub.ts';
import { type SearchStub, startSearchStub } from './helpers/search-stub.ts';

let ctx: TestContext;
let user: TestUser;
let stub: OpenAiStub;
let searchStub: SearchStub;
const silent = pino({ level: 'silent' });
const SECRET = 'sk-test-0123456789abcdef';

before(async () => {
  ctx = await createTestContext({ workers: false });
  user = await ctx.signup();
  stub = await startOpenAiStub({ apiKey: SECRET });
  searchStub = await startSearchStub();
});
after(async () => {
  await stub?.close();
  await searchStub?.close();
  await ctx?.close();
});

const person = z.object({ name: z.string(), age: z.number() });

/** The next answer of the stub: `text` as the assistant's content, with the given token counts. */
function answerWith(text: string, usage = { input: 11, output: 7 }) {
  stub.reset();
  stub.enqueue({ content: text, usage: { prompt_tokens: usage.input, completion_tokens: usage.output } });
}

const service = (config: Partial<Config>, logger = silent) =>
  createAiService({ config: { ...ctx.config, ...config }, db: ctx.deps.db, logger }, { retryBaseDelayMs: 20 });

const realClient = (config: Partial<Config> = {}, logger = silent) =>
  service({ AI_BASE_URL: stub.baseURL, AI_MODEL: 'stub-model', AI_API_KEY: SECRET, ...config }, logger);

const usageRows = (feature: string) =>
  ctx.deps.db
    .select()
    .from(aiUsage)
    .where(and(eq(aiUsage.userId, user.id), eq(aiUsage.feature, feature)));

async function rejectsWith(promise: Promise<unknown>, code: string): Promise<AppError> {
  const error = await promise.then(
    () => assert.fail(`expected ${code}`),
    (e: unknown) => e,
  );
  assert.ok(error instanceof AppError, `expected an AppError, got ${String(error)}`);
  assert.equal(error.code, code, error.message);
  return error;
}

describe('AI layer: what it does with the answers (scripted on the stub)', () => {
  test('structured output validated by the schema; usage recorded per user and feature', async () => {
    answerWith('{"name":"Ada","age":36}', { input: 11, output: 7 });
    const ai = realClient();
    assert.equal(ai.configured, true);
    assert.equal(ai.modelId, 'stub-model');
    const answer = await ai.generateObject({ userId: user.id, feature: 'test.mock', schema: person, prompt: 'Who?' });
    assert.deepEqual(answer, { name: 'Ada', age: 36 });
    const rows = await usageRows('test.mock');
    assert.equal(rows.length, 1);
    assert.deepEqual(
      [rows[0]!.model, rows[0]!.inputTokens, rows[0]!.outputTokens, rows[0]!.totalTokens],
      ['stub-model', 11, 7, 18],
    );
  });

  test('an answer that fails the schema is a 502 AI_PROVIDER_ERROR, and its tokens are still recorded', async () => {
    answerWith('{"name":"Ada","age":"old"}', { input: 5, output: 3 });
    const ai = realClient();
    const error = await rejectsWith(
      ai.generateObject({ userId: user.id, feature: 'test.invalid', schema: person, prompt: 'Who?' }),
      'AI_PROVIDER_ERROR',
    );
    assert.equal(error.status, 502);
    assert.match(error.message, /did not match the expected structure/);
    const rows = await usageRows('test.invalid');
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.totalTokens, 8);
  });

  test('NUL is stripped from every string of the answer, however deep (PostgreSQL cannot store it)', async () => {
    const nested = z.object({
      name: z.string(),
      tags: z.array(z.string()),
      inner: z.object({ note: z.string().nullable(), n: z.number() }),
      extra: z.record(z.string(), z.string()),
    });
    const text = JSON.stringify({
      name: 'A\u0000da',
      tags: ['x\u0000', '\u0000\u0000y'],
      inner: { note: 'n\u0000o', n: 1 },
      extra: { 'k\u0000ey': 'v\u0000' },
    });
    assert.ok(text.includes('\\u0000'));
    answerWith(text);
    const ai = realClient();
    const answer = await ai.generateObject({ userId: user.id, feature: 'test.nul', schema: nested, prompt: 'Who?' });
    assert.deepEqual(answer, { name: 'Ada', tags: ['x', 'y'], inner: { note: 'no', n: 1 }, extra: { key: 'v' } });
  });

  test('AI_CONCURRENCY bounds calls in flight; limit() shares the bound', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const gates: Array<() => void> = [];
    stub.reset();
    stub.respond(async () => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise<void>((resolve) => gates.push(resolve));
      inFlight--;
      return { json: { name: 'x', age: 1 } };
    });
    const ai = realClient({ AI_CONCURRENCY: 2 });
    const calls = Array.from({ length: 6 }, () =>
      ai.generateObject({ userId: user.id, feature: 'test.concurrency', schema: person, prompt: 'p' }),
    );
    await eventually(async () => gates.length === 2);
    // Let every other call get as far as it can: none may pass the bound.
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    assert.equal(inFlight, 2);
    // A limit() task waits for a slot too.
    let limitedRan = false;
    const limited = ai.limit(async () => {
      limitedRan = true;
      assert.ok(inFlight <= 1, 'limit() ran while both slots were taken');
    });
    let released = 0;
    while (released < 6) {
      await eventually(async () => gates.length > 0);
      gates.shift()!();
      released++;
    }
    const answers = await Promise.all(calls);
    await limited;
    assert.equal(answers.length, 6);
    assert.equal(maxInFlight, 2);
    assert.equal(limitedRan, true);
  });

  test('unconfigured: configured=false, generateObject and model() throw AI_NOT_CONFIGURED (503)', async () => {
    const ai = service({ AI_BASE_URL: undefined, AI_MODEL: undefined });
    assert.equal(ai.configured, false);
    const error = await rejectsWith(
      ai.generateObject({ userId: user.id, feature: 'x', schema: person, prompt: 'p' }),
      'AI_NOT_CONFIGURED',
    );
    assert.equal(error.status, 503);
    assert.throws(
      () => ai.model(),
      (e: unknown) => e instanceof AppError && e.code === 'AI_NOT_CONFIGURED',
    );
  });

  test('recordUsage stores counts given by other callers (streaming chat)', async () => {
    const ai = realClient();
    await ai.recordUsage(user.id, 'test.direct', { inputTokens: 100, outputTokens: 50, totalTokens: 150 });
    await ai.recordUsage(user.id, 'test.direct', { inputTokens: 4 });
    const rows = (await usageRows('test.direct')).sort((a, b) => a.totalTokens - b.totalTokens);
    assert.deepEqual(
      rows.map((r) => [r.inputTokens, r.outputTokens, r.totalTokens]),
      [
        [4, 0, 4],
        [100, 50, 150],
      ],
    );
  });
});

describe('AI layer against the loopback OpenAI-compatible stub', () => {
  test('real client: json_schema request with the key, parsed answer, provider usage recorded', async () => {
    stub.reset();
    stub.enqueue({ json: { name: 'Grace', age: 85 }, usage: { prompt_tokens: 42, completion_tokens: 9 } });
    const ai = realClient();
    const answer = await ai.generateObject({
      userId: user.id,
      feature: 'test.real',
      schema: person,
      system: 'Be exact.',
      prompt: 'Who wrote COBOL?',
    });
    assert.deepEqual(answer, { name: 'Grace', age: 85 });
    const [request] = stub.requests;
    assert.equal(request!.headers.authorization, `Bearer ${SECRET}`);
    assert.equal(request!.body.model, 'stub-model');
    assert.equal(request!.body.response_format.type, 'json_schema');
    assert.deepEqual(Object.keys(requestedSchema(request!).properties), ['name', 'age']);
    assert.match(promptText(request!), /Be exact\.[\s\S]*Who wrote COBOL\?/);
    const rows = await usageRows('test.real');
    assert.deepEqual(
      rows.map((r) => [r.model, r.inputTokens, r.outputTokens, r.totalTokens]),
      [['stub-model', 42, 9, 51]],
    );
  });

  test('HTTP 500 is retried (AI_MAX_RETRIES) and then succeeds', async () => {
    stub.reset();
    stub.enqueue({ status: 500 }, { status: 500 }, { json: { name: 'ok', age: 1 } });
    const answer = await realClient({ AI_MAX_RETRIES: 2 }).generateObject({
      userId: user.id,
      feature: 'test.retry',
      schema: person,
      prompt: 'p',
    });
    assert.deepEqual(answer, { name: 'ok', age: 1 });
    assert.equal(stub.requests.length, 3);
  });

  test('429 with Retry-After is retried', async () => {
    stub.reset();
    stub.enqueue({ status: 429, headers: { 'retry-after': '0' } }, { json: { name: 'later', age: 2 } });
    const answer = await realClient({ AI_MAX_RETRIES: 1 }).generateObject({
      userId: user.id,
      feature: 'test.429',
      schema: person,
      prompt: 'p',
    });
    assert.equal(answer.name, 'later');
    assert.equal(stub.requests.length, 2);
  });

  test('failures beyond the retries: 502 AI_PROVIDER_ERROR naming the status and attempts', async () => {
    stub.reset();
    stub.respond(() => ({ status: 503 }));
    const error = await rejectsWith(
      realClient({ AI_MAX_RETRIES: 1 }).generateObject({
        userId: user.id,
        feature: 'test.fail',
        schema: person,
        prompt: 'p',
      }),
      'AI_PROVIDER_ERROR',
    );
    assert.equal(error.status, 502);
    assert.match(error.message, /HTTP 503 after 2 attempts/);
    assert.equal(stub.requests.length, 2);
  });

  test('a 400 from the provider is not retried', async () => {
    stub.reset();
    stub.respond(() => ({ status: 400, message: 'bad request' }));
    await rejectsWith(
      realClient({ AI_MAX_RETRIES: 3 }).generateObject({
        userId: user.id,
        feature: 'test.400',
        schema: person,
        prompt: 'p',
      }),
      'AI_PROVIDER_ERROR',
    );
    assert.equal(stub.requests.length, 1);
  });

  test('AI_TIMEOUT_MS ends a slow call with AI_PROVIDER_ERROR (not retried)', async () => {
    stub.reset();
    stub.respond(() => ({ json: { name: 'slow', age: 1 }, delayMs: 30_000 }));
    const error = await rejectsWith(
      realClient({ AI_TIMEOUT_MS: 1500, AI_MAX_RETRIES: 2 }).generateObject({
        userId: user.id,
        feature: 'test.timeout',
        schema: person,
        prompt: 'p',
      }),
      'AI_PROVIDER_ERROR',
    );
    assert.match(error.message, /did not answer within 1500 ms/);
    assert.equal(stub.requests.length, 1);
  });

  test("the caller's signal cancels a call: its reason passes through, no retry", async () => {
    stub.reset();
    stub.respond(() => ({ json: { name: 'late', age: 1 }, delayMs: 5_000 }));
    const controller = new AbortController();
    const call = realClient({ AI_MAX_RETRIES: 2 }).generateObject({
      userId: user.id,
      feature: 'test.abort',
      schema: person,
      prompt: 'p',
      signal: controller.signal,
    });
    await eventually(async () => stub.requests.length === 1);
    controller.abort(new Error('client went away'));
    await assert.rejects(call, /client went away/);
    assert.equal(stub.requests.length, 1);
  });

  test('a wrong key: the error and the logs name no secret', async () => {
    stub.reset();
    const lines: string[] = [];
    const logger = pino(
      { level: 'trace' },
      new Writable({
        write: (chunk, _enc, done) => {
          lines.push(String(chunk));
          done();
        },
      }),
    );
    const wrong = 'sk-wrong-secret-value-42';
    stub.respond((request) => ({
      status: 401,
      message: `Incorrect API key provided: ${String(request.headers.authorization).slice(7)}`,
    }));
    const ai = service({ AI_BASE_URL: stub.baseURL, AI_MODEL: 'stub-model', AI_API_KEY: wrong }, logger);
    const error = await rejectsWith(
      ai.generateObject({ userId: user.id, feature: 'test.secret', schema: person, prompt: 'p' }),
      'AI_PROVIDER_ERROR',
    );
    assert.match(error.message, /HTTP 401/);
    assert.ok(!error.message.includes(wrong));
    assert.ok(lines.length > 0, 'the failure is logged');
    assert.ok(!lines.join('').includes(wrong), 'a log line holds the key');
  });

  test('model() drives tool calls and SSE streaming through the stub, with usage', async () => {
    stub.reset();
    stub.enqueue(
      { toolCalls: [{ name: 'lookup', arguments: { city: 'Austin' } }] },
      { content: 'Austin has 3 dentists.' },
    );
    const ai = realClient();
    const calls: string[] = [];
    const result = await generateText({
      model: ai.model(),
      prompt: 'How many dentists in Austin?',
      tools: {
        lookup: tool({
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => {
            calls.push(city);
            return { count: 3 };
          },
        }),
      },
      stopWhen: stepCountIs(3),
    });
    assert.deepEqual(calls, ['Austin']);
    assert.equal(result.text, 'Austin has 3 dentists.');
    assert.equal(stub.requests[0]!.body.tools[0].function.name, 'lookup');
    assert.equal(stub.requests[1]!.body.messages.at(-1).role, 'tool');

    stub.enqueue({ content: 'streamed answer', usage: { prompt_tokens: 10, completion_tokens: 4 } });
    const stream = streamText({ model: ai.model(), prompt: 'stream please' });
    let text = '';
    for await (const delta of stream.textStream) text += delta;
    assert.equal(text, 'streamed answer');
    assert.equal(stub.requests.at(-1)!.body.stream, true);
    const usage = await stream.totalUsage;
    await ai.recordUsage(user.id, 'test.stream', usage);
    const rows = await usageRows('test.stream');
    assert.deepEqual(
      rows.map((r) => [r.inputTokens, r.outputTokens]),
      [[10, 4]],
    );
  });
});

describe('search provider (Brave Search API format)', () => {
  test('unconfigured: configured=false and search throws SEARCH_NOT_CONFIGURED (503)', async () => {
    const search = createSearchProvider({ SEARCH_API_URL: searchStub.url, SEARCH_API_KEY: undefined });
    assert.equal(search.configured, false);
    const error = await rejectsWith(search.search('dentists'), 'SEARCH_NOT_CONFIGURED');
    assert.equal(error.status, 503);
  });

  test('sends q, count and the subscription token; answers plain-text results', async () => {
    searchStub.respond((q) => [
      {
        title: `<strong>${q}</strong> directory`,
        url: 'https://example.org/dir',
        description: 'All the <strong>dentists</strong> &amp; clinics',
      },
      { title: 'Not a URL', url: 'ftp://example.org/x' },
      { title: 'Second', url: 'https://example.net/list' },
    ]);
    const search = createSearchProvider({ SEARCH_API_URL: searchStub.url, SEARCH_API_KEY: searchStub.key });
    const results = await search.search('dentists austin', { count: 5 });
    assert.deepEqual(results, [
      { title: 'dentists austin directory', url: 'https://example.org/dir', description: 'All the dentists & clinics' },
      { title: 'Second', url: 'https://example.net/list', description: '' },
    ]);
    const last = searchStub.requests.at(-1)!;
    assert.equal(last.q, 'dentists austin');
    assert.equal(last.count, 5);
    assert.equal(last.headers.accept, 'application/json');
  });

  test('a refused key or a failing provider is SEARCH_PROVIDER_ERROR (502)', async () => {
    const wrongKey = createSearchProvider({ SEARCH_API_URL: searchStub.url, SEARCH_API_KEY: 'wrong' });
    const error = await rejectsWith(wrongKey.search('x y z'), 'SEARCH_PROVIDER_ERROR');
    assert.equal(error.status, 502);
    assert.match(error.message, /HTTP 401/);
    searchStub.fail(500);
    const search = createSearchProvider({ SEARCH_API_URL: searchStub.url, SEARCH_API_KEY: searchStub.key });
    assert.match((await rejectsWith(search.search('x y z'), 'SEARCH_PROVIDER_ERROR')).message, /HTTP 500/);
    const unreachable = createSearchProvider({
      SEARCH_API_URL: 'http://127.0.0.1:9/res/v1/web/search',
      SEARCH_API_KEY: 'k',
    });
    assert.match(
      (await rejectsWith(unreachable.search('x y z'), 'SEARCH_PROVIDER_ERROR')).message,
      /could not be reached/,
    );
  });
});
