import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq, inArray } from 'drizzle-orm';
import { profiles, profileTypes, sources } from '../src/db/schema/index.ts';
import { coerceFieldValue, parseNumber } from '../src/modules/profile-types/profile-fields.ts';
import { createProfileService } from '../src/modules/profiles/profiles.service.ts';
import { createTwoUserContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertValidation } from './helpers/assertions.ts';

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
before(async () => {
  ({ ctx, alice, bob } = await createTwoUserContext({ workers: false }));
});
after(async () => ctx?.close());

let slugCounter = 0;
const fields = [
  { name: 'companyName', type: 'string', label: 'Company', required: true },
  { name: 'tier', type: 'string', enum: ['gold', 'silver'] },
  { name: 'revenue', type: 'number' },
  { name: 'tags', type: 'array', items: { type: 'string' } },
];
async function createType(user: TestUser, overrides: Record<string, unknown> = {}) {
  const res = await ctx.call(user, 'POST', '/api/profile-types', {
    name: 'Company',
    slug: `company-${++slugCounter}`,
    fields,
    ...overrides,
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data as {
    id: string;
    name: string;
    slug: string;
    description: string | null;
    fields: unknown[];
    createdAt: string;
  };
}

const unknownId = '0190a8a0-0000-7000-8000-000000000000';

describe('POST /api/profile-types', () => {
  test('201 with the whole profile type', async () => {
    const res = await ctx.call(alice, 'POST', '/api/profile-types', {
      name: ' Lenders ',
      slug: 'my-lenders',
      description: 'SBA lenders',
      fields,
    });
    assert.equal(res.statusCode, 201);
    const data = res.json().data;
    assert.equal(data.name, 'Lenders');
    assert.equal(data.slug, 'my-lenders');
    assert.equal(data.description, 'SBA lenders');
    assert.deepEqual(data.fields, fields);
    assert.match(data.id, /^[0-9a-f-]{36}$/);
    assert.ok(Date.parse(data.createdAt));
    const [row] = await ctx.deps.db.select().from(profileTypes).where(eq(profileTypes.id, data.id));
    assert.equal(row!.userId, alice.id);
    assert.deepEqual(row!.fields, fields);
  });

  test('409 CONFLICT naming slug when the caller already uses it; another user may use the same slug', async () => {
    await createType(alice, { slug: 'shared-slug' });
    const dup = await ctx.call(alice, 'POST', '/api/profile-types', { name: 'Other', slug: 'shared-slug', fields });
    assert.equal(dup.statusCode, 409);
    assert.equal(dup.json().error.code, 'CONFLICT');
    assert.equal(dup.json().error.details[0].field, 'slug');
    assert.match(dup.json().error.message, /shared-slug/);
    const other = await ctx.call(bob, 'POST', '/api/profile-types', { name: 'Bob', slug: 'shared-slug', fields });
    assert.equal(other.statusCode, 201);
  });

  const badSlugs = ['Has Space', 'UPPER', 'a--b', 'a_-b', '-lead', 'trail-', '_lead', 'x'.repeat(65), ''];
  for (const slug of badSlugs) {
    test(`400 naming slug for ${JSON.stringify(slug.length > 20 ? `${slug.slice(0, 10)}…` : slug)}`, async () =>
      assertValidation(await ctx.call(alice, 'POST', '/api/profile-types', { name: 'X', slug, fields }), 'slug'));
  }

  test(
    'an underscore slug and an empty field list are accepted (the spec asks for URL-safe and an ' + 'array)',
    async () => {
      const res = await ctx.call(alice, 'POST', '/api/profile-types', {
        name: 'Bare',
        slug: `bare_type_${++slugCounter}`,
        fields: [],
      });
      assert.equal(res.statusCode, 201, res.body);
      assert.deepEqual(res.json().data.fields, []);
    },
  );

  const badFields: Array<[string, unknown, string]> = [
    ['fields missing', undefined, 'fields'],
    ['fields not an array', { name: 'x', type: 'string' }, 'fields'],
    ['more than 100 fields', Array.from({ length: 101 }, (_, i) => ({ name: `f${i}`, type: 'string' })), 'fields'],
    [
      'unknown type',
      [
        { name: 'a', type: 'string' },
        { name: 'b', type: 'number' },
        { name: 'c', type: 'money' },
      ],
      'fields.2.type',
    ],
    ['name not an identifier', [{ name: '1st', type: 'string' }], 'fields.0.name'],
    [
      'name with a dash',
      [
        { name: 'a', type: 'string' },
        { name: 'first-name', type: 'string' },
      ],
      'fields.1.name',
    ],
    [
      'duplicate name (any case)',
      [
        { name: 'email', type: 'email' },
        { name: 'Email', type: 'string' },
      ],
      'fields.1.name',
    ],
    ['enum on a number field', [{ name: 'n', type: 'number', enum: ['1'] }], 'fields.0.enum'],
    ['enum with non-strings', [{ name: 's', type: 'string', enum: [1, 2] }], 'fields.0.enum.0'],
    ['array without items', [{ name: 'list', type: 'array' }], 'fields.0.items'],
    ['items on a string field', [{ name: 's', type: 'string', items: { type: 'string' } }], 'fields.0.items'],
    ['items of an unknown type', [{ name: 'l', type: 'array', items: { type: 'array' } }], 'fields.0.items.type'],
    [
      'items.enum on number items',
      [{ name: 'l', type: 'array', items: { type: 'number', enum: ['1'] } }],
      'fields.0.items.enum',
    ],
    ['required not a boolean', [{ name: 's', type: 'string', required: 'yes' }], 'fields.0.required'],
    ['unknown key in a field', [{ name: 's', type: 'string', minLength: 3 }], 'fields.0'],
    ['field not an object', ['name'], 'fields.0'],
  ];
  for (const [name, value, field] of badFields) {
    test(`400 naming ${field}: ${name}`, async () =>
      assertValidation(
        await ctx.call(alice, 'POST', '/api/profile-types', {
          name: 'X',
          slug: `bad-${++slugCounter}`,
          ...(value !== undefined ? { fields: value } : {}),
        }),
        field,
      ));
  }

  test('name is required; no credential is a 401', async () => {
    assertValidation(await ctx.call(alice, 'POST', '/api/profile-types', { slug: 'no-name', fields }), 'name');
    assert.equal(
      (await ctx.call(undefined, 'POST', '/api/profile-types', { name: 'x', slug: 'x', fields })).statusCode,
      401,
    );
  });
});

describe('GET /api/profile-types/templates', () => {
  test('built-in templates with full field definitions, each a valid body for POST', async () => {
    const res = await ctx.call(alice, 'GET', '/api/profile-types/templates');
    assert.equal(res.statusCode, 200);
    const templates = res.json().data.templates as Array<{
      slug: string;
      name: string;
      fields: Array<Record<string, any>>;
    }>;
    const slugs = templates.map((t) => t.slug);
    for (const s of ['lender', 'restaurant', 'software-company', 'law-firm', 'real-estate-agency', 'manufacturer'])
      assert.ok(slugs.includes(s), s);
    const lender = templates.find((t) => t.slug === 'lender')!;
    const f = (n: string) => lender.fields.find((x) => x.name === n);
    assert.deepEqual(f('loanTypes')?.items, { type: 'string' });
    assert.equal(f('loanTypes')?.type, 'array');
    assert.equal(f('minLoanAmount')?.type, 'number');
    assert.equal(f('maxLoanAmount')?.type, 'number');
    assert.equal(f('interestRateRange')?.type, 'string');
    assert.equal(f('licensedStates')?.type, 'array');
    assert.equal(f('website')?.type, 'url');
    assert.equal(f('email')?.type, 'email');
    assert.equal(f('phone')?.type, 'string');
    const user = await ctx.signup();
    for (const t of templates) {
      const created = await ctx.call(user, 'POST', '/api/profile-types', {
        name: t.name,
        slug: t.slug,
        description: (t as any).description,
        fields: t.fields,
      });
      assert.equal(created.statusCode, 201, `${t.slug}: ${created.body}`);
      assert.deepEqual(created.json().data.fields, t.fields);
    }
  });
});

describe('GET /api/profile-types', () => {
  test("paginated list of the caller's types, newest first, without other users' types", async () => {
    const user = await ctx.signup();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createType(user)).id);
    const bobType = await createType(bob);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await ctx.call(user, 'GET', `/api/profile-types?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(res.statusCode, 200);
      const page = res.json().data.profileTypes as Array<Record<string, unknown>>;
      for (const t of page)
        for (const k of ['id', 'name', 'slug', 'description', 'fields', 'createdAt']) assert.ok(k in t, k);
      seen.push(...page.map((t) => t.id as string));
      cursor = res.json().data.nextCursor;
    } while (cursor);
    assert.deepEqual(seen, [...ids].reverse());
    assert.ok(!seen.includes(bobType.id));
    assertValidation(await ctx.call(user, 'GET', '/api/profile-types?cursor=zzz'), 'cursor');
  });
});

describe('GET /api/profile-types/{id}', () => {
  test("200 for the owner; 404 unknown, malformed or another user's", async () => {
    const t = await createType(alice, { description: 'desc' });
    const res = await ctx.call(alice, 'GET', `/api/profile-types/${t.id}`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().data.id, t.id);
    assert.equal(res.json().data.slug, t.slug);
    assert.deepEqual(res.json().data.fields, fields);
    for (const [user, id] of [
      [bob, t.id],
      [alice, unknownId],
      [alice, 'bad-id'],
    ] as const) {
      const miss = await ctx.call(user, 'GET', `/api/profile-types/${id}`);
      assert.equal(miss.statusCode, 404);
      assert.equal(miss.json().error.code, 'NOT_FOUND');
    }
  });
});

describe('PATCH /api/profile-types/{id}', () => {
  test('200 with the updated type; fields replace the list; the slug is kept', async () => {
    const t = await createType(alice);
    const newFields = [
      { name: 'title', type: 'string', required: true },
      { name: 'founded', type: 'date' },
    ];
    const res = await ctx.call(alice, 'PATCH', `/api/profile-types/${t.id}`, {
      name: 'Renamed',
      description: 'now described',
      fields: newFields,
      slug: 'ignored',
    });
    assert.equal(res.statusCode, 200);
    const data = res.json().data;
    assert.equal(data.name, 'Renamed');
    assert.equal(data.description, 'now described');
    assert.deepEqual(data.fields, newFields);
    assert.equal(data.slug, t.slug);
    const [row] = await ctx.deps.db.select().from(profileTypes).where(eq(profileTypes.id, t.id));
    assert.deepEqual(row!.fields, newFields);
    const cleared = await ctx.call(alice, 'PATCH', `/api/profile-types/${t.id}`, { description: null });
    assert.equal(cleared.json().data.description, null);
    assert.equal(cleared.json().data.name, 'Renamed');
  });

  test("400 for bad fields (path named); an empty body changes nothing; 404 unknown or another user's", async () => {
    const t = await createType(alice);
    const empty = await ctx.call(alice, 'PATCH', `/api/profile-types/${t.id}`, {});
    assert.equal(empty.statusCode, 200);
    assert.equal(empty.json().data.name, t.name);
    assertValidation(
      await ctx.call(alice, 'PATCH', `/api/profile-types/${t.id}`, {
        fields: [
          { name: 'a', type: 'string' },
          { name: 'b', type: 'nope' },
        ],
      }),
      'fields.1.type',
    );
    assertValidation(await ctx.call(alice, 'PATCH', `/api/profile-types/${t.id}`, { name: '' }), 'name');
    for (const [user, id] of [
      [bob, t.id],
      [alice, unknownId],
      [alice, '123'],
    ] as const) {
      const miss = await ctx.call(user, 'PATCH', `/api/profile-types/${id}`, { name: 'x' });
      assert.equal(miss.statusCode, 404);
    }
    const [row] = await ctx.deps.db.select().from(profileTypes).where(eq(profileTypes.id, t.id));
    assert.equal(row!.name, 'Company');
  });
});

describe('DELETE /api/profile-types/{id}', () => {
  test("200; the type's profiles go with it, other types' stay; sources lose the link", async () => {
    const doomed = await createType(alice);
    const kept = await createType(alice);
    const svc = createProfileService(ctx.deps);
    const a = await svc.createProfiles(alice.id, doomed.id, [
      { data: { companyName: 'A1' } },
      { data: { companyName: 'A2' } },
    ]);
    const b = await svc.createProfiles(alice.id, kept.id, [{ data: { companyName: 'B1' } }]);
    const [source] = await ctx.deps.db
      .insert(sources)
      .values({
        userId: alice.id,
        profileTypeId: doomed.id,
        name: 's',
        url: 'https://example.com',
        scrapeType: 'STATIC',
      })
      .returning();

    assert.equal((await ctx.call(bob, 'DELETE', `/api/profile-types/${doomed.id}`)).statusCode, 404);
    assert.equal((await ctx.call(alice, 'DELETE', `/api/profile-types/${unknownId}`)).statusCode, 404);
    assert.equal((await ctx.call(alice, 'DELETE', '/api/profile-types/nope')).statusCode, 404);

    const res = await ctx.call(alice, 'DELETE', `/api/profile-types/${doomed.id}`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().success, true);
    assert.equal((await ctx.call(alice, 'GET', `/api/profile-types/${doomed.id}`)).statusCode, 404);
    const gone = await ctx.deps.db
      .select()
      .from(profiles)
      .where(
        inArray(
          profiles.id,
          a.created.map((p) => p.id),
        ),
      );
    assert.equal(gone.length, 0);
    const stay = await ctx.deps.db
      .select()
      .from(profiles)
      .where(
        inArray(
          profiles.id,
          b.created.map((p) => p.id),
        ),
      );
    assert.equal(stay.length, 1);
    const [s] = await ctx.deps.db.select().from(sources).where(eq(sources.id, source!.id));
    assert.equal(s!.profileTypeId, null);
    // The slug is free again.
    assert.equal(
      (await ctx.call(alice, 'POST', '/api/profile-types', { name: 'again', slug: doomed.slug, fields })).statusCode,
      201,
    );
  });
});

describe('field value coercion', () => {
  test('numbers from scraped text', () => {
    const cases: Array<[unknown, number | undefined]> = [
      ['$1,200', 1200],
      ['1,200.50', 1200.5],
      ['€1.200,50', 1200.5],
      ["1'250'000", 1250000],
      ['1.5M', 1_500_000],
      ['250k', 250_000],
      ['2.5 bn', 2.5e9],
      ['7.5%', 7.5],
      ['-$5', -5],
      ['(300)', -300],
      ['USD 99', 99],
      ['1200 €', 1200],
      ['1.234.567', 1234567],
      ['4,5', 4.5],
      [42, 42],
      ['call us', undefined],
      ['1,2,3', undefined],
      ['1.2.3', undefined],
      ['555-1234', undefined],
      ['', undefined],
      [Number.NaN, undefined],
      [true, undefined],
    ];
    for (const [input, expected] of cases) assert.equal(parseNumber(input), expected, JSON.stringify(input));
  });

  test('booleans, dates, urls, emails, enums and arrays (lenient and strict)', () => {
    const ok = (field: any, v: unknown, strict = false) => {
      const r = coerceFieldValue(field, v, strict);
      return r.ok ? r.value : undefined;
    };
    assert.equal(ok({ name: 'b', type: 'boolean' }, 'Yes'), true);
    assert.equal(ok({ name: 'b', type: 'boolean' }, 0), false);
    assert.equal(ok({ name: 'b', type: 'boolean' }, 'maybe'), undefined);
    assert.equal(ok({ name: 'd', type: 'date' }, '2024-02-29'), '2024-02-29');
    assert.equal(ok({ name: 'd', type: 'date' }, '2023-02-29'), undefined);
    assert.equal(ok({ name: 'd', type: 'date' }, '2024-05-31T12:30:00Z'), '2024-05-31T12:30:00.000Z');
    assert.equal(ok({ name: 'd', type: 'date' }, 'March 5, 2021'), '2021-03-05');
    assert.equal(ok({ name: 'd', type: 'date' }, '12'), undefined);
    assert.equal(ok({ name: 'u', type: 'url' }, 'example.com'), 'https://example.com');
    assert.equal(ok({ name: 'u', type: 'url' }, 'http://x.example/a?b=1'), 'http://x.example/a?b=1');
    assert.equal(ok({ name: 'u', type: 'url' }, 'javascript:alert(1)'), undefined);
    assert.equal(ok({ name: 'u', type: 'url' }, 'not a url'), undefined);
    assert.equal(ok({ name: 'e', type: 'email' }, ' MAILTO:jo@x.example '), 'jo@x.example');
    assert.equal(ok({ name: 'e', type: 'email' }, 'jo@'), undefined);
    assert.equal(ok({ name: 's', type: 'string', enum: ['Bank', 'CDFI'] }, 'cdfi'), 'CDFI');
    assert.equal(ok({ name: 's', type: 'string', enum: ['Bank'] }, 'Other'), undefined);
    assert.equal(ok({ name: 's', type: 'string' }, 12), '12');
    assert.equal(ok({ name: 's', type: 'string' }, { a: 1 }), undefined);
    const nums = { name: 'n', type: 'array', items: { type: 'number' } };
    assert.deepEqual(ok(nums, '$1,200; 3,400 | 5'), [1200, 3400, 5]);
    assert.deepEqual(ok(nums, ['1', 'x', 2]), [1, 2]);
    assert.equal(ok(nums, ['1', 'x', 2], true), undefined);
    const tags = { name: 't', type: 'array', items: { type: 'string', enum: ['A', 'B'] } };
    assert.deepEqual(ok(tags, 'a, b, c'), ['A', 'B']);
    assert.equal(ok(tags, ['a', 'c'], true), undefined);
    assert.equal(ok(tags, 'c'), undefined);
  });
});
