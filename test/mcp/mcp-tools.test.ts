/**
 * Every MCP tool, checked against its route: the annotations tell the truth (a read-only tool's route needs only a
 * read scope, a destructive one deletes), the schemas are JSON Schema objects, and each tool has an error path that
 * comes back as a tool error with the API's code, never as a protocol error.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { routeTools } from '../../src/modules/mcp/mcp.tools.ts';
import { createTestContext, type TestContext, type TestUser } from '../helpers/app.ts';
import { connectMcp, textOf } from '../helpers/mcp-client.ts';

let ctx: TestContext;
let alice: TestUser;
let client: Client;

before(async () => {
  ctx = await createTestContext({ workers: false });
  const base = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  alice = await ctx.signup();
  ({ client } = await connectMcp(base, alice.apiKey));
});
after(async () => {
  await client?.close();
  await ctx?.close();
});

const UNKNOWN = '0190a000-0000-7000-8000-000000000000';
const BULK = new Set(['validate_emails', 'update_leads']);

test('annotations and schemas tell the truth about each route', async () => {
  const listed = new Map((await client.listTools()).tools.map((t) => [t.name, t]));
  for (const spec of routeTools) {
    const tool = listed.get(spec.name);
    assert.ok(tool, `${spec.name} is listed for a key with every scope`);
    assert.equal(tool.inputSchema.type, 'object', spec.name);
    if (!spec.image) assert.equal(tool.outputSchema?.type, 'object', `${spec.name} has an object output schema`);
    assert.ok(tool.description && tool.description.length > 40, `${spec.name} is described`);
    const a = tool.annotations!;
    assert.ok(!(a.readOnlyHint && a.destructiveHint), `${spec.name}: read-only and destructive`);
  }
  // The hints against the routes' own scopes and methods (captured from the OpenAPI document the app serves).
  const doc = (await ctx.inject({ method: 'GET', url: '/api/openapi.json' })).json();
  const byOperation = new Map<string, { method: string; security?: unknown; scope?: string }>();
  for (const [path, item] of Object.entries(
    doc.paths as Record<string, Record<string, { operationId: string; description?: string }>>,
  )) {
    for (const [method, op] of Object.entries(item)) byOperation.set(op.operationId, { method: method.toUpperCase() });
    void path;
  }
  for (const spec of routeTools) {
    const route = byOperation.get(spec.operationId);
    assert.ok(route, `${spec.operationId} is in the OpenAPI document`);
    if (spec.annotations.destructiveHint) assert.equal(route.method, 'DELETE', `${spec.name} destroys: a DELETE`);
    if (route.method === 'DELETE') assert.ok(spec.annotations.destructiveHint, `${spec.name} is a DELETE: destructive`);
    if (route.method === 'GET') assert.ok(spec.annotations.readOnlyHint, `${spec.name} is a GET: read-only`);
  }
});

test('a key with read scopes only is not offered a tool whose route needs a write scope', async () => {
  const scopes = ['projects', 'sources', 'jobs', 'leads', 'matching', 'campaigns', 'outreach', 'browser', 'markdown'];
  const created = await ctx.call(alice, 'POST', '/api/api-keys', {
    name: 'reader',
    scopes: scopes.map((s) => `${s}:read`),
  });
  const key = created.json().data.apiKey.key as string;
  const { client: reader } = await connectMcp(
    `http://127.0.0.1:${(ctx.app.server.address() as { port: number }).port}`,
    key,
  );
  try {
    const names = new Set((await reader.listTools()).tools.map((t) => t.name));
    for (const spec of routeTools) {
      if (spec.annotations.readOnlyHint) assert.ok(names.has(spec.name), `${spec.name} (read-only) offered`);
      else assert.ok(!names.has(spec.name), `${spec.name} (writes) hidden from a read-only key`);
    }
  } finally {
    await reader.close();
  }
});

test('every tool has an error path that is a tool result with the API code', async () => {
  for (const spec of routeTools) {
    // An unknown id where the tool takes one; a page size of 0 where it lists; no body where it creates.
    // Bulk routes report unknown ids per item (by design): their error path is an empty list.
    const args: Record<string, unknown> = BULK.has(spec.name)
      ? { leadIds: [], updates: [] }
      : { id: UNKNOWN, limit: 0, sourceId: UNKNOWN, leadIds: [UNKNOWN] };
    const result = await client.callTool({ name: spec.name, arguments: args });
    assert.equal(result.isError, true, `${spec.name} with unknown ids: ${textOf(result)}`);
    assert.match(textOf(result), /^(NOT_FOUND|VALIDATION_ERROR)\b/, `${spec.name}: ${textOf(result)}`);
  }
  const unknownTool = await client.callTool({ name: 'no_such_tool', arguments: {} });
  assert.equal(unknownTool.isError, true);
  assert.match(textOf(unknownTool), /^NOT_FOUND/);
});
