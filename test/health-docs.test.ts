import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../src/app.ts';
import { compileAllResponseSerializers } from '../src/shared/serializer.ts';
import { asAnotherInstance, createTestContext, type TestContext } from './helpers/app.ts';

let ctx: TestContext;
before(async () => {
  ctx = await createTestContext();
});
after(async () => ctx?.close());

describe('GET /api/health', () => {
  test('public; 200 with database, queue and browser pool status', async () => {
    const res = await ctx.inject({ method: 'GET', url: '/api/health' });
    assert.equal(res.statusCode, 200);
    const data = res.json().data;
    assert.equal(res.json().success, true);
    assert.equal(data.status, 'ok');
    assert.equal(data.database.status, 'ok');
    assert.equal(data.database.kind, process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite');
    assert.equal(data.queue.status, 'ok');
    assert.equal(typeof data.queue.queued, 'number');
    assert.ok(['ready', 'unavailable'].includes(data.browserPool.status));
  });

  test('503 when the database does not answer', async () => {
    const failing = {
      ...ctx.deps.database,
      db: { ...ctx.deps.db, execute: () => Promise.reject(new Error('connection refused')) },
    };
    const app = await buildApp(asAnotherInstance({ ...ctx.deps, database: failing as never }));
    try {
      const res = await app.inject({ method: 'GET', url: '/api/health' });
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().success, false);
      assert.equal(res.json().error.code, 'SERVICE_UNAVAILABLE');
    } finally {
      await app.close();
    }
  });
});

describe('API reference', () => {
  test('OpenAPI 3.1 generated from the route schemas', async () => {
    const res = await ctx.inject({ method: 'GET', url: '/api/openapi.json' });
    assert.equal(res.statusCode, 200);
    const doc = res.json();
    assert.equal(doc.openapi, '3.1.0');
    // The project's license (LICENSE, package.json) is the document's too.
    assert.deepEqual(doc.info.license, { name: 'Apache-2.0', identifier: 'Apache-2.0' });
    const signup = doc.paths['/api/auth/signup'].post;
    assert.deepEqual(signup.requestBody.content['application/json'].schema.required.sort(), [
      'email',
      'password',
      'privacyAccepted',
      'termsAccepted',
    ]);
    assert.ok(signup.responses['201'] && signup.responses['429']);
    // Every documented operation has a summary and at least one response.
    let operations = 0;
    for (const [path, item] of Object.entries<Record<string, { summary?: string; responses?: object }>>(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        operations++;
        assert.ok(op.summary, `${method.toUpperCase()} ${path} has no summary`);
        assert.ok(op.responses && Object.keys(op.responses).length, `${method.toUpperCase()} ${path} has no responses`);
      }
    }
    assert.ok(operations >= 8, `only ${operations} operations documented`);
  });

  test('the license is Apache-2.0 in LICENSE, package.json and the OpenAPI document alike', async () => {
    const root = new URL('../', import.meta.url);
    assert.equal(JSON.parse(fs.readFileSync(new URL('package.json', root), 'utf8')).license, 'Apache-2.0');
    const license = fs.readFileSync(new URL('LICENSE', root), 'utf8');
    assert.match(license, /^\s*Apache License\s+Version 2\.0, January 2004/);
    assert.match(license, /END OF TERMS AND CONDITIONS/);
    const doc = (await ctx.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    assert.equal(doc.info.license.identifier, 'Apache-2.0');
  });

  test('every response schema of every route compiles to a serializer (they compile on first use)', () => {
    assert.ok(compileAllResponseSerializers() > 100);
  });

  test('/docs serves the reference page', async () => {
    const res = await ctx.inject({ method: 'GET', url: '/docs' });
    assert.ok([200, 301, 302].includes(res.statusCode));
    const page =
      res.statusCode === 200 ? res : await ctx.inject({ method: 'GET', url: res.headers.location as string });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /text\/html/);
    assert.match(page.body, /openapi\.json/);
    // The page's script is served by the service itself (no CDN: self-hosted installs may be offline).
    const script = await ctx.inject({ method: 'GET', url: '/docs/js/scalar.js' });
    assert.equal(script.statusCode, 200);
    assert.ok(script.body.length > 10_000);
  });
});
