import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { asc, eq } from 'drizzle-orm';
import { chatApprovals, chatMessages } from '../src/db/schema/index.ts';
import { chatRepository } from '../src/modules/chat/chat.repository.ts';
import { isUuid, newId } from '../src/shared/ids.ts';
import { createAiTwoUserContext } from './helpers/ai-context.ts';
import type { TestContext, TestUser } from './helpers/app.ts';
import { assertError } from './helpers/assertions.ts';
import type { ChatRequest, OpenAiStub } from './helpers/openai-stub.ts';

/** What stays consistent when the model or the process misbehaves: tool-call ids, interrupted actions, turn leases. */

let ctx: TestContext;
let alice: TestUser;
let stub: OpenAiStub;
let close: () => Promise<void>;

before(async () => ({ ctx, alice, ai: stub, close } = await createAiTwoUserContext()));
after(async () => close?.());
beforeEach(() => stub.reset());

const INTERRUPTED = 'outcome unknown: the service stopped while running this action; check before retrying';
const source = (name: string) => ({
  name,
  url: `https://example.com/${name.toLowerCase()}`,
  scrapeType: 'STATIC',
  selectors: { item: '.m' },
});

const newConversation = async (): Promise<string> => {
  const res = await ctx.call(alice, 'POST', '/api/chat/conversations', {});
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.conversation.id;
};
const send = (id: string, content: string) =>
  ctx.call(alice, 'POST', `/api/chat/conversations/${id}/messages`, { content });
const decide = (id: string, approvalId: string) =>
  ctx.call(alice, 'POST', `/api/chat/conversations/${id}/approvals`, { approvalId, approved: true });
const detail = async (id: string) => {
  const res = await ctx.call(alice, 'GET', `/api/chat/conversations/${id}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data;
};
const sourceNames = async () =>
  ((await ctx.call(alice, 'GET', '/api/sources')).json().data.sources as Array<{ name: string }>).map((s) => s.name);
const approvalRows = (id: string) =>
  ctx.deps.db.select().from(chatApprovals).where(eq(chatApprovals.conversationId, id)).orderBy(asc(chatApprovals.id));
const messageRows = (id: string) =>
  ctx.deps.db.select().from(chatMessages).where(eq(chatMessages.conversationId, id)).orderBy(asc(chatMessages.id));

type Part = { type: string; toolCallId?: string };
const partIds = (rows: Array<{ content: unknown }>, type: string) =>
  rows
    .flatMap((r) => (Array.isArray(r.content) ? (r.content as Part[]) : []))
    .filter((p) => p.type === type)
    .map((p) => p.toolCallId!);

/** Every OpenAI `tool` message of a request answers a call of the assistant message before it. */
function assertPaired(request: ChatRequest) {
  const messages = request.body.messages as Array<{
    role: string;
    tool_calls?: Array<{ id: string }>;
    tool_call_id?: string;
  }>;
  let calls = new Set<string>();
  for (const m of messages) {
    if (m.role === 'assistant') calls = new Set((m.tool_calls ?? []).map((c) => c.id));
    else if (m.role === 'tool')
      assert.ok(
        calls.has(m.tool_call_id!),
        `tool result ${m.tool_call_id} answers a call of the preceding assistant message`,
      );
    else calls = new Set();
  }
}

describe('tool-call ids are the server’s', () => {
  test(
    'a model reusing call_1 in a later turn gets a second PENDING approval; history and replay use server ' + 'ids',
    async () => {
      const id = await newConversation();
      stub.enqueue({ toolCalls: [{ id: 'call_1', name: 'createSource', arguments: source('Reuse one') }] });
      const first = await send(id, 'Create Reuse one');
      assert.equal(first.statusCode, 200, first.body);
      const [approval1] = first.json().data.pendingApprovals;
      stub.enqueue({ content: 'Created Reuse one.' });
      const approved = await decide(id, approval1.id);
      assert.equal(approved.statusCode, 200, approved.body);
      assert.equal(approved.json().data.approval.status, 'EXECUTED');

      stub.enqueue({ toolCalls: [{ id: 'call_1', name: 'createSource', arguments: source('Reuse two') }] });
      const second = await send(id, 'Now create Reuse two');
      assert.equal(second.statusCode, 200, second.body);
      const pending = second.json().data.pendingApprovals;
      assert.equal(pending.length, 1);
      assert.equal(pending[0].input.name, 'Reuse two');
      assert.notEqual(pending[0].id, approval1.id);
      assert.equal(second.json().data.message.toolCalls[0].status, 'PENDING');

      // Stored: two approvals with distinct server ids, the same ids in the calls and the result.
      const approvals = await approvalRows(id);
      assert.deepEqual(
        approvals.map((a) => a.status),
        ['EXECUTED', 'PENDING'],
      );
      const [id1, id2] = approvals.map((a) => a.toolCallId);
      assert.ok(isUuid(id1) && isUuid(id2) && id1 !== id2, `${id1} ${id2}`);
      const rows = await messageRows(id);
      assert.deepEqual(partIds(rows, 'tool-call'), [id1, id2]);
      assert.deepEqual(partIds(rows, 'tool-result'), [id1]);
      assert.ok(!JSON.stringify(rows).includes('call_1'));
      // The history replayed in turn 2 carried server ids, each result after its call.
      const replay = stub.requests[2]!;
      assert.ok(JSON.stringify(replay.body.messages).includes(id1!));
      assertPaired(replay);

      stub.enqueue({ content: 'Created Reuse two.' });
      const last = await decide(id, pending[0].id);
      assert.equal(last.statusCode, 200, last.body);
      assert.equal(last.json().data.approval.status, 'EXECUTED');
      assertPaired(stub.requests.at(-1)!);
      const names = await sourceNames();
      assert.ok(names.includes('Reuse one') && names.includes('Reuse two'));
    },
  );

  test('two write calls sharing an id in one step become two approvals', async () => {
    const id = await newConversation();
    stub.enqueue({
      toolCalls: [
        { id: 'dup', name: 'createSource', arguments: source('Twin A') },
        { id: 'dup', name: 'createSource', arguments: source('Twin B') },
      ],
    });
    const res = await send(id, 'Create Twin A and Twin B');
    assert.equal(res.statusCode, 200, res.body);
    const pending = res.json().data.pendingApprovals as Array<{ id: string; input: { name: string } }>;
    assert.deepEqual(pending.map((p) => p.input.name).sort(), ['Twin A', 'Twin B']);
    const calls = res.json().data.message.toolCalls as Array<{
      toolCallId: string;
      approvalId: string;
      input: { name: string };
    }>;
    assert.equal(new Set(calls.map((c) => c.toolCallId)).size, 2);
    for (const c of calls) assert.equal(pending.find((p) => p.id === c.approvalId)!.input.name, c.input.name);

    assert.equal((await decide(id, pending[0]!.id)).statusCode, 200);
    stub.enqueue({ content: 'Both created.' });
    const second = await decide(id, pending[1]!.id);
    assert.equal(second.statusCode, 200, second.body);
    const replay = stub.requests.at(-1)!;
    assertPaired(replay);
    assert.equal((replay.body.messages as Array<{ role: string }>).filter((m) => m.role === 'tool').length, 2);
    const names = await sourceNames();
    assert.ok(names.includes('Twin A') && names.includes('Twin B'));
  });
});

describe('an approved action whose outcome was never recorded', () => {
  /** A conversation stopped on a createSource call whose approval is APPROVED since `decidedAt`. */
  async function approvedCall(decidedAt: Date) {
    const id = await newConversation();
    const toolCallId = newId();
    const at = new Date(decidedAt.getTime() - 1000);
    await ctx.deps.db.insert(chatMessages).values([
      { id: newId(), conversationId: id, userId: alice.id, role: 'user', content: 'Create Lost', createdAt: at },
      {
        id: newId(),
        conversationId: id,
        userId: alice.id,
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId, toolName: 'createSource', input: source('Lost') }],
        createdAt: at,
      },
    ]);
    const [approval] = await ctx.deps.db
      .insert(chatApprovals)
      .values({
        conversationId: id,
        userId: alice.id,
        toolCallId,
        toolName: 'createSource',
        input: source('Lost'),
        status: 'APPROVED',
        decidedAt,
        createdAt: at,
        updatedAt: decidedAt,
      })
      .returning();
    return { id, toolCallId, approvalId: approval!.id };
  }

  test(
    'reading the conversation marks it FAILED (outcome unknown) with a tool result; a recent one is left ' + 'alone',
    async () => {
      const stale = await approvedCall(new Date(ctx.deps.clock.now().getTime() - 24 * 3600_000));
      const view = await detail(stale.id);
      const [call] = view.messages[1].toolCalls;
      assert.deepEqual(
        { status: call.status, error: call.error, approvalId: call.approvalId },
        { status: 'FAILED', error: INTERRUPTED, approvalId: stale.approvalId },
      );
      const [row] = await approvalRows(stale.id);
      assert.equal(row!.status, 'FAILED');
      assert.equal(row!.error, INTERRUPTED);
      const rows = await messageRows(stale.id);
      assert.deepEqual(partIds(rows, 'tool-result'), [stale.toolCallId]);
      await detail(stale.id);
      assert.equal((await messageRows(stale.id)).length, rows.length, 'repaired once');

      // Decided just now: its turn may still be running.
      const recent = await approvedCall(ctx.deps.clock.now());
      await detail(recent.id);
      assert.equal((await approvalRows(recent.id))[0]!.status, 'APPROVED');
      assert.deepEqual(partIds(await messageRows(recent.id), 'tool-result'), []);
    },
  );

  test('a new turn repairs it first: the model is told the outcome is unknown', async () => {
    const stale = await approvedCall(new Date(ctx.deps.clock.now().getTime() - 24 * 3600_000));
    stub.enqueue({ content: 'I could not confirm whether Lost was created; please check.' });
    const res = await send(stale.id, 'Did it work?');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await approvalRows(stale.id))[0]!.status, 'FAILED');
    const told = stub.requests[0]!.body.messages as Array<{ role: string; content: string; tool_call_id?: string }>;
    const result = told.find((m) => m.role === 'tool')!;
    assert.equal(result.tool_call_id, stale.toolCallId);
    assert.ok(result.content.includes(INTERRUPTED), result.content);
    assertPaired(stub.requests[0]!);
    assert.deepEqual(
      (await messageRows(stale.id)).map((m) => m.role),
      ['user', 'assistant', 'tool', 'user', 'assistant'],
    );
  });
});

describe('turn lease', () => {
  test('a turn that outlived its lease does not release the next turn’s', async () => {
    const id = await newConversation();
    const repo = chatRepository(ctx.deps.db);
    const now = Date.now();
    const first = await repo.claimTurn(alice.id, id, new Date(now - 20 * 60_000), new Date(now - 10 * 60_000));
    assert.ok(first);
    // The first lease has expired: a second turn takes the conversation.
    const second = await repo.claimTurn(alice.id, id, new Date(now), new Date(now + 10 * 60_000));
    assert.ok(second);
    assert.ok(!(await repo.claimTurn(alice.id, id, new Date(now), new Date(now + 10 * 60_000))), 'held');

    await repo.releaseTurn(id, first);
    stub.enqueue({ content: 'too early' });
    assertError(await send(id, 'hello'), 409, 'CONFLICT');

    await repo.releaseTurn(id, second);
    const res = await send(id, 'hello');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().data.message.text, 'too early');
  });
});
