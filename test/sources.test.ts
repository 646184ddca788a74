import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { jobs, leads, profiles, sources } from '../src/db/schema/index.ts';
import { createTwoUserContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
const clock = {
  current: new Date('2026-11-21T10:00:00.000Z'),
  now() {
    return new Date(this.current);
  },
};

before(async () => {
  ({ ctx, alice, bob } = await createTwoUserContext({ workers: false, clock }));
});
after(async () => ctx?.close());

const unknownId = '0190a8a0-0000-7000-8000-000000000000';
const base = {
  name: 'Lenders directory',
  url: 'https://example.com/lenders',
  scrapeType: 'STATIC',
  selectors: { item: '.card', email: 'a.mail@href' },
};

async function createSource(user: TestUser, body: Record<string, unknown> = base) {
  const res = await ctx.call(user, 'POST', '/api/sources', body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.source;
}

describe('POST /api/sources', () => {
  test('201 DRAFT with everything stored; scheduleType defaults to MANUAL', async () => {
    const source = await createSource(alice, {
      ...base,
      description: 'Mortgage lenders',
      selectors: { ...base.selectors, license: '.nmls' },
    });
    assert.equal(source.status, 'DRAFT');
    assert.equal(source.name, 'Lenders directory');
    assert.equal(source.scheduleType, 'MANUAL');
    assert.equal(source.nextRunAt, null);
    assert.deepEqual(source.selectors, { item: '.card', email: 'a.mail@href', license: '.nmls' });
    assert.equal(source.respectRobotsTxt, true);
    const [row] = await ctx.deps.db.select().from(sources).where(eq(sources.id, source.id));
    assert.equal(row!.userId, alice.id);
    assert.equal(row!.description, 'Mortgage lenders');
  });

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ['name missing', { ...base, name: undefined }, 'name'],
    ['url not http', { ...base, url: 'ftp://example.com' }, 'url'],
    ['url not a url', { ...base, url: 'lenders' }, 'url'],
    ['scrapeType unknown', { ...base, scrapeType: 'SOAP' }, 'scrapeType'],
    ['selectors missing', { ...base, selectors: undefined }, 'selectors'],
    ['selector not a string', { ...base, selectors: { email: 5 } }, 'selectors.email'],
    ['CSS that does not parse', { ...base, selectors: { email: 'a[href' } }, 'selectors.email'],
    ['XPath that does not parse', { ...base, selectors: { company: '//div[@class=' } }, 'selectors.company'],
    [
      'JSONPath that does not parse (API)',
      { ...base, scrapeType: 'API', selectors: { item: '$.data[' } },
      'selectors.item',
    ],
    ['scheduleType unknown', { ...base, scheduleType: 'YEARLY' }, 'scheduleType'],
    ['maxPages zero', { ...base, maxPages: 0 }, 'maxPages'],
    ['unknown crawl option', { ...base, options: { turbo: true } }, 'options'],
    ['options.maxPages not a number', { ...base, options: { maxPages: 'x' } }, 'options.maxPages'],
    ['options.maxPages as a string', { ...base, options: { maxPages: '3000' } }, 'options.maxPages'],
    ['options.maxPages above the limit', { ...base, options: { maxPages: 100_001 } }, 'options.maxPages'],
    [
      'options.respectRobotsTxt not a boolean',
      { ...base, options: { respectRobotsTxt: 'no' } },
      'options.respectRobotsTxt',
    ],
    ['options.domainDelayMs negative', { ...base, options: { domainDelayMs: -1 } }, 'options.domainDelayMs'],
    [
      'selectors.maxPages not a count',
      { ...base, selectors: { ...base.selectors, maxPages: 'lots' } },
      'selectors.maxPages',
    ],
    ['selectors.maxPages zero', { ...base, selectors: { ...base.selectors, maxPages: 0 } }, 'selectors.maxPages'],
  ];
  for (const [name, payload, field] of invalid) {
    test(`400 VALIDATION_ERROR naming ${field}: ${name}`, async () => {
      const before = await ctx.deps.db.select().from(sources);
      assertValidation(await ctx.call(alice, 'POST', '/api/sources', payload), field);
      assert.equal((await ctx.deps.db.select().from(sources)).length, before.length, 'nothing written');
    });
  }

  test('crawl settings in options, in their natural types; the old places still work and options wins', async () => {
    const inOptions = await createSource(alice, {
      ...base,
      options: { maxPages: 3000, respectRobotsTxt: false, domainDelayMs: 250, maxRetries: 0 },
    });
    assert.equal(inOptions.maxPages, 3000);
    assert.equal(inOptions.respectRobotsTxt, false);
    assert.deepEqual(inOptions.options, { domainDelayMs: 250, maxRetries: 0 });

    // Where the issue put it: among the selectors, as a number or a string; it is no selector.
    for (const maxPages of [3000, '3000']) {
      const s = await createSource(alice, {
        ...base,
        selectors: { ...base.selectors, maxPages, respectRobotsTxt: 'false', domainDelayMs: 5 },
      });
      assert.equal(s.maxPages, 3000);
      assert.equal(s.respectRobotsTxt, false);
      assert.deepEqual(s.selectors, base.selectors);
      assert.deepEqual(s.options, { domainDelayMs: 5 });
    }
    const both = await createSource(alice, {
      ...base,
      selectors: { ...base.selectors, maxPages: 10 },
      maxPages: 20,
      respectRobotsTxt: true,
      options: { maxPages: 30, respectRobotsTxt: false },
    });
    assert.deepEqual([both.maxPages, both.respectRobotsTxt], [30, false]);
    const topLevel = await createSource(alice, {
      ...base,
      selectors: { ...base.selectors, maxPages: 10 },
      maxPages: 20,
    });
    assert.equal(topLevel.maxPages, 20);

    const patched = await ctx.call(alice, 'PATCH', `/api/sources/${inOptions.id}`, { options: { maxPages: 7 } });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.equal(patched.json().data.source.maxPages, 7);
    assert.deepEqual(patched.json().data.source.options, {}, 'options replaced as a whole, as before');
    const viaSelectors = await ctx.call(alice, 'PATCH', `/api/sources/${inOptions.id}`, {
      selectors: { ...base.selectors, maxPages: '9', maxRetries: 2 },
    });
    assert.equal(viaSelectors.json().data.source.maxPages, 9);
    assert.deepEqual(viaSelectors.json().data.source.options, { maxRetries: 2 });
    assert.deepEqual(viaSelectors.json().data.source.selectors, base.selectors);
    assertValidation(
      await ctx.call(alice, 'PATCH', `/api/sources/${inOptions.id}`, { options: { maxPages: 'x' } }),
      'options.maxPages',
    );
  });

  test("projectId and profileTypeId must be the caller's: 404 naming the field", async () => {
    const project = (await ctx.call(bob, 'POST', '/api/projects', { name: 'Bob' })).json().data.project;
    const res = await ctx.call(alice, 'POST', '/api/sources', { ...base, projectId: project.id });
    assertError(res, 404, 'NOT_FOUND');
    assert.equal(res.json().error.details[0].field, 'projectId');
    const res2 = await ctx.call(alice, 'POST', '/api/sources', { ...base, profileTypeId: unknownId });
    assertError(res2, 404, 'NOT_FOUND');
    assert.equal(res2.json().error.details[0].field, 'profileTypeId');
  });
});

describe('GET /api/sources', () => {
  test('filters by status and project; other users see nothing', async () => {
    const project = (await ctx.call(alice, 'POST', '/api/projects', { name: 'P' })).json().data.project;
    const inProject = await createSource(alice, { ...base, name: 'In project', projectId: project.id });
    const other = await createSource(alice, { ...base, name: 'Elsewhere' });
    await ctx.call(alice, 'POST', `/api/sources/${other.id}/activate`);

    const byProject = (await ctx.call(alice, 'GET', `/api/sources?projectId=${project.id}`)).json().data.sources;
    assert.deepEqual(
      byProject.map((s: { id: string }) => s.id),
      [inProject.id],
    );
    const active = (await ctx.call(alice, 'GET', '/api/sources?status=ACTIVE')).json().data.sources;
    assert.ok(active.some((s: { id: string }) => s.id === other.id));
    assert.ok(active.every((s: { status: string }) => s.status === 'ACTIVE'));
    const first = (await ctx.call(alice, 'GET', '/api/sources?limit=1')).json().data;
    assert.equal(first.sources.length, 1);
    assert.ok(first.nextCursor);
    assert.deepEqual((await ctx.call(bob, 'GET', '/api/sources')).json().data.sources, []);
    assertValidation(await ctx.call(alice, 'GET', '/api/sources?status=LIVE'), 'status');
    assertValidation(await ctx.call(alice, 'GET', '/api/sources?projectId=nope'), 'projectId');
  });
});

describe('one source', () => {
  test("GET, PATCH and DELETE of another user's source are 404", async () => {
    const source = await createSource(alice);
    for (const [method, url, body] of [
      ['GET', `/api/sources/${source.id}`],
      ['PATCH', `/api/sources/${source.id}`, { name: 'Mine' }],
      ['DELETE', `/api/sources/${source.id}`],
      ['POST', `/api/sources/${source.id}/activate`],
    ] as const) {
      assertError(await ctx.call(bob, method, url, body), 404, 'NOT_FOUND');
    }
    assertError(await ctx.call(alice, 'GET', `/api/sources/${unknownId}`), 404, 'NOT_FOUND');
    assertError(await ctx.call(alice, 'GET', '/api/sources/not-a-uuid'), 404, 'NOT_FOUND');
    assert.equal((await ctx.call(alice, 'GET', `/api/sources/${source.id}`)).json().data.source.name, base.name);
  });

  test('PATCH changes what it names; bad selectors are 400 and change nothing', async () => {
    const source = await createSource(alice);
    const res = await ctx.call(alice, 'PATCH', `/api/sources/${source.id}`, {
      name: 'Renamed',
      url: 'https://example.org/',
      selectors: { email: '//a/@href' },
    });
    assert.equal(res.statusCode, 200, res.body);
    const patched = res.json().data.source;
    assert.equal(patched.name, 'Renamed');
    assert.equal(patched.url, 'https://example.org/');
    assert.deepEqual(patched.selectors, { email: '//a/@href' });
    assertValidation(
      await ctx.call(alice, 'PATCH', `/api/sources/${source.id}`, { selectors: { email: 'a[' } }),
      'selectors.email',
    );
    assert.deepEqual((await ctx.call(alice, 'GET', `/api/sources/${source.id}`)).json().data.source.selectors, {
      email: '//a/@href',
    });
    const empty = await ctx.call(alice, 'PATCH', `/api/sources/${source.id}`, {});
    assert.equal(empty.json().data.source.updatedAt, patched.updatedAt);
  });

  test('DELETE removes the source with its jobs, leads and profiles', async () => {
    const source = await createSource(alice);
    await ctx.call(alice, 'POST', `/api/sources/${source.id}/activate`);
    const [job] = await ctx.deps.db
      .insert(jobs)
      .values({ userId: alice.id, sourceId: source.id, name: 'j', status: 'COMPLETED' })
      .returning();
    const [lead] = await ctx.deps.db
      .insert(leads)
      .values({ userId: alice.id, sourceId: source.id, jobId: job!.id, email: 'a@example.com' })
      .returning();
    const type = (
      await ctx.call(alice, 'POST', '/api/profile-types', {
        name: 'T',
        slug: `t-${source.id.slice(-6)}`,
        fields: [{ name: 'email', type: 'email' }],
      })
    ).json().data;
    await ctx.deps.db.insert(profiles).values({
      userId: alice.id,
      profileTypeId: type.id,
      sourceId: source.id,
      jobId: job!.id,
      leadId: lead!.id,
      data: { email: 'a@example.com' },
    });
    assert.equal((await ctx.deps.db.select().from(profiles).where(eq(profiles.sourceId, source.id))).length, 1);
    const res = await ctx.call(alice, 'DELETE', `/api/sources/${source.id}`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().success, true);
    assert.equal((await ctx.deps.db.select().from(jobs).where(eq(jobs.sourceId, source.id))).length, 0);
    assert.equal((await ctx.deps.db.select().from(leads).where(eq(leads.sourceId, source.id))).length, 0);
    assert.equal((await ctx.deps.db.select().from(profiles).where(eq(profiles.sourceId, source.id))).length, 0);
    assertError(await ctx.call(alice, 'GET', `/api/sources/${source.id}`), 404, 'NOT_FOUND');
  });
});

describe('activate and schedules', () => {
  test('DRAFT → ACTIVE; activating again is 400 ALREADY_ACTIVE', async () => {
    const source = await createSource(alice);
    const res = await ctx.call(alice, 'POST', `/api/sources/${source.id}/activate`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().data.source.status, 'ACTIVE');
    assert.equal(res.json().data.source.id, source.id);
    assertError(await ctx.call(alice, 'POST', `/api/sources/${source.id}/activate`), 400, 'ALREADY_ACTIVE');
  });

  test('two concurrent activations: one 200, one ALREADY_ACTIVE', async () => {
    const source = await createSource(alice);
    const answers = await Promise.all([0, 1].map(() => ctx.call(alice, 'POST', `/api/sources/${source.id}/activate`)));
    assert.deepEqual(answers.map((a) => a.statusCode).sort(), [200, 400]);
  });

  test(
    'nextRunAt: one period after activation for HOURLY/DAILY/WEEKLY, null for MANUAL and when ' + 'deactivated',
    async () => {
      const periods = { HOURLY: 3_600_000, DAILY: 86_400_000, WEEKLY: 604_800_000 } as const;
      for (const [scheduleType, ms] of Object.entries(periods)) {
        const source = await createSource(alice, { ...base, scheduleType });
        assert.equal(source.nextRunAt, null, 'a DRAFT source never runs by itself');
        const active = (await ctx.call(alice, 'POST', `/api/sources/${source.id}/activate`)).json().data.source;
        assert.equal(Date.parse(active.nextRunAt) - clock.current.getTime(), ms, scheduleType);
      }
      const manual = await createSource(alice);
      assert.equal(
        (await ctx.call(alice, 'POST', `/api/sources/${manual.id}/activate`)).json().data.source.nextRunAt,
        null,
      );
      const hourly = (await ctx.call(alice, 'PATCH', `/api/sources/${manual.id}`, { scheduleType: 'HOURLY' })).json()
        .data.source;
      assert.equal(Date.parse(hourly.nextRunAt) - clock.current.getTime(), 3_600_000);
      const paused = (await ctx.call(alice, 'PATCH', `/api/sources/${manual.id}`, { status: 'DRAFT' })).json().data
        .source;
      assert.equal(paused.nextRunAt, null);
      assert.equal(paused.status, 'DRAFT');
      assertValidation(await ctx.call(alice, 'PATCH', `/api/sources/${manual.id}`, { status: 'ACTIVE' }), 'status');
    },
  );
});

describe('POST /api/sources/batch', () => {
  test('201 with ids and count; scrapeType defaults to DYNAMIC, selectors to {}', async () => {
    const project = (await ctx.call(alice, 'POST', '/api/projects', { name: 'Batch' })).json().data.project;
    const res = await ctx.call(alice, 'POST', '/api/sources/batch', {
      projectId: project.id,
      sources: [
        { name: 'One', url: 'https://one.example.com', reasoning: 'Suggested' },
        {
          name: 'Two',
          url: 'https://two.example.com',
          scrapeType: 'API',
          selectors: { item: '$.people[*]', email: 'contact.email' },
        },
      ],
    });
    assert.equal(res.statusCode, 201, res.body);
    const { sources: created, count } = res.json().data;
    assert.equal(count, 2);
    assert.deepEqual(
      created.map((s: { name: string; status: string }) => [s.name, s.status]),
      [
        ['One', 'DRAFT'],
        ['Two', 'DRAFT'],
      ],
    );
    const one = (await ctx.call(alice, 'GET', `/api/sources/${created[0].id}`)).json().data.source;
    assert.equal(one.scrapeType, 'DYNAMIC');
    assert.deepEqual(one.selectors, {});
    assert.equal(one.reasoning, 'Suggested');
    assert.equal(one.projectId, project.id);
  });

  test('an empty batch and a bad item are 400; a bad item writes none of the batch', async () => {
    assertValidation(await ctx.call(alice, 'POST', '/api/sources/batch', { sources: [] }), 'sources');
    const before = (await ctx.deps.db.select().from(sources)).length;
    const res = await ctx.call(alice, 'POST', '/api/sources/batch', {
      sources: [
        { name: 'Good', url: 'https://good.example.com' },
        { name: 'Bad', url: 'https://bad.example.com', selectors: { email: 'a[' } },
      ],
    });
    assertValidation(res, 'sources.1.selectors.email');
    assertValidation(
      await ctx.call(alice, 'POST', '/api/sources/batch', { sources: [{ name: 'No url' }] }),
      'sources.0.url',
    );
    assert.equal((await ctx.deps.db.select().from(sources)).length, before);
  });
});
