import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createTestContext, type TestContext, type TestUser } from '../helpers/app.ts';
import { connectMcp, dataOf, textOf } from '../helpers/mcp-client.ts';

let ctx: TestContext;
let base: string;
let alice: TestUser;
let bob: TestUser;
let client: Client;

before(async () => {
  ctx = await createTestContext({ workers: false });
  base = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  alice = await ctx.signup();
  bob = await ctx.signup();
  ({ client } = await connectMcp(base, alice.apiKey));
});
after(async () => {
  await client?.close();
  await ctx?.close();
});

describe('MCP over Streamable HTTP', () => {
  test('tools/list shows every tool with schemas and annotations', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const name of [
      'search_leads',
      'get_lead',
      'start_job',
      'wait_for_job',
      'browser_screenshot',
      'enroll_leads',
    ]) {
      assert.ok(names.includes(name), `${name} listed`);
    }
    const search = tools.find((t) => t.name === 'search_leads')!;
    assert.equal(search.inputSchema.type, 'object');
    assert.ok(search.inputSchema.properties?.status, 'status filter from the route query');
    assert.equal(search.annotations?.readOnlyHint, true);
    assert.ok(search.outputSchema, 'an output schema');
    const release = tools.find((t) => t.name === 'release_browser_session')!;
    assert.equal(release.annotations?.destructiveHint, true);
  });

  test('search_leads answers the route data as structured content', async () => {
    const created = await ctx.call(alice, 'POST', '/api/leads', {
      sourceUrl: 'https://example.org/team',
      email: 'ada@example.org',
      company: 'Analytical',
    });
    assert.equal(created.statusCode, 201, created.body);
    const result = await client.callTool({ name: 'search_leads', arguments: { company: 'analytical' } });
    assert.equal(result.isError, undefined, textOf(result));
    const leads = (result.structuredContent as { leads: Array<{ email: string }> }).leads;
    assert.deepEqual(
      leads.map((l) => l.email),
      ['ada@example.org'],
    );
  });

  test('search_leads finds text in names, emails and companies; wildcards are literal', async () => {
    await ctx.call(alice, 'POST', '/api/leads', {
      sourceUrl: 'https://example.org/t',
      email: 'kurt@godel.org',
      company: '100% Logic',
    });
    const byText = async (q: string) =>
      dataOf<{ leads: Array<{ email: string }> }>(
        await client.callTool({ name: 'search_leads', arguments: { q } }),
      ).leads.map((l) => l.email);
    assert.deepEqual(await byText('GODEL'), ['kurt@godel.org']);
    assert.deepEqual(await byText('0% l'), ['kurt@godel.org']);
    assert.deepEqual(await byText('_o'), [], 'an underscore is an underscore, not any character');
  });

  test('errors are tool results with the API code', async () => {
    const missing = await client.callTool({
      name: 'get_lead',
      arguments: { id: '00000000-0000-4000-8000-000000000000' },
    });
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /^NOT_FOUND/);
    const invalid = await client.callTool({ name: 'search_leads', arguments: { limit: 5000 } });
    assert.equal(invalid.isError, true);
    assert.match(textOf(invalid), /^VALIDATION_ERROR.*limit/);
  });

  test("another user's lead is not found", async () => {
    const lead = (
      await ctx.call(bob, 'POST', '/api/leads', { sourceUrl: 'https://example.org/b', email: 'bob-lead@example.org' })
    ).json().data.lead;
    const result = await client.callTool({ name: 'get_lead', arguments: { id: lead.id } });
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^NOT_FOUND/);
  });

  test('a read-only key sees no write tools and cannot call them', async () => {
    const key = (await ctx.call(alice, 'POST', '/api/api-keys', { name: 'ro', scopes: ['leads:read'] })).json().data;
    const { client: readOnly } = await connectMcp(base, key.apiKey.key);
    try {
      const names = (await readOnly.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('search_leads'));
      assert.ok(!names.includes('update_leads'), 'no write tool');
      assert.ok(!names.includes('start_job'), 'no tool of another resource');
      const refused = await readOnly.callTool({ name: 'update_leads', arguments: { updates: [] } });
      assert.equal(refused.isError, true);
      assert.match(textOf(refused), /^INSUFFICIENT_SCOPE/);
    } finally {
      await readOnly.close();
    }
  });

  test('a path argument cannot walk to another route', async () => {
    for (const id of ['..', '.', '']) {
      const result = await client.callTool({ name: 'get_lead', arguments: { id } });
      assert.equal(result.isError, true);
      assert.match(textOf(result), /^VALIDATION_ERROR.*id/);
    }
  });

  test('a key keeps at most 50 sessions: initializing more pushes out its oldest', async () => {
    const key = (await ctx.call(alice, 'POST', '/api/api-keys', { name: 'many', scopes: ['leads:read'] })).json().data
      .apiKey.key as string;
    const init = async () => {
      const res = await fetch(`${base}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'loop', version: '1' } },
        }),
      });
      assert.equal(res.status, 200);
      return res.headers.get('mcp-session-id')!;
    };
    const list = (session: string) =>
      fetch(`${base}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': session,
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      });
    const first = await init();
    assert.equal((await list(first)).status, 200);
    for (let i = 0; i < 50; i++) await init();
    assert.equal((await list(first)).status, 404, 'the oldest session is gone');
  });

  test('without a key /mcp answers 401; an unknown session 404', async () => {
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(res.status, 401);
    const unknown = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        ...alice.headers,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': '00000000-0000-4000-8000-000000000000',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(unknown.status, 404);
  });
});
