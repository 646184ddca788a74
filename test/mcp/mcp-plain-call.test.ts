// Which POST /mcp bodies take the plain tools/call path (src/modules/mcp/mcp.tool-call.ts) and which are left to
// the SDK's dispatch: the byte-equality tests in mcp-fast-path.test.ts hold for both, so this says the fast path runs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { plainToolCall } from '../../src/modules/mcp/mcp.tool-call.ts';
import type { ToolPlan } from '../../src/modules/mcp/mcp.tool-schemas.ts';

const plan = { tool: { name: 'search_leads' } } as unknown as ToolPlan;
const byName = new Map([['search_leads', plan]]);
const call = (body: Record<string, unknown>) => plainToolCall(body, byName);
const plain = {
  jsonrpc: '2.0',
  id: 7,
  method: 'tools/call',
  params: { name: 'search_leads', arguments: { limit: 5 } },
};

test('a plain call of a route tool is taken, with its id, plan and arguments', () => {
  assert.deepEqual(call(plain), { id: 7, plan, args: { limit: 5 } });
  assert.deepEqual(call({ ...plain, id: 'a' }), { id: 'a', plan, args: { limit: 5 } });
  assert.deepEqual(call({ ...plain, params: { name: 'search_leads' } }), { id: 7, plan, args: {} });
});

test('every other shape is left to the SDK', () => {
  const refused: Array<[string, unknown]> = [
    ['not an object', [plain]],
    ['a fifth key', { ...plain, extra: 1 }],
    ['no id (a notification)', { jsonrpc: '2.0', method: 'tools/call', params: plain.params }],
    ['a fractional id', { ...plain, id: 1.5 }],
    ['an unsafe integer id', { ...plain, id: 2 ** 53 }],
    ['a null id', { ...plain, id: null }],
    ['another JSON-RPC version', { ...plain, jsonrpc: '1.0' }],
    ['another method', { ...plain, method: 'tools/list' }],
    ['params an array', { ...plain, params: [] }],
    ['params with _meta', { ...plain, params: { ...plain.params, _meta: {} } }],
    ['params with task', { ...plain, params: { ...plain.params, task: {} } }],
    ['a numeric name', { ...plain, params: { name: 1 } }],
    ['arguments an array', { ...plain, params: { name: 'search_leads', arguments: [] } }],
    ['arguments null', { ...plain, params: { name: 'search_leads', arguments: null } }],
    ['a tool that is no route tool', { ...plain, params: { name: 'wait_for_job' } }],
    ['an Object.prototype member as name', { ...plain, params: { name: 'constructor' } }],
  ];
  for (const [why, body] of refused) assert.equal(plainToolCall(body, byName), undefined, why);
});
