import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { LanguageModelV3CallOptions, LanguageModelV3Content } from '@ai-sdk/provider';
import { MockLanguageModelV3 } from 'ai/test';
import { createTwoUserContext, type TestContext, type TestUser } from './helpers/app.ts';
import { seedLeads } from './helpers/seed.ts';

/**
 * The agent logic against MockLanguageModelV3 (doGenerate): what the model is given each step and
 * what the server does with the tool calls it returns.
 */

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
const prompts: LanguageModelV3CallOptions[] = [];
const replies: LanguageModelV3Content[][] = [];

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};
const model = new MockLanguageModelV3({
  modelId: 'mock-chat',
  doGenerate: async (options) => {
    prompts.push(options);
    const content = replies.shift() ?? [{ type: 'text', text: 'nothing scripted' }];
    const calls = content.some((c) => c.type === 'tool-call');
    return { content, finishReason: { unified: calls ? 'tool-calls' : 'stop', raw: undefined }, usage, warnings: [] };
  },
});

const call = (
  toolName: string,
  input: unknown,
  toolCallId = `mock_${toolName}_${prompts.length}`,
): LanguageModelV3Content => ({
  type: 'tool-call',
  toolCallId,
  toolName,
  input: JSON.stringify(input),
});
const text = (t: string): LanguageModelV3Content => ({ type: 'text', text: t });

/** Everything a prompt tells the model, as text. */
const told = (options: LanguageModelV3CallOptions) => JSON.stringify(options.prompt);

before(async () => {
  ({ ctx, alice, bob } = await createTwoUserContext({ workers: false, aiModel: model }));
});
after(async () => ctx?.close());
beforeEach(() => {
  prompts.length = 0;
  replies.length = 0;
});

const newConversation = async (user: TestUser) =>
  (await ctx.call(user, 'POST', '/api/chat/conversations', {})).json().data.conversation.id as string;
const send = (user: TestUser, id: string, content: string) =>
  ctx.call(user, 'POST', `/api/chat/conversations/${id}/messages`, { content });

describe('agent with MockLanguageModelV3', () => {
  test('getStats runs for the authenticated user; the result is in the next step’s prompt', async () => {
    await seedLeads(ctx.deps.db, alice.id, [{ firstName: 'A' }, { firstName: 'B' }, { firstName: 'C' }]);
    replies.push([call('getStats', {})], [text('You have 3 leads.')]);
    const id = await newConversation(alice);
    const res = await send(alice, id, 'How many leads do I have?');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().data.message.text, 'You have 3 leads.');
    assert.equal(res.json().data.message.toolCalls[0].result.totals.leads, 3);
    assert.equal(prompts.length, 2);
    assert.equal(prompts[0]!.prompt[0]!.role, 'system');
    assert.match(told(prompts[0]!), /approval/);
    assert.deepEqual(prompts[0]!.tools?.map((t) => t.name).sort(), [
      'activateSource',
      'cancelJob',
      'createSource',
      'getJob',
      'getLead',
      'getStats',
      'listJobs',
      'listSources',
      'searchLeads',
      'startJob',
      'updateLeads',
    ]);
    const toolMessage = prompts[1]!.prompt.find((m) => m.role === 'tool');
    assert.ok(toolMessage && JSON.stringify(toolMessage.content).includes('"leads":3'), told(prompts[1]!));
  });

  test('a user id in the tool input changes nothing: the user comes from authentication', async () => {
    await seedLeads(ctx.deps.db, bob.id, [{ firstName: 'Hidden', email: 'hidden@bob.example', company: 'BobCo' }]);
    replies.push([call('searchLeads', { company: 'BobCo', userId: bob.id })], [text('No leads at BobCo.')]);
    const id = await newConversation(alice);
    const res = await send(alice, id, 'Leads at BobCo?');
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().data.message.toolCalls[0].result.leads, []);
    assert.ok(!told(prompts[1]!).includes('hidden@bob.example'));
  });

  test(
    'updateLeads waits for approval; approving applies the stored input and the model gets the ' + 'outcome',
    async () => {
      const [leadId] = await seedLeads(ctx.deps.db, alice.id, [{ firstName: 'Q', email: 'q@q.example' }]);
      replies.push([
        text('I can qualify that lead.'),
        call('updateLeads', { leadIds: [leadId], updates: { status: 'QUALIFIED', addTags: ['hot'] } }),
      ]);
      const id = await newConversation(alice);
      const res = await send(alice, id, 'Qualify Q and tag it hot');
      assert.equal(res.statusCode, 200, res.body);
      const [pending] = res.json().data.pendingApprovals;
      assert.equal(pending.summary, 'Update 1 lead: set status to QUALIFIED; add tags hot');
      assert.equal((await ctx.call(alice, 'GET', `/api/leads/${leadId}`)).json().data.lead.status, 'NEW');

      replies.push([text('Done: Q is qualified and tagged hot.')]);
      const decided = await ctx.call(alice, 'POST', `/api/chat/conversations/${id}/approvals`, {
        approvalId: pending.id,
        approved: true,
      });
      assert.equal(decided.statusCode, 200, decided.body);
      assert.deepEqual(decided.json().data.approval.result, { updated: 1, failed: 0, errors: [] });
      const lead = (await ctx.call(alice, 'GET', `/api/leads/${leadId}`)).json().data.lead;
      assert.equal(lead.status, 'QUALIFIED');
      assert.deepEqual(lead.tags, ['hot']);
      // The continuation's prompt: the stored call, then its executed result, from the server's history.
      const last = prompts.at(-1)!;
      const toolMessage = last.prompt.findLast((m) => m.role === 'tool');
      assert.match(JSON.stringify(toolMessage), /"updated":1/);
      assert.equal(
        decided.json().data.message.text,
        'I can qualify that lead.\n\nDone: Q is qualified and tagged hot.',
      );
    },
  );
});
