import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { leads, sources, sourceTemplates } from '../src/db/schema/index.ts';
import { catalogue } from '../src/modules/sources/templates/directory-catalogue.ts';
import { DIRECTORY_SELECTORS, directoryLead, type FixtureSite, startFixtureSite } from './fixtures/sites.ts';
import { createTwoUserContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
let site: FixtureSite;

before(async () => {
  site = await startFixtureSite({ pages: 2, leadsPerPage: 4 });
  ({ ctx, alice, bob } = await createTwoUserContext());
});
after(async () => {
  await ctx?.close();
  await site?.close();
});

const unknownId = '0190a8a0-0000-7000-8000-000000000000';

const own = () => ({
  name: 'Fixture directory search',
  description: 'Members by query',
  scrapeType: 'STATIC',
  urlPattern: `${site.url}directory?q={query}&page={page}`,
  selectors: { ...DIRECTORY_SELECTORS, maxPages: 5 },
  scheduleType: 'WEEKLY',
});

async function saveTemplate(user: TestUser, body: Record<string, unknown> = own()) {
  const res = await ctx.call(user, 'POST', '/api/source-templates', body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.template;
}

async function createSource(user: TestUser, body: Record<string, unknown>) {
  const res = await ctx.call(user, 'POST', '/api/sources', body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.source;
}

describe('POST /api/source-templates', () => {
  test('201: stored with its variables; crawl settings among the selectors move to options', async () => {
    const template = await saveTemplate(alice);
    assert.equal(template.kind, 'own');
    assert.deepEqual(template.variables, ['query', 'page']);
    assert.deepEqual(template.selectors, DIRECTORY_SELECTORS);
    assert.deepEqual(template.options, { maxPages: 5 });
    assert.equal(template.scheduleType, 'WEEKLY');
    assert.equal(template.description, 'Members by query');
    const [row] = await ctx.deps.db.select().from(sourceTemplates).where(eq(sourceTemplates.id, template.id));
    assert.equal(row!.userId, alice.id);
    assert.equal(row!.urlPattern, own().urlPattern);
    const got = await ctx.call(alice, 'GET', `/api/source-templates/${template.id}`);
    assert.deepEqual(got.json().data.template, template);
  });

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ['name missing', { name: undefined }, 'name'],
    ['scrapeType unknown', { scrapeType: 'SOAP' }, 'scrapeType'],
    ['pattern not a URL', { urlPattern: '{query}' }, 'urlPattern'],
    ['pattern not http(s)', { urlPattern: 'ftp://example.com/{query}' }, 'urlPattern'],
    ['variable declared twice', { urlPattern: 'https://x.test/?a={query}&b={query}' }, 'urlPattern'],
    ['bad variable name', { urlPattern: 'https://x.test/?a={1st}' }, 'urlPattern'],
    ['empty variable', { urlPattern: 'https://x.test/?a={}' }, 'urlPattern'],
    ['stray brace', { urlPattern: 'https://x.test/?a={query' }, 'urlPattern'],
    ['selector that does not parse', { selectors: { item: '.card', email: 'a[href' } }, 'selectors.email'],
    ['crawl setting out of range', { selectors: { maxPages: 0 } }, 'selectors.maxPages'],
    ['unknown option', { options: { turbo: true } }, 'options'],
  ];
  for (const [name, change, field] of invalid) {
    test(`400 naming ${field}: ${name}; nothing stored`, async () => {
      const before = (await ctx.deps.db.select().from(sourceTemplates)).length;
      assertValidation(await ctx.call(alice, 'POST', '/api/source-templates', { ...own(), ...change }), field);
      assert.equal((await ctx.deps.db.select().from(sourceTemplates)).length, before);
    });
  }

  test('a key without sources:write cannot save; sources:read can list', async () => {
    const res = await ctx.call(alice, 'POST', '/api/api-keys', { name: 'reader', scopes: ['sources:read'] });
    const reader = { ...alice, headers: { authorization: `Bearer ${res.json().data.apiKey.key}` } };
    assertError(await ctx.call(reader, 'POST', '/api/source-templates', own()), 403, 'INSUFFICIENT_SCOPE');
    assert.equal((await ctx.call(reader, 'GET', '/api/source-templates?limit=1')).statusCode, 200);
  });
});

describe('GET /api/source-templates', () => {
  test('built-ins first, one per catalogue entry, with the catalogue URL and selectors', async () => {
    const res = await ctx.call(alice, 'GET', `/api/source-templates?kind=builtin&limit=1000`);
    assert.equal(res.statusCode, 200);
    const { templates, nextCursor } = res.json().data;
    assert.equal(nextCursor, null);
    assert.deepEqual(
      templates.map((t: { id: string }) => t.id),
      catalogue.map((e) => `builtin:${e.id}`),
    );
    const npi = templates.find((t: { id: string }) => t.id === 'builtin:npi-registry');
    const entry = catalogue.find((e) => e.id === 'npi-registry')!;
    assert.equal(npi.urlPattern, entry.urlTemplate);
    assert.deepEqual(npi.variables, ['term']);
    assert.deepEqual(npi.selectors, entry.selectors);
    assert.equal(npi.kind, 'builtin');
    assert.equal(npi.createdAt, null);
    const europages = templates.find((t: { id: string }) => t.id === 'builtin:europages');
    assert.deepEqual(europages.variables, ['slug']);
  });

  test('pages through built-ins then own templates (newest first); kind=own; others never listed', async () => {
    const user = await ctx.signup();
    const first = await saveTemplate(user, { ...own(), name: 'first' });
    const second = await saveTemplate(user, { ...own(), name: 'second' });
    await saveTemplate(bob, { ...own(), name: 'bobs' });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `&cursor=${cursor}` : '';
      const res = await ctx.call(user, 'GET', `/api/source-templates?limit=7${query}`);
      assert.equal(res.statusCode, 200, res.body);
      const page = res.json().data;
      assert.ok(page.templates.length <= 7);
      seen.push(...page.templates.map((t: { id: string }) => t.id));
      cursor = page.nextCursor;
    } while (cursor);
    assert.deepEqual(seen, [...catalogue.map((e) => `builtin:${e.id}`), second.id, first.id]);

    const mine = (await ctx.call(user, 'GET', '/api/source-templates?kind=own&limit=1')).json().data;
    assert.deepEqual(
      mine.templates.map((t: { id: string }) => t.id),
      [second.id],
    );
    const rest = (await ctx.call(user, 'GET', `/api/source-templates?kind=own&cursor=${mine.nextCursor}`)).json();
    assert.deepEqual(
      rest.data.templates.map((t: { id: string }) => t.id),
      [first.id],
    );
    assert.equal(rest.data.nextCursor, null);
  });

  test('bad query is 400 naming the field', async () => {
    assertValidation(await ctx.call(alice, 'GET', '/api/source-templates?kind=shared'), 'kind');
    assertValidation(await ctx.call(alice, 'GET', '/api/source-templates?cursor=bm9wZQ'), 'cursor');
  });
});

describe('GET and DELETE /api/source-templates/{id}', () => {
  test("another user's template, an unknown id and a malformed one are 404", async () => {
    const bobs = await saveTemplate(bob);
    for (const id of [bobs.id, unknownId, 'nope', 'builtin:nope']) {
      assertError(await ctx.call(alice, 'GET', `/api/source-templates/${id}`), 404, 'NOT_FOUND');
      assertError(await ctx.call(alice, 'DELETE', `/api/source-templates/${id}`), 404, 'NOT_FOUND');
    }
    assert.equal((await ctx.call(bob, 'GET', `/api/source-templates/${bobs.id}`)).statusCode, 200);
  });

  test('built-ins are read-only: 403 TEMPLATE_READ_ONLY', async () => {
    assert.equal(
      (await ctx.call(alice, 'GET', '/api/source-templates/builtin:yelp')).json().data.template.id,
      'builtin:yelp',
    );
    assertError(await ctx.call(alice, 'DELETE', '/api/source-templates/builtin:yelp'), 403, 'TEMPLATE_READ_ONLY');
  });

  test('deleting an own template keeps the sources made from it', async () => {
    const template = await saveTemplate(alice);
    const source = await createSource(alice, {
      name: 'x',
      templateId: template.id,
      variables: { query: 'a', page: '1' },
    });
    assert.equal((await ctx.call(alice, 'DELETE', `/api/source-templates/${template.id}`)).statusCode, 200);
    assertError(await ctx.call(alice, 'GET', `/api/source-templates/${template.id}`), 404, 'NOT_FOUND');
    const kept = (await ctx.call(alice, 'GET', `/api/sources/${source.id}`)).json().data.source;
    assert.equal(kept.templateId, template.id);
    assert.equal(kept.url, source.url);
  });
});

describe('POST /api/sources with templateId', () => {
  test('from a built-in: url filled (values URL-encoded), scrapeType and selectors from the template', async () => {
    const source = await createSource(alice, {
      name: 'Dentists',
      templateId: 'builtin:npi-registry',
      variables: { term: 'Dentist & Co/x' },
    });
    const entry = catalogue.find((e) => e.id === 'npi-registry')!;
    assert.equal(source.url, entry.urlTemplate.replace('{term}', 'Dentist%20%26%20Co%2Fx'));
    assert.equal(source.scrapeType, 'API');
    assert.deepEqual(source.selectors, entry.selectors);
    assert.equal(source.scheduleType, 'MANUAL');
    assert.equal(source.templateId, 'builtin:npi-registry');
    assert.equal(source.status, 'DRAFT');
    const [row] = await ctx.deps.db.select().from(sources).where(eq(sources.id, source.id));
    assert.equal(row!.templateId, 'builtin:npi-registry');
  });

  test('from an own template: schedule and crawl settings too; fields of the body win', async () => {
    const template = await saveTemplate(alice);
    const plain = await createSource(alice, {
      name: 'From mine',
      templateId: template.id,
      variables: { query: 'dentists in Austin', page: '1' },
    });
    assert.equal(plain.url, `${site.url}directory?q=dentists%20in%20Austin&page=1`);
    assert.equal(plain.scrapeType, 'STATIC');
    assert.equal(plain.scheduleType, 'WEEKLY');
    assert.deepEqual(plain.selectors, DIRECTORY_SELECTORS);
    assert.equal(plain.maxPages, 5, 'the template options.maxPages');
    assert.equal(plain.templateId, template.id);

    const overridden = await createSource(alice, {
      name: 'Overridden',
      templateId: template.id,
      variables: { query: 'x', page: '2' },
      scrapeType: 'DYNAMIC',
      scheduleType: 'MANUAL',
      selectors: { item: '.row' },
      options: { maxPages: 2 },
    });
    assert.equal(overridden.scrapeType, 'DYNAMIC');
    assert.equal(overridden.scheduleType, 'MANUAL');
    assert.deepEqual(overridden.selectors, { item: '.row' });
    assert.equal(overridden.maxPages, 2);

    const explicitUrl = await createSource(alice, { name: 'u', templateId: template.id, url: 'https://example.com/' });
    assert.equal(explicitUrl.url, 'https://example.com/');
  });

  test('a missing or unknown variable is 400 naming variables.<name>; nothing stored', async () => {
    const template = await saveTemplate(alice);
    const count = async () => (await ctx.deps.db.select().from(sources).where(eq(sources.userId, alice.id))).length;
    const before = await count();
    const missing = await ctx.call(alice, 'POST', '/api/sources', {
      name: 'x',
      templateId: template.id,
      variables: { query: 'a' },
    });
    assertValidation(missing, 'variables.page');
    assertValidation(
      await ctx.call(alice, 'POST', '/api/sources', { name: 'x', templateId: 'builtin:yelp' }),
      'variables.query',
    );
    assertValidation(
      await ctx.call(alice, 'POST', '/api/sources', {
        name: 'x',
        templateId: 'builtin:yelp',
        variables: { query: 'a', city: 'b' },
      }),
      'variables.city',
    );
    assertValidation(
      await ctx.call(alice, 'POST', '/api/sources', {
        name: 'x',
        templateId: 'builtin:yelp',
        variables: { query: '' },
      }),
      'variables.query',
    );
    // Without a template the source's own fields are required, and variables make no sense.
    assertValidation(
      await ctx.call(alice, 'POST', '/api/sources', { name: 'x', scrapeType: 'STATIC', selectors: {} }),
      'url',
    );
    assertValidation(
      await ctx.call(alice, 'POST', '/api/sources', {
        name: 'x',
        url: 'https://example.com',
        scrapeType: 'STATIC',
        selectors: {},
        variables: { query: 'a' },
      }),
      'variables',
    );
    // The filled URL is checked as any source URL is: here too long once its value is URL-encoded.
    const schemeless = await saveTemplate(alice, { ...own(), urlPattern: 'https://x.test/{path}' });
    assertValidation(
      await ctx.call(alice, 'POST', '/api/sources', {
        name: 'x',
        templateId: schemeless.id,
        variables: { path: 'é'.repeat(400) },
      }),
      'url',
    );
    assert.equal(await count(), before);
  });

  test("an unknown template or another user's is 404 naming templateId", async () => {
    const bobs = await saveTemplate(bob);
    for (const templateId of [bobs.id, unknownId, 'builtin:nope', 'nope']) {
      const res = await ctx.call(alice, 'POST', '/api/sources', { name: 'x', templateId, variables: { query: 'a' } });
      assertError(res, 404, 'NOT_FOUND');
      assert.equal(res.json().error.details[0].field, 'templateId');
    }
  });

  test('the batch route: templates per item, errors named per item, all or none', async () => {
    const template = await saveTemplate(alice);
    const res = await ctx.call(alice, 'POST', '/api/sources/batch', {
      sources: [
        { name: 'a', templateId: template.id, variables: { query: 'a', page: '1' } },
        { name: 'b', templateId: 'builtin:github-users', variables: { query: 'rust' } },
        { name: 'c', url: 'https://example.com/c' },
      ],
    });
    assert.equal(res.statusCode, 201, res.body);
    const ids = res.json().data.sources.map((s: { id: string }) => s.id);
    const made = await Promise.all(
      ids.map(async (id: string) => (await ctx.call(alice, 'GET', `/api/sources/${id}`)).json().data.source),
    );
    assert.deepEqual(
      made.map((s) => [s.templateId, s.scrapeType, s.scheduleType]),
      [
        [template.id, 'STATIC', 'WEEKLY'],
        ['builtin:github-users', 'API', 'MANUAL'],
        [null, 'DYNAMIC', 'MANUAL'],
      ],
    );
    assert.equal(made[0].maxPages, 5);
    assert.equal(made[1].url, 'https://api.github.com/search/users?q=rust&per_page=100');

    const before = (await ctx.deps.db.select().from(sources)).length;
    const bad = await ctx.call(alice, 'POST', '/api/sources/batch', {
      sources: [
        { name: 'ok', templateId: 'builtin:yelp', variables: { query: 'a' } },
        { name: 'bad', templateId: template.id, variables: { query: 'a' } },
        { name: 'no url' },
      ],
    });
    assertValidation(bad, 'sources.1.variables.page');
    assertValidation(bad, 'sources.2.url');
    assert.equal((await ctx.deps.db.select().from(sources)).length, before);
  });
});

describe('a job from a template-made source', () => {
  test('runs end to end against the fixture site and stores leads', async () => {
    const template = await saveTemplate(alice);
    const source = await createSource(alice, {
      name: 'Members',
      templateId: template.id,
      variables: { query: 'ada & co', page: '1' },
    });
    assert.equal((await ctx.call(alice, 'POST', `/api/sources/${source.id}/activate`)).statusCode, 200);
    const created = await ctx.call(alice, 'POST', '/api/jobs', { name: 'Template run', sourceId: source.id });
    assert.equal(created.statusCode, 201, created.body);
    const jobId = created.json().data.job.id;
    const job = await eventually(async () => {
      const j = (await ctx.call(alice, 'GET', `/api/jobs/${jobId}`)).json().data.job;
      return ['COMPLETED', 'FAILED', 'CANCELLED'].includes(j.status) ? j : undefined;
    }, 30_000);
    assert.equal(job.status, 'COMPLETED', job.error);
    assert.equal(job.leadsFound, 8);
    assert.ok(
      site.requests.some((r) => r.path === '/directory?q=ada%20%26%20co&page=1'),
      'the filled URL was fetched',
    );
    const rows = await ctx.deps.db.select().from(leads).where(eq(leads.jobId, jobId));
    assert.deepEqual(
      rows.map((r) => r.email).sort(),
      [1, 2].flatMap((page) => [0, 1, 2, 3].map((i) => directoryLead(page, i).email)).sort(),
    );
    assert.ok(rows.every((r) => r.sourceId === source.id && r.userId === alice.id));
  });
});

describe('docs', () => {
  test('docs/source-catalogue.md lists every built-in template with its variables', async () => {
    const doc = fs.readFileSync(new URL('../docs/source-catalogue.md', import.meta.url), 'utf8');
    const listed = (await ctx.call(alice, 'GET', '/api/source-templates?kind=builtin&limit=1000')).json().data;
    for (const t of listed.templates as Array<{ id: string; variables: string[]; scrapeType: string }>) {
      const row = doc.split('\n').find((line) => line.startsWith(`| \`${t.id}\` |`));
      assert.ok(row, `${t.id} missing from docs/source-catalogue.md`);
      assert.ok(row.includes(`| ${t.scrapeType} | ${t.variables.map((v) => `\`${v}\``).join(', ')} |`), row);
    }
  });
});
