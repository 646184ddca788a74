import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { Agent, fetch } from 'undici';
import { chatMessages } from '../src/db/schema/index.ts';
import { isUuid } from '../src/shared/ids.ts';
import { createAiTwoUserContext } from './helpers/ai-context.ts';
import { eventually, type TestContext, type TestUser } from './helpers/app.ts';
import type { OpenAiStub } from './helpers/openai-stub.ts';
import { seedLeads } from './helpers/seed.ts';

let ctx: TestContext;
let alice: TestUser;
let stub: OpenAiStub;
let base: string;
let close: () => Promise<void>;
/** Our own client pool, destroyed before the app closes (a pooled socket would hold the server's close up). */
const agent = new Agent();

before(async () => {
  ({ ctx, alice, ai: stub, close } = await createAiTwoUserContext());
  base = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
});
after(async () => {
  await agent.destroy();
  await close?.();
});
beforeEach(() => stub.reset());

interface SseEvent {
  event: string;
  data: any;
}

/** Parses a whole `text/event-stream` body into its events (comments and `retry` skipped). */
function parseSse(text: string): SseEvent[] {
  return text
    .split('\n\n')
    .map((block) => block.split('\n'))
    .filter((lines) => lines.some((l) => l.startsWith('event: ')))
    .map((lines) => ({
      event: lines.find((l) => l.startsWith('event: '))!.slice(7),
      data: JSON.parse(
        lines
          .filter((l) => l.startsWith('data: '))
          .map((l) => l.slice(6))
          .join('\n'),
      ),
    }));
}

async function stream(path: string, body: unknown, signal?: AbortSignal) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { ...alice.headers, 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify(body),
    signal,
    dispatcher: agent,
  });
  return {
    res,
    events: res.headers.get('content-type')?.startsWith('text/event-stream') ? parseSse(await res.text()) : [],
  };
}

const newConversation = async () =>
  (await ctx.call(alice, 'POST', '/api/chat/conversations', {})).json().data.conversation.id as string;
const detail = async (id: string) => (await ctx.call(alice, 'GET', `/api/chat/conversations/${id}`)).json().data;
const names = (events: SseEvent[]) =>
  events.map((e) => e.event).filter((e, i, all) => e !== 'text-delta' || all[i - 1] !== 'text-delta');

const script = () =>
  stub.enqueue(
    { content: 'Let me look.', toolCalls: [{ id: 'call_s', name: 'searchLeads', arguments: { company: 'Streamco' } }] },
    { content: 'Lin Streamer (lin@streamco.example) is your contact at Streamco.' },
  );

describe('Server-Sent Events', () => {
  test('events arrive in order; the stored history is the same as a JSON turn', async () => {
    await seedLeads(ctx.deps.db, alice.id, [
      { firstName: 'Lin', lastName: 'Streamer', email: 'lin@streamco.example', company: 'Streamco' },
    ]);
    const id = await newConversation();
    script();
    const { res, events } = await stream(`/api/chat/conversations/${id}/messages`, { content: 'Who is at Streamco?' });
    assert.equal(res.status, 200);
    assert.deepEqual(names(events), ['text-delta', 'tool-call', 'tool-result', 'text-delta', 'done']);
    const call = events.find((e) => e.event === 'tool-call')!.data;
    assert.deepEqual(
      { ...call, toolCallId: undefined },
      { toolCallId: undefined, toolName: 'searchLeads', input: { company: 'Streamco', limit: 20 } },
    );
    // The provider said call_s; the stream, the stored history and the replay use the server's id.
    assert.ok(isUuid(call.toolCallId), call.toolCallId);
    const result = events.find((e) => e.event === 'tool-result')!.data;
    assert.equal(result.toolCallId, call.toolCallId);
    const replayed = stub.requests[1]!.body.messages as Array<{
      role: string;
      tool_calls?: Array<{ id: string }>;
      tool_call_id?: string;
    }>;
    assert.equal(replayed.find((m) => m.role === 'assistant')!.tool_calls![0]!.id, call.toolCallId);
    assert.equal(replayed.find((m) => m.role === 'tool')!.tool_call_id, call.toolCallId);
    assert.equal(result.output.leads[0].email, 'lin@streamco.example');
    const deltas = events.filter((e) => e.event === 'text-delta').map((e) => e.data.delta);
    assert.ok(deltas.length > 2, 'the text arrives in pieces');
    assert.equal(deltas.join(''), 'Let me look.Lin Streamer (lin@streamco.example) is your contact at Streamco.');
    assert.equal(stub.requests[0]!.body.stream, true);

    const streamed = await detail(id);
    const done = events.at(-1)!.data;
    assert.equal(done.messageId, streamed.messages[1].id);
    assert.equal(streamed.messages[1].toolCalls[0].toolCallId, call.toolCallId);

    // The same script as JSON gives the same stored conversation.
    const other = await newConversation();
    script();
    const json = await ctx.call(alice, 'POST', `/api/chat/conversations/${other}/messages`, {
      content: 'Who is at Streamco?',
    });
    assert.equal(json.statusCode, 200, json.body);
    const plain = await detail(other);
    const shape = (d: any) =>
      d.messages.map((m: any) => ({
        role: m.role,
        text: m.text,
        calls: m.toolCalls.map((c: any) => ({ n: c.toolName, s: c.status, i: c.input, r: c.result })),
      }));
    assert.deepEqual(shape(streamed), shape(plain));
    assert.equal(
      streamed.messages[1].text,
      'Let me look.\n\nLin Streamer (lin@streamco.example) is your contact at Streamco.',
    );
  });

  test('a write call streams approval-required; approving streams the outcome and the reply', async () => {
    const id = await newConversation();
    stub.enqueue({
      toolCalls: [
        {
          id: 'call_w',
          name: 'createSource',
          arguments: { name: 'Streamed', url: 'https://example.com/s', scrapeType: 'STATIC', selectors: {} },
        },
      ],
    });
    const first = await stream(`/api/chat/conversations/${id}/messages`, { content: 'Create a source Streamed' });
    assert.deepEqual(names(first.events), ['tool-call', 'approval-required', 'done']);
    const approval = first.events.find((e) => e.event === 'approval-required')!.data;
    assert.equal(approval.summary, "Create STATIC source 'Streamed' for https://example.com/s");
    assert.equal((await detail(id)).pendingApprovals[0].id, approval.approvalId);

    stub.enqueue({ content: 'Created the source Streamed.' });
    const second = await stream(`/api/chat/conversations/${id}/approvals`, {
      approvalId: approval.approvalId,
      approved: true,
    });
    assert.deepEqual(names(second.events), ['tool-result', 'text-delta', 'done']);
    assert.equal(second.events[0]!.data.output.name, 'Streamed');
    const sources = (await ctx.call(alice, 'GET', '/api/sources')).json().data.sources;
    assert.ok(sources.some((s: { name: string }) => s.name === 'Streamed'));
    const after = await detail(id);
    assert.equal(after.messages[1].toolCalls[0].status, 'EXECUTED');
    assert.equal(second.events.at(-1)!.data.messageId, after.messages[1].id);
  });

  test('streamed write calls sharing an id in one step: two approvals, each with its own call id', async () => {
    const id = await newConversation();
    const input = (name: string) => ({ name, url: `https://example.com/${name}`, scrapeType: 'STATIC', selectors: {} });
    stub.enqueue({
      toolCalls: [
        { id: 'dup', name: 'createSource', arguments: input('twin-a') },
        { id: 'dup', name: 'createSource', arguments: input('twin-b') },
      ],
    });
    const { events } = await stream(`/api/chat/conversations/${id}/messages`, { content: 'Create twin-a and twin-b' });
    assert.deepEqual(names(events), ['tool-call', 'tool-call', 'approval-required', 'approval-required', 'done']);
    const calls = events.filter((e) => e.event === 'tool-call').map((e) => e.data);
    assert.deepEqual(
      calls.map((c) => c.input.name),
      ['twin-a', 'twin-b'],
    );
    assert.equal(new Set(calls.map((c) => c.toolCallId)).size, 2);
    const stored = await detail(id);
    assert.deepEqual(stored.pendingApprovals.map((p: { input: { name: string } }) => p.input.name).sort(), [
      'twin-a',
      'twin-b',
    ]);
    assert.deepEqual(
      stored.messages[1].toolCalls.map((c: { toolCallId: string; input: { name: string } }) => [
        c.toolCallId,
        c.input.name,
      ]),
      calls.map((c) => [c.toolCallId, c.input.name]),
    );
  });

  test(
    'errors before the stream are JSON; a provider failure mid-turn is an error event and stores ' + 'nothing',
    async () => {
      const id = await newConversation();
      const bad = await fetch(`${base}/api/chat/conversations/${id}/messages`, {
        method: 'POST',
        headers: { ...alice.headers, 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ content: '' }),
        dispatcher: agent,
      });
      assert.equal(bad.status, 400);
      assert.equal(((await bad.json()) as any).error.code, 'VALIDATION_ERROR');

      stub.enqueue({ status: 503, message: 'overloaded' });
      const { res, events } = await stream(`/api/chat/conversations/${id}/messages`, { content: 'hello' });
      assert.equal(res.status, 200);
      assert.deepEqual(names(events), ['error']);
      assert.equal(events[0]!.data.code, 'AI_PROVIDER_ERROR');
      assert.deepEqual((await detail(id)).messages, []);
    },
  );

  test(
    'a client that disconnects aborts the model call; nothing is stored and the conversation is free ' + 'again',
    async () => {
      const id = await newConversation();
      stub.enqueue({ content: 'too late', delayMs: 5_000 });
      const controller = new AbortController();
      const pending = stream(
        `/api/chat/conversations/${id}/messages`,
        { content: 'slow one' },
        controller.signal,
      ).catch((e: Error) => e);
      await eventually(async () => stub.inFlight === 1);
      controller.abort();
      assert.ok((await pending) instanceof Error);
      // The server dropped its provider request long before the stub's 5 s answer.
      await eventually(async () => stub.inFlight === 0, 3_000);
      stub.enqueue({ content: 'Here now.' });
      const retry = await eventually(async () => {
        const res = await ctx.call(alice, 'POST', `/api/chat/conversations/${id}/messages`, { content: 'again' });
        return res.statusCode === 200 ? res : undefined;
      }, 3_000);
      assert.equal(retry.json().data.message.text, 'Here now.');
      const rows = await ctx.deps.db.select().from(chatMessages).where(eq(chatMessages.conversationId, id));
      assert.deepEqual(
        rows.map((r) => r.content),
        ['again', [{ type: 'text', text: 'Here now.' }]],
      );
    },
  );

  test('a JSON turn whose client disconnects is aborted without an error-level log (no unhandled 500)', async () => {
    // Requests log through the app's logger itself (no per-request child; see app.ts): record its error lines.
    const errors: unknown[] = [];
    const log = ctx.app.log as unknown as { error: (...args: unknown[]) => void };
    const original = log.error;
    log.error = (...logged: unknown[]) => void errors.push(logged);
    try {
      const id = await newConversation();
      stub.enqueue({ content: 'too late', delayMs: 5_000 });
      const controller = new AbortController();
      const pending = fetch(`${base}/api/chat/conversations/${id}/messages`, {
        method: 'POST',
        headers: { ...alice.headers, 'content-type': 'application/json' },
        body: JSON.stringify({ content: 'slow one' }),
        signal: controller.signal,
        dispatcher: agent,
      }).catch((e: Error) => e);
      await eventually(async () => stub.inFlight === 1);
      controller.abort();
      assert.ok((await pending) instanceof Error);
      await eventually(async () => stub.inFlight === 0, 3_000);
      stub.enqueue({ content: 'Here now.' });
      await eventually(
        async () =>
          (await ctx.call(alice, 'POST', `/api/chat/conversations/${id}/messages`, { content: 'again' })).statusCode ===
          200,
        3_000,
      );
      assert.deepEqual(errors, []);
    } finally {
      log.error = original;
    }
  });
});
