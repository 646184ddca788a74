import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq, inArray } from 'drizzle-orm';
import { jobs, leads, profiles, profileTypes, projects, sources } from '../src/db/schema/index.ts';
import { newId } from '../src/shared/ids.ts';
import { createTwoUserContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertValidation } from './helpers/assertions.ts';

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
before(async () => {
  ({ ctx, alice, bob } = await createTwoUserContext({ workers: false }));
});
after(async () => ctx?.close());

async function createProject(user: TestUser, body: Record<string, unknown> = { name: 'Project' }) {
  const res = await ctx.call(user, 'POST', '/api/projects', body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.project as {
    id: string;
    name: string;
    description: string | null;
    color: string | null;
    createdAt: string;
  };
}

const unknownId = '0190a8a0-0000-7000-8000-000000000000';

describe('POST /api/projects', () => {
  test('201 with the full project; name trimmed, colour normalised to lower-case #rrggbb', async () => {
    const res = await ctx.call(alice, 'POST', '/api/projects', {
      name: '  Lenders Q3  ',
      description: 'West coast',
      color: '#1E90FF',
    });
    assert.equal(res.statusCode, 201);
    const { project } = res.json().data;
    assert.equal(project.name, 'Lenders Q3');
    assert.equal(project.description, 'West coast');
    assert.equal(project.color, '#1e90ff');
    assert.match(project.id, /^[0-9a-f-]{36}$/);
    assert.ok(Date.parse(project.createdAt));
    const [row] = await ctx.deps.db.select().from(projects).where(eq(projects.id, project.id));
    assert.equal(row!.userId, alice.id);
    assert.equal(row!.color, '#1e90ff');
  });

  test('#rgb expands to #rrggbb; description and color are optional', async () => {
    assert.equal((await createProject(alice, { name: 'Short', color: '#0aF' })).color, '#00aaff');
    const bare = await createProject(alice, { name: 'Bare' });
    assert.equal(bare.description, null);
    assert.equal(bare.color, null);
  });

  const invalid: Array<[string, unknown, string]> = [
    ['name missing', { description: 'x' }, 'name'],
    ['name blank', { name: '   ' }, 'name'],
    ['name too long', { name: 'x'.repeat(201) }, 'name'],
    ['name not a string', { name: 42 }, 'name'],
    ['color not hex', { name: 'A', color: 'red' }, 'color'],
    ['color wrong length', { name: 'A', color: '#12345' }, 'color'],
    ['color without #', { name: 'A', color: '112233' }, 'color'],
    ['description wrong type', { name: 'A', description: ['x'] }, 'description'],
  ];
  for (const [name, payload, field] of invalid) {
    test(`400 VALIDATION_ERROR naming ${field}: ${name}`, async () =>
      assertValidation(await ctx.call(alice, 'POST', '/api/projects', payload), field));
  }

  test('malformed JSON is a 400, and no credential is a 401', async () => {
    const bad = await ctx.inject({
      method: 'POST',
      url: '/api/projects',
      headers: { ...alice.headers, 'content-type': 'application/json' },
      payload: '{"name":',
    });
    assertValidation(bad, 'body');
    const anon = await ctx.call(undefined, 'POST', '/api/projects', { name: 'x' });
    assert.equal(anon.statusCode, 401);
    assert.equal(anon.json().error.code, 'UNAUTHORIZED');
  });

  test('a key with projects:read only cannot create (403 INSUFFICIENT_SCOPE) but can list', async () => {
    const minted = await ctx.call(alice, 'POST', '/api/api-keys', { name: 'ro', scopes: ['projects:read'] });
    assert.equal(minted.statusCode, 201, minted.body);
    const headers = { authorization: `Bearer ${minted.json().data.apiKey.key}` };
    const denied = await ctx.inject({ method: 'POST', url: '/api/projects', headers, payload: { name: 'nope' } });
    assert.equal(denied.statusCode, 403);
    assert.equal(denied.json().error.code, 'INSUFFICIENT_SCOPE');
    assert.equal((await ctx.inject({ method: 'GET', url: '/api/projects', headers })).statusCode, 200);
  });
});

describe('GET /api/projects', () => {
  test('cursor pagination walks every project once, newest first; other users see none of them', async () => {
    const user = await ctx.signup();
    const created: string[] = [];
    for (let i = 0; i < 7; i++) created.push((await createProject(user, { name: `P${i}` })).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await ctx.call(user, 'GET', `/api/projects?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(res.statusCode, 200);
      const { projects: page, nextCursor } = res.json().data;
      assert.ok(page.length <= 3);
      for (const p of page)
        assert.deepEqual(Object.keys(p).sort(), ['color', 'createdAt', 'description', 'id', 'name', 'updatedAt']);
      seen.push(...page.map((p: { id: string }) => p.id));
      cursor = nextCursor;
      pages++;
    } while (cursor);
    assert.equal(pages, 3);
    assert.deepEqual(seen, [...created].reverse());
    const other = await ctx.call(bob, 'GET', '/api/projects?limit=1000');
    assert.ok(!other.json().data.projects.some((p: { id: string }) => created.includes(p.id)));
  });

  test('bad limit or cursor is a 400 naming it', async () => {
    assertValidation(await ctx.call(alice, 'GET', '/api/projects?limit=0'), 'limit');
    assertValidation(await ctx.call(alice, 'GET', '/api/projects?limit=abc'), 'limit');
    assertValidation(await ctx.call(alice, 'GET', '/api/projects?limit=1001'), 'limit');
    assertValidation(await ctx.call(alice, 'GET', '/api/projects?cursor=not-a-cursor'), 'cursor');
  });
});

describe('GET /api/projects/{id}', () => {
  test("200 for the owner; 404 for unknown, malformed or another user's id", async () => {
    const p = await createProject(alice, { name: 'Mine', color: '#abc' });
    const res = await ctx.call(alice, 'GET', `/api/projects/${p.id}`);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json().data.project, { ...p, updatedAt: res.json().data.project.updatedAt });
    for (const [user, id] of [
      [bob, p.id],
      [alice, unknownId],
      [alice, 'not-a-uuid'],
      [alice, "1' OR '1'='1"],
    ] as const) {
      const miss = await ctx.call(user, 'GET', `/api/projects/${encodeURIComponent(id)}`);
      assert.equal(miss.statusCode, 404, id);
      assert.equal(miss.json().error.code, 'NOT_FOUND');
    }
  });
});

describe('PATCH /api/projects/{id}', () => {
  test('200 with the updated project; null clears description and colour', async () => {
    const p = await createProject(alice, { name: 'Old', description: 'd', color: '#000000' });
    const res = await ctx.call(alice, 'PATCH', `/api/projects/${p.id}`, { name: ' New ', color: '#FFF' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().data.project.name, 'New');
    assert.equal(res.json().data.project.color, '#ffffff');
    assert.equal(res.json().data.project.description, 'd');
    const cleared = await ctx.call(alice, 'PATCH', `/api/projects/${p.id}`, { description: null, color: null });
    assert.equal(cleared.statusCode, 200);
    const [row] = await ctx.deps.db.select().from(projects).where(eq(projects.id, p.id));
    assert.equal(row!.name, 'New');
    assert.equal(row!.description, null);
    assert.equal(row!.color, null);
  });

  test("403 FORBIDDEN on another user's project (left unchanged); 404 unknown or malformed", async () => {
    const p = await createProject(alice, { name: 'Alice only' });
    const res = await ctx.call(bob, 'PATCH', `/api/projects/${p.id}`, { name: 'Hijacked' });
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().error.code, 'FORBIDDEN');
    const [row] = await ctx.deps.db.select().from(projects).where(eq(projects.id, p.id));
    assert.equal(row!.name, 'Alice only');
    for (const id of [unknownId, 'nope']) {
      const miss = await ctx.call(alice, 'PATCH', `/api/projects/${id}`, { name: 'x' });
      assert.equal(miss.statusCode, 404);
      assert.equal(miss.json().error.code, 'NOT_FOUND');
    }
  });

  test('400 for bad values, naming the field; an empty body changes nothing', async () => {
    const p = await createProject(alice);
    const empty = await ctx.call(alice, 'PATCH', `/api/projects/${p.id}`, {});
    assert.equal(empty.statusCode, 200);
    assert.equal(empty.json().data.project.name, p.name);
    assertValidation(await ctx.call(alice, 'PATCH', `/api/projects/${p.id}`, { name: '' }), 'name');
    assertValidation(await ctx.call(alice, 'PATCH', `/api/projects/${p.id}`, { name: null }), 'name');
    assertValidation(await ctx.call(alice, 'PATCH', `/api/projects/${p.id}`, { color: '#ggg' }), 'color');
  });
});

describe('DELETE /api/projects/{id}', () => {
  test("403 on another user's project, 404 unknown or malformed, 200 then gone", async () => {
    const p = await createProject(alice);
    const forbidden = await ctx.call(bob, 'DELETE', `/api/projects/${p.id}`);
    assert.equal(forbidden.statusCode, 403);
    assert.equal(forbidden.json().error.code, 'FORBIDDEN');
    assert.equal((await ctx.call(alice, 'GET', `/api/projects/${p.id}`)).statusCode, 200);
    assert.equal((await ctx.call(alice, 'DELETE', `/api/projects/${unknownId}`)).statusCode, 404);
    assert.equal((await ctx.call(alice, 'DELETE', '/api/projects/xyz')).statusCode, 404);
    const res = await ctx.call(alice, 'DELETE', `/api/projects/${p.id}`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().success, true);
    assert.equal((await ctx.call(alice, 'GET', `/api/projects/${p.id}`)).statusCode, 404);
    assert.equal((await ctx.call(alice, 'DELETE', `/api/projects/${p.id}`)).statusCode, 404);
  });

  test("deletes the project's sources, jobs, leads and profiles; other projects keep theirs", async () => {
    const db = ctx.deps.db;
    const doomed = await createProject(alice, { name: 'Doomed' });
    const kept = await createProject(alice, { name: 'Kept' });
    const [type] = await db
      .insert(profileTypes)
      .values({ userId: alice.id, name: 'T', slug: `t-${newId().slice(-8)}`, fields: [{ name: 'n', type: 'string' }] })
      .returning();
    async function seed(projectId: string | null, tag: string) {
      const [source] = await db
        .insert(sources)
        .values({ userId: alice.id, projectId, name: `S ${tag}`, url: 'https://example.com', scrapeType: 'STATIC' })
        .returning();
      const [job] = await db
        .insert(jobs)
        .values({ userId: alice.id, sourceId: source!.id, name: `J ${tag}` })
        .returning();
      const leadRows = await db
        .insert(leads)
        .values(
          [1, 2, 3].map((i) => ({
            userId: alice.id,
            sourceId: source!.id,
            jobId: job!.id,
            email: `${tag}${i}@example.com`,
          })),
        )
        .returning();
      const profileRows = await db
        .insert(profiles)
        .values([
          {
            userId: alice.id,
            profileTypeId: type!.id,
            sourceId: source!.id,
            jobId: job!.id,
            leadId: leadRows[0]!.id,
            data: { n: tag },
          },
          { userId: alice.id, profileTypeId: type!.id, sourceId: source!.id, data: { n: `${tag} by source` } },
          { userId: alice.id, profileTypeId: type!.id, jobId: job!.id, data: { n: `${tag} by job` } },
        ])
        .returning();
      return {
        source: source!,
        job: job!,
        leadIds: leadRows.map((l) => l.id),
        profileIds: profileRows.map((p) => p.id),
      };
    }
    const gone = await seed(doomed.id, 'gone');
    const stay = await seed(kept.id, 'stay');
    const loose = await seed(null, 'loose');
    const [manual] = await db
      .insert(profiles)
      .values({ userId: alice.id, profileTypeId: type!.id, data: { n: 'manual' } })
      .returning();

    const res = await ctx.call(alice, 'DELETE', `/api/projects/${doomed.id}`);
    assert.equal(res.statusCode, 200);

    assert.equal((await db.select().from(projects).where(eq(projects.id, doomed.id))).length, 0);
    assert.equal((await db.select().from(sources).where(eq(sources.id, gone.source.id))).length, 0);
    assert.equal((await db.select().from(jobs).where(eq(jobs.id, gone.job.id))).length, 0);
    assert.equal((await db.select().from(leads).where(inArray(leads.id, gone.leadIds))).length, 0);
    assert.equal((await db.select().from(profiles).where(inArray(profiles.id, gone.profileIds))).length, 0);

    for (const s of [stay, loose]) {
      assert.equal((await db.select().from(sources).where(eq(sources.id, s.source.id))).length, 1);
      assert.equal((await db.select().from(jobs).where(eq(jobs.id, s.job.id))).length, 1);
      assert.equal((await db.select().from(leads).where(inArray(leads.id, s.leadIds))).length, 3);
      assert.equal((await db.select().from(profiles).where(inArray(profiles.id, s.profileIds))).length, 3);
    }
    assert.equal((await db.select().from(profiles).where(eq(profiles.id, manual!.id))).length, 1);
    assert.equal((await db.select().from(profileTypes).where(eq(profileTypes.id, type!.id))).length, 1);
    assert.equal((await ctx.call(alice, 'GET', `/api/projects/${kept.id}`)).statusCode, 200);
  });
});
