import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';

// Every documented operation, fed malformed ids, queries and bodies: never a 500, always the envelope.
let ctx: TestContext;
let user: TestUser;
let doc: { paths: Record<string, Record<string, Operation>> };
before(async () => {
  ctx = await createTestContext({ workers: false });
  user = await ctx.signup();
  doc = (await ctx.inject({ method: 'GET', url: '/api/openapi.json' })).json();
});
after(async () => ctx?.close());

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
}
interface Operation {
  parameters?: Array<{ in: string; name: string; schema?: Schema }>;
  requestBody?: { content?: Record<string, { schema?: Schema }> };
}

const badIds = [
  'not-a-uuid',
  '00000000-0000-0000-0000-000000000000',
  "1' OR '1'='1",
  'x'.repeat(300),
  '%00',
  '..%2F..%2Fetc',
];
const wrongFor = (s: Schema | undefined): unknown[] => {
  const t = Array.isArray(s?.type) ? s!.type[0] : s?.type;
  if (t === 'string') return [12345, {}, ['a'], 'x'.repeat(100_000)];
  if (t === 'number' || t === 'integer') return ['many', -1e308, 1.5, {}];
  if (t === 'boolean') return ['yes', 2];
  if (t === 'array') return ['not-an-array', [{ nested: true }], Array.from({ length: 5000 }, () => 'x')];
  if (t === 'object') return ['text', [1, 2]];
  return [null, { deeply: { nested: [1, { a: null }] } }];
};

let counter = 0;
async function expectClientError(method: string, url: string, options: { payload?: unknown; raw?: string }) {
  const headers: Record<string, string> = { ...user.headers };
  if (options.raw !== undefined) headers['content-type'] = 'application/json';
  const res = await ctx.inject({
    method: method.toUpperCase() as 'GET',
    url,
    headers,
    remoteAddress: `127.9.${Math.floor(++counter / 250) % 250}.${(counter % 250) + 1}`,
    ...(options.raw !== undefined
      ? { payload: options.raw }
      : options.payload !== undefined
        ? { payload: options.payload as object }
        : {}),
  });
  assert.ok(
    res.statusCode < 500,
    `${method.toUpperCase()} ${url} ${JSON.stringify(options).slice(0, 200)} → ` +
      `${res.statusCode} ${res.body.slice(0, 300)}`,
  );
  if (res.statusCode >= 400 && String(res.headers['content-type']).includes('json')) {
    const body = res.json();
    assert.equal(body.success, false, `${method} ${url}`);
    assert.equal(typeof body.error?.code, 'string', `${method} ${url}`);
    if (body.error.code === 'VALIDATION_ERROR')
      assert.ok(Array.isArray(body.error.details) && body.error.details.length, `${method} ${url} names no field`);
  }
}

describe('bad input never causes a 500', () => {
  test('every documented operation', async () => {
    let operations = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (path.includes('/deletion') && method === 'post') continue; // sends mail; covered in deletion tests
        operations++;
        const params = (op.parameters ?? []).filter((p) => p.in === 'path');
        const urls = params.length ? badIds.map((id) => path.replace(/\{[^}]+\}/g, encodeURIComponent(id))) : [path];
        for (const url of urls) await expectClientError(method, url, {});
        const concrete = urls[0]!;
        for (const q of (op.parameters ?? []).filter((p) => p.in === 'query')) {
          for (const value of ['', 'null', '-1', '1e999', 'x'.repeat(5000), '[]', '{"a":1}']) {
            await expectClientError(
              method,
              `${concrete}?${encodeURIComponent(q.name)}=${encodeURIComponent(value)}`,
              {},
            );
          }
        }
        const bodySchema = op.requestBody?.content?.['application/json']?.schema;
        if (!bodySchema) continue;
        for (const raw of ['{', '[]', '"text"', 'null', '{"a":', '{}'])
          await expectClientError(method, concrete, { raw });
        for (const [name, prop] of Object.entries(bodySchema.properties ?? {})) {
          for (const wrong of wrongFor(prop)) await expectClientError(method, concrete, { payload: { [name]: wrong } });
        }
      }
    }
    assert.ok(operations > 40, `only ${operations} operations exercised`);
  });

  test('a badly encoded URL is a 400 naming `url`; an over-long id is a 404', async () => {
    const bad = await ctx.inject({ method: 'GET', url: '/api/projects/%E0%A4%A', headers: user.headers });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().error.details[0].field, 'url');
    const long = await ctx.inject({ method: 'GET', url: `/api/leads/${'x'.repeat(600)}`, headers: user.headers });
    assert.equal(long.statusCode, 404);
    assert.deepEqual(long.json(), { success: false, error: { code: 'NOT_FOUND', message: 'Resource not found' } });
  });

  test(
    'an id of 201–500 characters names nothing: 404 NOT_FOUND on every GET and DELETE of /…/{id}, not a ' + '400',
    async () => {
      const id = 'a'.repeat(300);
      const named = ['/api/matching/rules/{id}', '/api/campaigns/{id}', '/api/projects/{id}'];
      const paths = Object.keys(doc.paths).filter((p) => p.endsWith('/{id}') && (p.match(/\{/g) ?? []).length === 1);
      for (const p of named) assert.ok(paths.includes(p), p);
      for (const path of paths) {
        for (const method of ['get', 'delete'].filter((m) => doc.paths[path]![m])) {
          const res = await ctx.inject({
            method: method.toUpperCase() as 'GET',
            url: path.replace('{id}', id),
            headers: user.headers,
          });
          assert.equal(res.statusCode, 404, `${method.toUpperCase()} ${path}: ${res.body}`);
          assert.equal(res.json().error.code, 'NOT_FOUND', `${method.toUpperCase()} ${path}`);
        }
      }
    },
  );
});

describe('input PostgreSQL cannot store', () => {
  test('a NUL character anywhere in a body or query is a 400 naming the field', async () => {
    const cases: Array<[string, string, unknown, string]> = [
      ['POST', '/api/projects', { name: 'a\u0000b' }, 'name'],
      ['POST', '/api/leads', { sourceUrl: 'https://example.com', firstName: 'x\u0000' }, 'firstName'],
      [
        'POST',
        '/api/profile-types',
        { name: 'T', slug: 't', fields: [{ name: 'a', type: 'string', enum: ['x\u0000'] }] },
        'fields.0.enum.0',
      ],
      ['GET', '/api/leads?company=x%00y', undefined, 'company'],
      ['POST', '/api/api-keys', { name: 'k\u0000', scopes: ['*'] }, 'name'],
    ];
    for (const [method, url, payload, field] of cases) {
      const res = await ctx.inject({
        method: method as 'GET',
        url,
        headers: user.headers,
        ...(payload ? { payload: payload as object } : {}),
      });
      assert.equal(res.statusCode, 400, `${method} ${url}: ${res.body}`);
      assert.equal(res.json().error.details[0].field, field);
    }
    const signup = await ctx.inject({
      method: 'POST',
      url: '/api/auth/signup',
      remoteAddress: '127.8.0.1',
      payload: {
        email: 'nul@example.com',
        password: 'long enough pw',
        name: 'a\u0000b',
        termsAccepted: true,
        privacyAccepted: true,
      },
    });
    assert.equal(signup.statusCode, 400);
    const rows = await ctx.deps.database.query(`SELECT 1 FROM users WHERE email = 'nul@example.com'`);
    assert.equal(rows.length, 0, 'no partial write');
  });
});

describe('logs', () => {
  test('a failed query is logged without its bound parameters (no password or key hashes)', async () => {
    const { scrubError } = await import('../src/shared/logger.ts');
    const err = new Error(
      'Failed query: insert into "users" values ($1, $2)\nparams: a@example.com,$argon2id$v=19$m=19456$secret',
      {
        cause: Object.assign(new Error('invalid byte sequence'), { code: '22021' }),
      },
    );
    Object.assign(err, { params: ['a@example.com', '$argon2id$secret'] });
    const out = JSON.stringify(scrubError(err));
    assert.ok(!out.includes('argon2'), out);
    assert.ok(out.includes('Failed query: insert into'), 'the statement itself stays');
    assert.ok(out.includes('invalid byte sequence'), 'the cause stays');
  });
});
