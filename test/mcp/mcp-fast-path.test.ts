/**
 * The cheap paths of a tool call (issue 24) answer exactly what the slow ones would: a read tool's structured
 * content and text are its route's `data` over REST, its errors the route's envelope (code, status, message,
 * details), and the JSON answer of a POST /mcp keeps the Streamable HTTP rules (Accept, Content-Type, protocol
 * version, JSON-RPC shape, 202 for notifications, batches) with the SDK transport's codes and messages.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { createTestContext, type TestContext, type TestUser } from '../helpers/app.ts';
import { connectMcp, textOf } from '../helpers/mcp-client.ts';

let ctx: TestContext;
let base: string;
let alice: TestUser;
let client: Client;
let session: string;
let leadId: string;

const ACCEPT = 'application/json, text/event-stream';

before(async () => {
  ctx = await createTestContext({ workers: false });
  base = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  alice = await ctx.signup();
  ({ client } = await connectMcp(base, alice.apiKey));
  const project = await ctx.call(alice, 'POST', '/api/projects', { name: 'Fast path' });
  assert.equal(project.statusCode, 201, project.body);
  const source = await ctx.call(alice, 'POST', '/api/sources', {
    name: 'Team page',
    url: 'https://example.com/team',
    scrapeType: 'STATIC',
    selectors: {},
    projectId: project.json().data.project.id,
  });
  assert.equal(source.statusCode, 201, source.body);
  for (const [email, company] of [
    ['ada@analytical.org', 'Analytical "Engines"'],
    ['grace@navy.mil', 'Navy \\ Cobol'],
    ['linus@kernel.org', 'Kernel\u2028Org é'],
  ]) {
    const lead = await ctx.call(alice, 'POST', '/api/leads', {
      sourceUrl: 'https://example.org/team',
      email,
      company,
      firstName: 'Née',
    });
    assert.equal(lead.statusCode, 201, lead.body);
    leadId = lead.json().data.lead.id;
  }
  await ctx.call(alice, 'PATCH', '/api/leads/bulk', { leadIds: [leadId], updates: { addTags: ['icp', 'b"q'] } });
  session = await initialize(alice.apiKey);
});
after(async () => {
  await client?.close();
  await ctx?.close();
});

async function initialize(apiKey: string): Promise<string> {
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept: ACCEPT },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  assert.equal(res.status, 200);
  return res.headers.get('mcp-session-id')!;
}

const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      ...alice.headers,
      'content-type': 'application/json',
      accept: ACCEPT,
      'mcp-session-id': session,
      'mcp-protocol-version': '2025-11-25',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('read tools answer what their routes answer', () => {
  const cases: Array<[string, Record<string, unknown>, () => string]> = [
    ['search_leads', {}, () => '/api/leads'],
    ['search_leads', { company: 'navy \\ cobol', limit: 1 }, () => '/api/leads?company=navy+%5C+cobol&limit=1'],
    ['search_leads', { tag: 'icp', status: 'NEW' }, () => '/api/leads?tag=icp&status=NEW'],
    ['search_leads', { q: 'née' }, () => `/api/leads?q=${encodeURIComponent('née')}`],
    ['get_lead', {}, () => `/api/leads/${leadId}`],
    ['list_projects', {}, () => '/api/projects'],
    ['list_sources', {}, () => '/api/sources'],
    ['list_jobs', {}, () => '/api/jobs'],
    ['list_matching_rules', {}, () => '/api/matching/rules'],
    ['list_deal_campaigns', {}, () => '/api/campaigns'],
    ['list_outreach_campaigns', {}, () => '/api/outreach/campaigns'],
    ['list_replies', {}, () => '/api/outreach/emails'],
  ];
  for (const [name, args, url] of cases) {
    test(`${name} ${JSON.stringify(args)}`, async () => {
      const rest = await ctx.call(alice, 'GET', url());
      assert.equal(rest.statusCode, 200, rest.body);
      const data = rest.json().data;
      const result = await client.callTool({ name, arguments: name === 'get_lead' ? { id: leadId } : args });
      assert.equal(result.isError, undefined, textOf(result));
      assert.deepEqual(result.structuredContent, data);
      assert.deepEqual(JSON.parse(textOf(result)), data, 'the text is the same JSON');
    });
  }

  test('a search over many leads comes back whole', async () => {
    const result = await client.callTool({ name: 'search_leads', arguments: { limit: 2 } });
    const data = (await ctx.call(alice, 'GET', '/api/leads?limit=2')).json().data;
    assert.equal(data.leads.length, 2);
    assert.ok(data.nextCursor);
    assert.deepEqual(result.structuredContent, data);
    const next = await client.callTool({ name: 'search_leads', arguments: { cursor: data.nextCursor } });
    assert.deepEqual(
      next.structuredContent,
      (await ctx.call(alice, 'GET', `/api/leads?cursor=${encodeURIComponent(data.nextCursor)}`)).json().data,
    );
  });
});

describe('read tools fail as their routes fail', () => {
  const expectSame = async (name: string, args: Record<string, unknown>, url: string, user = alice, c = client) => {
    const rest = await ctx.call(user, 'GET', url);
    assert.ok(rest.statusCode >= 400, rest.body);
    const error = rest.json().error;
    const result = await c.callTool({ name, arguments: args });
    assert.equal(result.isError, true);
    assert.equal(result.structuredContent, undefined);
    assert.deepEqual((result._meta as Record<string, unknown>)['quarry/error'], error);
    assert.ok(textOf(result).startsWith(`${error.code} (HTTP ${rest.statusCode}): ${error.message}`), textOf(result));
  };

  test('an unknown id (the handler refuses)', async () => {
    const id = '0190a000-0000-7000-8000-000000000000';
    await expectSame('get_lead', { id }, `/api/leads/${id}`);
    await expectSame('get_job', { id }, `/api/jobs/${id}`);
    await expectSame('get_lead', { id: 'not an id' }, '/api/leads/not%20an%20id');
  });

  test('invalid arguments (the route validates)', async () => {
    await expectSame('search_leads', { limit: 5000 }, '/api/leads?limit=5000');
    await expectSame('search_leads', { status: 'NOPE' }, '/api/leads?status=NOPE');
    await expectSame('search_leads', { unknownFilter: 'x', limit: 0 }, '/api/leads?unknownFilter=x&limit=0');
  });

  test('a key without the scope (the auth hook refuses)', async () => {
    const key = (await ctx.call(alice, 'POST', '/api/api-keys', { name: 'jobs only', scopes: ['jobs:read'] })).json()
      .data.apiKey.key as string;
    const jobsOnly = { ...alice, apiKey: key, headers: { authorization: `Bearer ${key}` } };
    const { client: narrow } = await connectMcp(base, key);
    try {
      await expectSame('search_leads', {}, '/api/leads', jobsOnly, narrow);
      await expectSame('get_lead', { id: leadId }, `/api/leads/${leadId}`, jobsOnly, narrow);
    } finally {
      await narrow.close();
    }
  });
});

describe('the JSON answer of POST /mcp', () => {
  const call = (id: unknown, name = 'search_leads', args: Record<string, unknown> = { limit: 2 }) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: args },
  });

  test('a tool result on the wire: the structured content is its text as JSON', async () => {
    const res = await post(call('abc'));
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(res.headers.get('mcp-session-id'), null, 'a JSON answer names no session (as the SDK stateless one)');
    const answer = (await res.json()) as any;
    assert.equal(answer.jsonrpc, '2.0');
    assert.equal(answer.id, 'abc');
    assert.deepEqual(Object.keys(answer.result).sort(), ['content', 'structuredContent']);
    assert.deepEqual(answer.result.structuredContent, JSON.parse(answer.result.content[0].text));
    assert.deepEqual(answer.result.structuredContent, (await ctx.call(alice, 'GET', '/api/leads?limit=2')).json().data);
  });

  test('batches answer every request, in order; a batch of one request answers it alone', async () => {
    const both = await post([
      call(1),
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      call(2, 'get_lead', { id: leadId }),
      call(3, 'no_such_tool', {}),
      { jsonrpc: '2.0', id: 4, method: 'tools/list' },
    ]);
    assert.equal(both.status, 200);
    const answers = (await both.json()) as any[];
    assert.deepEqual(
      answers.map((a: { id: number }) => a.id),
      [1, 2, 3, 4],
    );
    assert.equal(answers[1].result.structuredContent.lead.id, leadId);
    assert.equal(answers[2].result.isError, true);
    assert.ok(answers[3].result.tools.length > 10);
    const one = await post([call(7)]);
    const single = (await one.json()) as any;
    assert.equal(Array.isArray(single), false);
    assert.equal(single.id, 7);
  });

  test('notifications only: 202 and no body', async () => {
    const res = await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    assert.equal(res.status, 202);
    assert.equal(await res.text(), '');
  });

  test('protocol errors keep the transport codes and messages', async () => {
    const expectError = async (res: Response, status: number, code: number, message: string) => {
      assert.equal(res.status, status);
      assert.deepEqual(await res.json(), { jsonrpc: '2.0', error: { code, message }, id: null });
    };
    await expectError(
      await post(call(1), { accept: 'application/json' }),
      406,
      -32000,
      'Not Acceptable: Client must accept both application/json and text/event-stream',
    );
    await expectError(
      await post(call(1), { 'mcp-protocol-version': '1999-01-01' }),
      400,
      -32000,
      `Bad Request: Unsupported protocol version: 1999-01-01 (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
    );
    await expectError(await post({ hello: 'world' }), 400, -32700, 'Parse error: Invalid JSON-RPC message');
    await expectError(
      await post(Array.from({ length: 101 }, (_, i) => call(i))),
      400,
      -32600,
      'Invalid Request: Batch must not exceed 100 messages',
    );
    const unknownMethod = await (await post({ jsonrpc: '2.0', id: 9, method: 'nope/nope' })).json();
    assert.deepEqual(unknownMethod, { jsonrpc: '2.0', id: 9, error: { code: -32601, message: 'Method not found' } });
  });
});

describe('one plain tools/call, answered without the SDK dispatch', () => {
  const call = (params: unknown, id: unknown = 1) => ({ jsonrpc: '2.0', id, method: 'tools/call', params });
  // A batch of one request takes the SDK's path and is answered alone, as the same call sent bare.
  const bothWays = async (message: unknown) => {
    const bare = await post(message);
    const batched = await post([message]);
    return { bare: { status: bare.status, body: await bare.text() }, batched: await batched.text() };
  };

  test('the answer is byte for byte the SDK path’s: data, a tool error, string and number ids', async () => {
    for (const message of [
      call({ name: 'search_leads', arguments: { limit: 2 } }),
      call({ name: 'search_leads', arguments: { company: 'navy \\ cobol' } }, 'id "q"'),
      call({ name: 'get_lead', arguments: { id: leadId } }, 0),
      call({ name: 'search_leads' }, 2 ** 53 - 1),
      call({ name: 'search_leads', arguments: { limit: 5000 } }),
      call({ name: 'get_lead', arguments: { id: '0190a000-0000-7000-8000-000000000000' } }),
      call({ name: 'get_lead', arguments: {} }),
    ]) {
      const { bare, batched } = await bothWays(message);
      assert.equal(bare.status, 200, bare.body);
      assert.equal(bare.body, batched, JSON.stringify(message));
    }
  });

  test('what the plain check refuses is decided by the SDK, as before', async () => {
    const expectError = async (message: unknown, status: number, code: number, message_: string | RegExp) => {
      const res = await post(message);
      assert.equal(res.status, status);
      const answer = (await res.json()) as { error: { code: number; message: string } };
      assert.equal(answer.error.code, code);
      if (typeof message_ === 'string') assert.equal(answer.error.message, message_);
      else assert.match(answer.error.message, message_);
    };
    const parseError = 'Parse error: Invalid JSON-RPC message';
    await expectError({ ...call({ name: 'search_leads' }), extra: 1 }, 400, -32700, parseError);
    await expectError(call({ name: 'search_leads' }, 1.5), 400, -32700, parseError);
    await expectError(call({ name: 'search_leads' }, null), 400, -32700, parseError);
    await expectError({ ...call({ name: 'search_leads' }), jsonrpc: '1.0' }, 400, -32700, parseError);
    await expectError(call({ name: 'search_leads', arguments: [1] }), 200, -32603, /expected record/);
    await expectError(call({ name: 5 }), 200, -32603, /expected string/);
    // Shapes the SDK accepts but the plain check leaves to it: the same answer both ways.
    for (const message of [
      call({ name: 'search_leads', arguments: { limit: 1 }, unknownParam: true }),
      call({ name: 'search_leads', arguments: { limit: 1 }, _meta: {} }),
      call({ name: 'no_such_tool' }),
      call({ name: 'wait_for_job', arguments: { id: '0190a000-0000-7000-8000-000000000000' } }),
    ]) {
      const { bare, batched } = await bothWays(message);
      assert.equal(bare.status, 200, bare.body);
      assert.equal(bare.body, batched, JSON.stringify(message));
    }
  });

  test('calls of two keys at once each answer their own caller', async () => {
    const bob = await ctx.signup();
    const made = await ctx.call(bob, 'POST', '/api/leads', { sourceUrl: 'https://example.org/b', email: 'b@bob.dev' });
    assert.equal(made.statusCode, 201, made.body);
    const bobSession = await initialize(bob.apiKey);
    const asBob = { authorization: bob.headers.authorization, 'mcp-session-id': bobSession };
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        post(call({ name: 'search_leads', arguments: { limit: 50 } }, i), i % 2 ? asBob : {}).then((res) => res.json()),
      ),
    );
    for (const [i, answer] of answers.entries()) {
      const emails = (answer as any).result.structuredContent.leads.map((lead: { email: string }) => lead.email);
      if (i % 2) assert.deepEqual(emails, ['b@bob.dev']);
      else assert.ok(emails.length === 3 && !emails.includes('b@bob.dev'), emails.join());
    }
    // A session answers only the key that opened it, on this path too.
    const crossed = await post(call({ name: 'search_leads' }), { 'mcp-session-id': bobSession });
    assert.equal(crossed.status, 404);
  });
});
