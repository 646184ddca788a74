import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createTestContext, type TestContext } from './helpers/app.ts';

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext();
});
after(async () => ctx?.close());

test('GET / (no key needed) redirects to the API reference and says where the OpenAPI document is', async () => {
  const res = await ctx.inject({ method: 'GET', url: '/' });
  assert.equal(res.statusCode, 302);
  assert.equal(res.headers.location, '/docs');
  const pointers = { docs: '/docs', openapi: '/api/openapi.json', health: '/api/health' };
  assert.deepEqual(res.json(), { success: true, data: pointers });

  // Both places it names answer without a key (the reference page itself adds a trailing slash).
  let docs = await ctx.inject({ method: 'GET', url: res.headers.location });
  for (let hops = 0; hops < 2 && docs.statusCode === 301; hops++) {
    docs = await ctx.inject({ method: 'GET', url: docs.headers.location! });
  }
  assert.equal(docs.statusCode, 200);
  assert.match(String(docs.headers['content-type']), /text\/html/);
  const openapi = await ctx.inject({ method: 'GET', url: res.json().data.openapi });
  assert.equal(openapi.statusCode, 200);
  assert.equal(openapi.json().openapi, '3.1.0');
});
