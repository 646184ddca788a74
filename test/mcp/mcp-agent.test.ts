/**
 * An agent's path through the MCP tools, end to end: the test is the MCP host (the AI SDK's tool loop over the
 * SDK's Client), the loopback AI stub is the model. The stub sees the tools as a model does (name, description,
 * JSON Schema) and picks each next tool by what its description says, so descriptions that stop telling the tools
 * apart fail this test: discover → create a source → activate it → start a job → wait for it → search leads →
 * validate their emails → enroll.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { generateText, jsonSchema, stepCountIs, type ToolSet, tool } from 'ai';
import { eq } from 'drizzle-orm';
import { outreachEnrollments } from '../../src/db/schema/index.ts';
import { DIRECTORY_SELECTORS, type FixtureSite, startFixtureSite } from '../fixtures/sites.ts';
import { createTestContext, type TestContext, type TestUser } from '../helpers/app.ts';
import { startTestDnsServer, type TestDnsServer } from '../helpers/dns.ts';
import { connectMcp } from '../helpers/mcp-client.ts';
import { type ChatRequest, type OpenAiStub, startOpenAiStub } from '../helpers/openai-stub.ts';
import { seedCampaign, seedSmtpConnection } from '../helpers/outreach-seed.ts';

let ai: OpenAiStub;
let site: FixtureSite;
let ctx: TestContext;
let alice: TestUser;
let client: Client;
let dns: TestDnsServer;

before(async () => {
  ai = await startOpenAiStub();
  site = await startFixtureSite({ pages: 2, leadsPerPage: 3 });
  // The fixture's people have example.com addresses: served with a mail exchanger by a loopback DNS server.
  dns = await startTestDnsServer({ 'example.com': { mx: [{ exchange: 'mx.example.com', priority: 10 }] } });
  ctx = await createTestContext({
    env: { AI_BASE_URL: ai.baseURL, AI_MODEL: 'stub-model', AI_MAX_RETRIES: '0', DNS_SERVERS: dns.address },
  });
  const base = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  alice = await ctx.signup();
  ({ client } = await connectMcp(base, alice.apiKey));
});
after(async () => {
  await client?.close();
  await ctx?.close();
  await site?.close();
  await ai?.close();
  await dns?.close();
});

type OpenAiTool = { type: 'function'; function: { name: string; description?: string; parameters: any } };
type Message = { role: string; content?: unknown; tool_calls?: Array<{ function: { name: string } }> };

/** The one tool whose description says `what`; two or none means the descriptions no longer tell them apart. */
function pick(tools: OpenAiTool[], what: RegExp): OpenAiTool['function'] {
  const matches = tools.filter((t) => what.test(t.function.description ?? ''));
  assert.equal(matches.length, 1, `${what}: ${matches.map((m) => m.function.name).join(', ') || 'no tool'}`);
  return matches[0]!.function;
}

/** The stub as a model: the service's own AI calls (source discovery) and the agent's next step. */
function model(request: ChatRequest) {
  const body = request.body as { tools?: OpenAiTool[]; messages: Message[]; response_format?: unknown };
  if (!body.tools) {
    // Source discovery asks the model for proposals (structured output): the fixture directory.
    return {
      json: {
        sources: [
          {
            name: 'Fixture directory',
            url: `${site.url}directory`,
            category: 'directory',
            estimatedLeads: 6,
            scrapeType: 'STATIC',
            description: 'A directory of people with their email addresses',
            reasoning: 'It lists people with names, emails and companies',
          },
        ],
      },
    };
  }
  const tools = body.tools;
  const results = body.messages.filter((m) => m.role === 'tool');
  const last = results.at(-1);
  const lastData = last
    ? JSON.parse(String(typeof last.content === 'string' ? last.content : JSON.stringify(last.content)))
    : undefined;
  const campaignId = /campaign ([0-9a-f-]{36})/.exec(String(body.messages.find((m) => m.role === 'user')?.content))![1];
  const call = (fn: OpenAiTool['function'], args: Record<string, unknown>) => {
    for (const name of fn.parameters.required ?? []) assert.ok(name in args, `${fn.name} needs ${name}`);
    return { toolCalls: [{ name: fn.name, arguments: args }] };
  };
  const state = JSON.stringify(lastData ?? {});
  switch (results.length) {
    case 0:
      return call(pick(tools, /public pages to scrape/), { query: 'people in the fixture directory', count: 1 });
    case 1:
      return call(pick(tools, /start URL, STATIC or DYNAMIC, and CSS selectors/), {
        name: lastData.sources[0].name,
        url: lastData.sources[0].url,
        scrapeType: lastData.sources[0].scrapeType,
        selectors: DIRECTORY_SELECTORS,
      });
    case 2:
      return call(pick(tools, /^Activate/), { id: lastData.source.id });
    case 3:
      return call(pick(tools, /^Start a scraping run|Crawls an ACTIVE source/), {
        name: 'Agent run',
        sourceId: lastData.source.id,
      });
    case 4:
      return call(pick(tools, /Waits until a scraping job ends/), { id: lastData.job.id, timeoutSeconds: 120 });
    case 5:
      assert.equal(lastData.job.status, 'COMPLETED', state);
      return call(pick(tools, /^List leads/), { jobId: lastData.job.id, limit: 100 });
    case 6: {
      // One call per lead, in one step (parallel tool calls).
      const validate = pick(tools, /Answers the verdict at once/);
      return {
        toolCalls: lastData.leads.map((l: { id: string }) => ({ name: validate.name, arguments: { id: l.id } })),
      };
    }
    case 12: {
      const verdicts = results.slice(-6).map((r) => JSON.parse(String(r.content)).status);
      assert.deepEqual(verdicts, Array(6).fill('valid'));
      const found = JSON.parse(String(results[5]!.content)).leads as Array<{ id: string }>;
      return call(pick(tools, /already enrolled leads are skipped/), {
        id: campaignId,
        leadIds: found.map((l) => l.id),
      });
    }
    default:
      return { content: `Enrolled ${lastData.uploaded} leads. ${JSON.stringify(lastData.skipped)}` };
  }
}

test('an agent goes from a description to enrolled leads, choosing each tool by its description', async () => {
  const { connection, mailboxes } = await seedSmtpConnection(ctx, alice, [
    { email: 'sales@example.org', smtpUrl: 'smtp://127.0.0.1:9' },
  ]);
  const campaign = await seedCampaign(ctx, alice, {
    connectionId: connection.id,
    mailboxIds: mailboxes.map((m) => m.id),
    steps: [{ subject: 'Hello {{firstName}}', body: 'Hi {{firstName}}', delayDays: 0 }],
    status: 'PAUSED',
  });
  ai.respond(model);

  const tools: ToolSet = {};
  for (const t of (await client.listTools()).tools) {
    tools[t.name] = tool({
      description: t.description,
      inputSchema: jsonSchema(t.inputSchema as never),
      execute: async (args) => {
        const result = await client.callTool({ name: t.name, arguments: args as Record<string, unknown> });
        assert.equal(result.isError, undefined, `${t.name}: ${JSON.stringify(result.content)}`);
        return result.structuredContent;
      },
    });
  }
  const provider = createOpenAICompatible({ name: 'stub', baseURL: ai.baseURL });
  const run = await generateText({
    model: provider('stub-model'),
    tools,
    stopWhen: stepCountIs(12),
    prompt: `Find people in the fixture directory and enroll them in outreach campaign ${campaign.id}.`,
  });

  const called = run.steps.flatMap((s) => s.toolCalls.map((c) => c.toolName));
  assert.deepEqual(called, [
    'discover_sources',
    'create_source',
    'activate_source',
    'start_job',
    'wait_for_job',
    'search_leads',
    ...Array(6).fill('validate_email'),
    'enroll_leads',
  ]);
  assert.equal(run.text, 'Enrolled 6 leads. {}');
  const enrolled = await ctx.deps.db
    .select()
    .from(outreachEnrollments)
    .where(eq(outreachEnrollments.campaignId, campaign.id));
  assert.equal(enrolled.length, 6);
});
