import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createAiTwoUserContext } from './helpers/ai-context.ts';
import type { TestContext, TestUser } from './helpers/app.ts';
import type { ChatRequest, OpenAiStub, StubSuccess, StubToolCall } from './helpers/openai-stub.ts';
import { seedLeads } from './helpers/seed.ts';

/**
 * The agent logic, each model step scripted on the loopback OpenAI-compatible server: what the model is given
 * each step (the request body that crossed the wire) and what the server does with the tool calls it returns.
 */

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
let ai: OpenAiStub;
let close: () => Promise<void>;
/** The replies of the next steps, in order (then "nothing scripted"). */
const replies: StubSuccess[] = [];
const usage = { prompt_tokens: 10, completion_tokens: 5 };

const call = (name: string, input: unknown): StubToolCall => ({ name, arguments: input });
const step = (content: string | undefined, ...toolCalls: StubToolCall[]): StubSuccess => ({
  content,
  toolCalls,
  usage,
});
const text = (t: string) => step(t);

/** The requests of this test (each model step), and everything one tells the model, as text. */
const prompts = () => ai.requests;
const told = (request: ChatRequest) => JSON.stringify(request.body.messages);
type WireMessage = { role: string; content: unknown };
const messagesOf = (request: ChatRequest) => request.body.messages as WireMessage[];

before(async () => {
  ({ ctx, alice, bob, ai, close } = await createAiTwoUserContext());
  ai.respond(() => replies.shift() ?? text('nothing scripted'));
});
after(async () => close?.());
beforeEach(() => {
  ai.requests.length = 0;
  replies.length = 0;
});

const newConversation = async (user: TestUser) =>
  (await ctx.call(user, 'POST', '/api/chat/conversations', {})).json().data.conversation.id as string;
const send = (user: TestUser, id: string, content: string) =>
  ctx.call(user, 'POST', `/api/chat/conversations/${id}/messages`, { content });

describe('agent, model steps scripted over the wire', () => {
  test('getStats runs for the authenticated user; the result is in the next step’s prompt', async () => {
    await seedLeads(ctx.deps.db, alice.id, [{ firstName: 'A' }, { firstName: 'B' }, { firstName: 'C' }]);
    replies.push(step(undefined, call('getStats', {})), text('You have 3 leads.'));
    const id = await newConversation(alice);
    const res = await send(alice, id, 'How many leads do I have?');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().data.message.text, 'You have 3 leads.');
    assert.equal(res.json().data.message.toolCalls[0].result.totals.leads, 3);
    assert.equal(prompts().length, 2);
    assert.equal(messagesOf(prompts()[0]!)[0]!.role, 'system');
    assert.match(told(prompts()[0]!), /approval/);
    assert.deepEqual(
      prompts()[0]!
        .body.tools?.map((t: { function: { name: string } }) => t.function.name)
        .sort(),
      [
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
      ],
    );
    const toolMessage = messagesOf(prompts()[1]!).find((m) => m.role === 'tool');
    assert.ok(toolMessage && String(toolMessage.content).includes('"leads":3'), told(prompts()[1]!));
  });

  test('a user id in the tool input changes nothing: the user comes from authentication', async () => {
    await seedLeads(ctx.deps.db, bob.id, [{ firstName: 'Hidden', email: 'hidden@bob.example', company: 'BobCo' }]);
    replies.push(
      step(undefined, call('searchLeads', { company: 'BobCo', userId: bob.id })),
      text('No leads at BobCo.'),
    );
    const id = await newConversation(alice);
    const res = await send(alice, id, 'Leads at BobCo?');
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().data.message.toolCalls[0].result.leads, []);
    assert.equal(prompts().length, 2);
    assert.ok(!told(prompts()[1]!).includes('hidden@bob.example'));
  });

  test(
    'updateLeads waits for approval; approving applies the stored input and the model gets the ' + 'outcome',
    async () => {
      const [leadId] = await seedLeads(ctx.deps.db, alice.id, [{ firstName: 'Q', email: 'q@q.example' }]);
      replies.push(
        step(
          'I can qualify that lead.',
          call('updateLeads', { leadIds: [leadId], updates: { status: 'QUALIFIED', addTags: ['hot'] } }),
        ),
      );
      const id = await newConversation(alice);
      const res = await send(alice, id, 'Qualify Q and tag it hot');
      assert.equal(res.statusCode, 200, res.body);
      const [pending] = res.json().data.pendingApprovals;
      assert.equal(pending.summary, 'Update 1 lead: set status to QUALIFIED; add tags hot');
      assert.equal((await ctx.call(alice, 'GET', `/api/leads/${leadId}`)).json().data.lead.status, 'NEW');

      replies.push(text('Done: Q is qualified and tagged hot.'));
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
      const toolMessage = messagesOf(prompts().at(-1)!).findLast((m) => m.role === 'tool');
      assert.match(String(toolMessage?.content), /"updated":1/);
      assert.equal(
        decided.json().data.message.text,
        'I can qualify that lead.\n\nDone: Q is qualified and tagged hot.',
      );
    },
  );
});
