import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createClient } from '@hey-api/openapi-ts';
import { buildApp } from '../src/app.ts';
import { openApiTags, operationIds } from '../src/shared/openapi.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';

// The OpenAPI document as client generators read it: operationIds, tags, servers, named components,
// and a client generated from it (@hey-api/openapi-ts) that type-checks and talks to the service.

interface Schema {
  $ref?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  required?: string[];
}
interface Operation {
  operationId?: string;
  tags?: string[];
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}
interface Document {
  servers: Array<{ url: string }>;
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

let ctx: TestContext;
let user: TestUser;
let doc: Document;
before(async () => {
  ctx = await createTestContext({ workers: false });
  user = await ctx.signup();
  doc = (await ctx.inject({ method: 'GET', url: '/api/openapi.json' })).json();
});
after(async () => ctx?.close());

const operations = () =>
  Object.entries(doc.paths).flatMap(([p, item]) =>
    Object.entries(item).map(([method, op]) => ({ key: `${method.toUpperCase()} ${p}`, op })),
  );
const ref = (name: string) => `#/components/schemas/${name}`;
/** The `data` of an answer: its schema, through a component when it is one. */
function dataOf(p: string, method: string, status: string): Schema {
  const data = doc.paths[p]?.[method]?.responses[status]?.content?.['application/json']?.schema.properties?.data;
  assert.ok(data, `${method.toUpperCase()} ${p} answers ${status} with no data`);
  return data.$ref ? (doc.components.schemas[data.$ref.replace(ref(''), '')] ?? {}) : data;
}

describe('OpenAPI document for client generators', () => {
  test('every operation has the operationId of the table, each unique; the table names no other route', () => {
    const keys = operations().map(({ key, op }) => {
      assert.equal(op.operationId, operationIds[key], `${key}: ${op.operationId}, the table has ${operationIds[key]}`);
      return key;
    });
    assert.deepEqual(keys.toSorted(), Object.keys(operationIds).toSorted(), 'documented operations ≠ the table');
    const ids = Object.values(operationIds);
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
    for (const id of ids) assert.match(id, /^[a-z][a-zA-Z]+$/, `${id} is camelCase`);
    assert.equal(operationIds['GET /api/leads'], 'listLeads');
    assert.equal(operationIds['POST /api/matching/execute'], 'executeMatchingRule');
  });

  test('one tag per operation, each declared at the top with a description; servers set', () => {
    assert.deepEqual(doc.tags, openApiTags);
    const declared = new Set(doc.tags.map((t) => t.name));
    const used = new Set<string>();
    for (const { key, op } of operations()) {
      const [tag, ...more] = op.tags ?? [];
      assert.ok(tag && more.length === 0, `${key} has tags ${JSON.stringify(op.tags)}`);
      assert.ok(declared.has(tag), `${key}: tag ${tag} is not declared`);
      used.add(tag);
    }
    assert.deepEqual(
      [...declared].filter((t) => !used.has(t)),
      [],
      'declared tags no route uses',
    );
    for (const tag of doc.tags) assert.ok(tag.description.length > 10, tag.name);
    assert.deepEqual(
      doc.servers.map((s) => s.url),
      ['/'],
    );
  });

  test('resource views, pagination and the error envelope are shared components', () => {
    const names = Object.keys(doc.components.schemas);
    const expected = [
      'ErrorResponse',
      'SuccessResponse',
      'NextCursor',
      'Project',
      'Source',
      'Job',
      'Lead',
      'LeadListItem',
      'Profile',
      'ProfileType',
      'MatchingRule',
      'MatchingResult',
      'Campaign',
      'Account',
      'Conversation',
      'ApiKey',
      'User',
    ];
    for (const name of expected) {
      assert.ok(names.includes(name), `component ${name} missing (has ${names.join(', ')})`);
    }
    assert.deepEqual(names, names.toSorted(), 'components sorted by name');
    assert.equal(dataOf('/api/leads', 'get', '200').properties?.leads?.items?.$ref, ref('LeadListItem'));
    assert.equal(dataOf('/api/leads', 'get', '200').properties?.nextCursor?.$ref, ref('NextCursor'));
    assert.equal(dataOf('/api/leads/{id}', 'get', '200').properties?.lead?.$ref, ref('Lead'));
    assert.equal(dataOf('/api/projects', 'post', '201').properties?.project?.$ref, ref('Project'));
    for (const { key, op } of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue;
        assert.equal(response.content?.['application/json']?.schema.$ref, ref('ErrorResponse'), `${key} ${status}`);
      }
    }
    // Exhaustive enum-keyed records are named properties (a `required` list names only real properties).
    const byStatus = dataOf('/api/profiles/stats', 'get', '200').properties?.byStatus;
    const statuses = ['ARCHIVED', 'DISQUALIFIED', 'NEW', 'QUALIFIED', 'REVIEWED'];
    assert.deepEqual(Object.keys(byStatus?.properties ?? {}).sort(), statuses);
    assert.deepEqual(byStatus?.required?.toSorted(), statuses);
  });

  test('the same document on every build', async () => {
    const again = await buildApp(ctx.deps);
    try {
      await again.ready();
      assert.equal(JSON.stringify(again.swagger()), JSON.stringify(doc));
    } finally {
      await again.close();
    }
  });
});

describe('a client generated from the document', () => {
  // Typed calls by operationId, with component types; the last call must not type-check.
  const usage = `
import { createClient, createConfig } from './client/client/index.ts';
import { createLead, createProject, getLead, listLeads } from './client/index.ts';
import type { Lead, LeadListItem, NextCursor, Project } from './client/index.ts';

export async function run(baseUrl: string, apiKey: string) {
  const client = createClient(createConfig({ baseUrl, auth: () => apiKey }));
  const created = await createProject({ client, body: { name: 'Generated client' }, throwOnError: true });
  const project: Project = created.data.data.project;
  const body = { sourceUrl: 'https://example.com/team', firstName: 'Ada', company: 'Acme' };
  const lead: Lead = (await createLead({ client, body, throwOnError: true })).data.data.lead;
  const one = await getLead({ client, path: { id: lead.id }, throwOnError: true });
  const page = await listLeads({ client, query: { limit: 1, company: 'acme' }, throwOnError: true });
  const leads: LeadListItem[] = page.data.data.leads;
  const next: NextCursor = page.data.data.nextCursor;
  const missing = await getLead({ client, path: { id: '00000000-0000-0000-0000-000000000000' } });
  const notFound = { status: missing.response?.status, code: missing.error?.error.code };
  return { project, lead: one.data.data.lead, leads, next, missing: notFound };
}

export function neverCalled() {
  // @ts-expect-error: a project's name is a string
  return createProject({ body: { name: 42 } });
}
`;

  let dir: string;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-client-'));
    await createClient({
      input: structuredClone(doc) as never,
      output: { path: path.join(dir, 'client'), module: { extension: '.ts' }, tsConfigPath: null },
      plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
      logs: { level: 'silent' },
    });
    fs.writeFileSync(path.join(dir, 'usage.ts'), usage);
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('type-checks under strict TypeScript (tsc --noEmit)', () => {
    const tsconfig = {
      compilerOptions: {
        target: 'es2024',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        strict: true,
        noEmit: true,
        allowImportingTsExtensions: true,
        skipLibCheck: true,
        lib: ['es2024', 'dom', 'dom.iterable'],
        types: [],
      },
      files: ['usage.ts'],
    };
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
    const tsc = path.resolve(import.meta.dirname, '../node_modules/typescript/bin/tsc');
    const result = spawnSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8' });
    assert.equal(result.status, 0, `tsc failed:\n${result.stdout}${result.stderr}`);
  });

  test('calls the running service', async () => {
    await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = ctx.app.server.address() as { port: number };
    const { run } = await import(path.join(dir, 'usage.ts'));
    const result = await run(`http://127.0.0.1:${port}`, user.apiKey);
    assert.equal(result.project.name, 'Generated client');
    assert.equal(result.lead.firstName, 'Ada');
    assert.equal(result.lead.company, 'Acme');
    assert.deepEqual(
      result.leads.map((l: { id: string }) => l.id),
      [result.lead.id],
    );
    assert.equal(result.next, null);
    assert.deepEqual(result.missing, { status: 404, code: 'NOT_FOUND' });
    const stored = await ctx.call(user, 'GET', `/api/projects/${result.project.id}`);
    assert.equal(stored.json().data.project.name, 'Generated client');
  });
});
