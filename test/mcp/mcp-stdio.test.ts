import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { createTestContext, type TestContext, type TestUser } from '../helpers/app.ts';
import { textOf } from '../helpers/mcp-client.ts';

let ctx: TestContext;
let base: string;
let alice: TestUser;

before(async () => {
  ctx = await createTestContext({ workers: false });
  base = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  alice = await ctx.signup();
});
after(() => ctx?.close());

const stdioClient = async (env: Record<string, string>) => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [path.join(import.meta.dirname, '..', '..', 'src', 'mcp-stdio.ts')],
    env: { PATH: process.env.PATH ?? '', ...env },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'stdio-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
};

test('npm run mcp: a child process on stdio serves the same tools as the key', async () => {
  await ctx.call(alice, 'POST', '/api/leads', { sourceUrl: 'https://example.org/t', email: 'grace@example.org' });
  const client = await stdioClient({ QUARRY_URL: base, QUARRY_API_KEY: alice.apiKey });
  try {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('search_leads') && names.includes('wait_for_job'));
    const found = await client.callTool({ name: 'search_leads', arguments: {} });
    assert.deepEqual(
      (found.structuredContent as { leads: Array<{ email: string }> }).leads.map((l) => l.email),
      ['grace@example.org'],
    );
    const missing = await client.callTool({ name: 'get_job', arguments: { id: 'nope' } });
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /^NOT_FOUND/);
  } finally {
    await client.close();
  }
});

test('npm run mcp with a wrong key fails to initialize, saying why', async () => {
  await assert.rejects(stdioClient({ QUARRY_URL: base, QUARRY_API_KEY: 'qk_live_wrong' }), /UNAUTHORIZED|401/);
});
