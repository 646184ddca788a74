import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { profiles } from '../src/db/schema/index.ts';
import { createProfileExporter } from '../src/modules/profiles/profiles.export.ts';
import { createProfileService, type ProfileService } from '../src/modules/profiles/profiles.service.ts';
import { parseCsv } from '../src/shared/csv.ts';
import { AppError } from '../src/shared/errors.ts';
import { newId } from '../src/shared/ids.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertValidation } from './helpers/assertions.ts';

let ctx: TestContext;
let svc: ProfileService;
before(async () => {
  ctx = await createTestContext({ workers: false });
  svc = createProfileService(ctx.deps);
});
after(async () => ctx?.close());

const lenderFields = [
  { name: 'companyName', type: 'string', required: true },
  { name: 'lenderType', type: 'string', enum: ['Bank', 'Credit Union'] },
  { name: 'loanTypes', type: 'array', items: { type: 'string' } },
  { name: 'minLoanAmount', type: 'number' },
  { name: 'employees', type: 'integer' },
  { name: 'sba', type: 'boolean' },
  { name: 'founded', type: 'date' },
  { name: 'website', type: 'url' },
  { name: 'email', type: 'email' },
  { name: 'notes', type: 'string' },
];
const cafeFields = [
  { name: 'name', type: 'string', required: true },
  { name: 'cuisines', type: 'array', items: { type: 'string' } },
  { name: 'rating', type: 'number' },
  { name: 'notes', type: 'string' },
];

async function createType(user: TestUser, slug: string, fields: unknown[]) {
  const res = await ctx.inject({
    method: 'POST',
    url: '/api/profile-types',
    headers: user.headers,
    payload: { name: slug, slug, fields },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data as { id: string; slug: string };
}

const uuid = () => newId();

describe('createProfiles (service used by the scraping engine)', () => {
  test('coerces values, drops unknown keys and unfit values, skips items missing a required field', async () => {
    const u = await ctx.signup();
    const t = await createType(u, 'lender', lenderFields);
    const sourceId = uuid();
    const jobId = uuid();
    const result = await svc.createProfiles(u.id, t.id, [
      {
        data: {
          companyName: '  Acme Capital ',
          lenderType: 'bank',
          loanTypes: 'SBA 7(a), Term Loan; Line of Credit',
          minLoanAmount: '$1,200',
          employees: '1,250',
          sba: 'Yes',
          founded: '2004-03-15',
          website: 'acme.example.com/lending',
          email: 'mailto:Info@Acme.example',
          unknownKey: 'dropped',
        },
        sourceId,
        jobId,
        sourceUrl: 'https://directory.example/acme',
      },
      {
        data: {
          companyName: 'Beta',
          minLoanAmount: 'call us',
          employees: '12.5',
          lenderType: 'Hedge fund',
          website: 'javascript:alert(1)',
          founded: 'someday',
        },
      },
      { data: { minLoanAmount: 5000 } },
      {
        data: { companyName: 'Gamma', loanTypes: ['FHA', '', 'VA'], minLoanAmount: '1.5M', sba: false },
        sourceId: 'not-a-uuid',
      },
      { data: 'not an object' },
      { data: { companyName: 'Delta', minLoanAmount: -25.5, founded: '2024-02-30' } },
    ]);
    assert.equal(result.created.length, 3);
    const [acme, beta, delta] = result.created;
    assert.deepEqual(acme!.data, {
      companyName: 'Acme Capital',
      lenderType: 'Bank',
      loanTypes: ['SBA 7(a)', 'Term Loan', 'Line of Credit'],
      minLoanAmount: 1200,
      employees: 1250,
      sba: true,
      founded: '2004-03-15',
      website: 'https://acme.example.com/lending',
      email: 'Info@Acme.example',
    });
    assert.equal(acme!.sourceId, sourceId);
    assert.equal(acme!.jobId, jobId);
    assert.equal(acme!.sourceUrl, 'https://directory.example/acme');
    assert.equal(acme!.status, 'NEW');
    assert.deepEqual(acme!.profileType, { id: t.id, name: 'lender', slug: 'lender' });
    assert.deepEqual(beta!.data, { companyName: 'Beta' });
    assert.deepEqual(delta!.data, { companyName: 'Delta', minLoanAmount: -25.5 });
    assert.deepEqual(
      result.skipped.map((s) => s.index),
      [2, 3, 4],
    );
    assert.match(result.skipped[0]!.reason, /companyName/);
    assert.match(result.skipped[1]!.reason, /sourceId/);
    const droppedBeta = result.dropped
      .filter((d) => d.index === 1)
      .map((d) => d.field)
      .sort();
    assert.deepEqual(droppedBeta, ['employees', 'founded', 'lenderType', 'minLoanAmount', 'website']);
    assert.ok(result.dropped.some((d) => d.index === 0 && d.field === 'unknownKey'));
    const stored = await ctx.deps.db.select().from(profiles).where(eq(profiles.id, acme!.id));
    assert.equal(stored[0]!.userId, u.id);
    assert.equal(stored[0]!.data.minLoanAmount, 1200);
  });

  test("another user's or an unknown type is a 404 naming profileTypeId", async () => {
    const u = await ctx.signup();
    const other = await ctx.signup();
    const t = await createType(other, 'theirs', cafeFields);
    for (const id of [t.id, uuid(), 'garbage']) {
      await assert.rejects(svc.createProfiles(u.id, id, [{ data: { name: 'x' } }]), (err: unknown) => {
        assert.ok(err instanceof AppError);
        assert.equal(err.code, 'NOT_FOUND');
        assert.equal(err.details?.[0]?.field, 'profileTypeId');
        return true;
      });
    }
  });
});

describe('profiles API', () => {
  let alice: TestUser;
  let bob: TestUser;
  let lender: { id: string };
  let cafe: { id: string };
  let bobType: { id: string };
  const sourceA = uuid();
  const jobA = uuid();
  const ids: Record<string, string> = {};

  before(async () => {
    alice = await ctx.signup();
    bob = await ctx.signup();
    lender = await createType(alice, 'lender', lenderFields);
    cafe = await createType(alice, 'cafe', cafeFields);
    bobType = await createType(bob, 'lender', lenderFields);
    const l = await svc.createProfiles(alice.id, lender.id, [
      {
        data: {
          companyName: 'Acme Lending',
          loanTypes: ['SBA 7(a)', 'Bridge'],
          minLoanAmount: 50000,
          email: 'a@acme.example',
        },
        sourceId: sourceA,
        jobId: jobA,
      },
      {
        data: { companyName: 'Beta Bank', lenderType: 'Bank', minLoanAmount: 100000, notes: 'Says "hi", then\nleaves' },
        sourceId: sourceA,
      },
      { data: { companyName: '=HYPERLINK("http://evil")', notes: '100% legit_' } },
    ]);
    const c = await svc.createProfiles(alice.id, cafe.id, [
      { data: { name: 'Chez Nous', cuisines: ['French'], rating: 4.5 }, jobId: jobA },
      { data: { name: 'Taqueria', cuisines: ['Mexican', 'Street food'] } },
    ]);
    const b = await svc.createProfiles(bob.id, bobType.id, [
      { data: { companyName: 'Acme Lending (Bob)', minLoanAmount: 1 }, sourceId: sourceA },
    ]);
    [ids.acme, ids.beta, ids.formula] = l.created.map((p) => p.id);
    [ids.chez, ids.taco] = c.created.map((p) => p.id);
    ids.bob = b.created[0]!.id;
    await ctx.deps.db.update(profiles).set({ status: 'QUALIFIED' }).where(eq(profiles.id, ids.beta!));
    await ctx.deps.db.update(profiles).set({ status: 'ARCHIVED' }).where(eq(profiles.id, ids.taco!));
  });

  const list = async (user: TestUser, query = '') => {
    const res = await ctx.call(user, 'GET', `/api/profiles${query}`);
    assert.equal(res.statusCode, 200, res.body);
    return (res.json().data.profiles as Array<{ id: string }>).map((p) => p.id);
  };

  test("GET /api/profiles lists the caller's profiles newest first, never another user's", async () => {
    assert.deepEqual(await list(alice), [ids.taco, ids.chez, ids.formula, ids.beta, ids.acme]);
    assert.deepEqual(await list(bob), [ids.bob]);
  });

  test('filters: profileTypeId, status, sourceId, jobId, q, combined', async () => {
    assert.deepEqual(await list(alice, `?profileTypeId=${cafe.id}`), [ids.taco, ids.chez]);
    assert.deepEqual(await list(alice, `?profileTypeId=${bobType.id}`), []);
    assert.deepEqual(await list(alice, '?status=QUALIFIED'), [ids.beta]);
    assert.deepEqual(await list(alice, `?sourceId=${sourceA}`), [ids.beta, ids.acme]);
    assert.deepEqual(await list(alice, `?jobId=${jobA}`), [ids.chez, ids.acme]);
    assert.deepEqual(await list(alice, `?jobId=${jobA}&profileTypeId=${lender.id}`), [ids.acme]);
    assert.deepEqual(await list(alice, '?q=ACME'), [ids.acme]);
    assert.deepEqual(await list(alice, '?q=street'), [ids.taco]); // inside an array
    assert.deepEqual(await list(alice, '?q=sba 7'), [ids.acme]);
    assert.deepEqual(await list(alice, '?q=100%25'), [ids.formula]); // % is literal
    assert.deepEqual(await list(alice, '?q=legit_'), [ids.formula]);
    assert.deepEqual(await list(alice, '?q=_'), [ids.formula]);
    assert.deepEqual(await list(alice, '?q=companyName'), []); // keys are not searched
    assert.deepEqual(await list(alice, '?q=4.5'), [ids.chez]);
  });

  test('400 naming a malformed filter, a bad status or cursor', async () => {
    for (const f of ['profileTypeId', 'sourceId', 'jobId'])
      assertValidation(await ctx.call(alice, 'GET', `/api/profiles?${f}=nope`), f);
    assertValidation(await ctx.call(alice, 'GET', '/api/profiles?status=WHATEVER'), 'status');
    assertValidation(await ctx.call(alice, 'GET', '/api/profiles?cursor=abc'), 'cursor');
    assertValidation(await ctx.call(alice, 'GET', `/api/profiles?q=${'x'.repeat(201)}`), 'q');
  });

  test('pagination walks every profile once', async () => {
    const u = await ctx.signup();
    const t = await createType(u, 'many', cafeFields);
    const made = await svc.createProfiles(
      u.id,
      t.id,
      Array.from({ length: 11 }, (_, i) => ({ data: { name: `n${i}` } })),
    );
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await ctx.call(u, 'GET', `/api/profiles?limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...res.json().data.profiles.map((p: { id: string }) => p.id));
      cursor = res.json().data.nextCursor;
      pages++;
    } while (cursor);
    assert.equal(pages, 3);
    assert.equal(new Set(seen).size, 11);
    assert.deepEqual(seen, made.created.map((p) => p.id).reverse());
  });

  test("GET /api/profiles/{id}: 200 with the type; 404 unknown, malformed or another user's", async () => {
    const res = await ctx.call(alice, 'GET', `/api/profiles/${ids.acme}`);
    assert.equal(res.statusCode, 200);
    const p = res.json().data.profile;
    assert.equal(p.id, ids.acme);
    assert.equal(p.profileTypeId, lender.id);
    assert.deepEqual(p.profileType, { id: lender.id, name: 'lender', slug: 'lender' });
    assert.equal(p.sourceId, sourceA);
    assert.equal(p.jobId, jobA);
    assert.deepEqual(p.data.loanTypes, ['SBA 7(a)', 'Bridge']);
    for (const [user, id] of [
      [bob, ids.acme],
      [alice, ids.bob],
      [alice, uuid()],
      [alice, 'xyz'],
    ] as const) {
      const miss = await ctx.call(user, 'GET', `/api/profiles/${id}`);
      assert.equal(miss.statusCode, 404, `${id}`);
      assert.equal(miss.json().error.code, 'NOT_FOUND');
    }
  });

  test('PATCH merges data (coerced), removes with null, sets status', async () => {
    const [made] = (
      await svc.createProfiles(alice.id, lender.id, [
        { data: { companyName: 'Edit Me', notes: 'old', minLoanAmount: 10 } },
      ])
    ).created;
    const res = await ctx.call(alice, 'PATCH', `/api/profiles/${made!.id}`, {
      data: { minLoanAmount: '$2,500', loanTypes: ['Term Loan'], notes: null, sba: 'no' },
      status: 'REVIEWED',
    });
    assert.equal(res.statusCode, 200, res.body);
    const p = res.json().data.profile;
    assert.equal(p.status, 'REVIEWED');
    assert.deepEqual(p.data, { companyName: 'Edit Me', minLoanAmount: 2500, loanTypes: ['Term Loan'], sba: false });
    const [row] = await ctx.deps.db.select().from(profiles).where(eq(profiles.id, made!.id));
    assert.deepEqual(row!.data, p.data);
    assert.equal(row!.status, 'REVIEWED');
    const statusOnly = await ctx.call(alice, 'PATCH', `/api/profiles/${made!.id}`, { status: 'DISQUALIFIED' });
    assert.equal(statusOnly.json().data.profile.status, 'DISQUALIFIED');
    assert.deepEqual(statusOnly.json().data.profile.data, p.data);
  });

  test('PATCH 400 naming data.<field> for values that do not fit; nothing is written', async () => {
    const url = `/api/profiles/${ids.acme}`;
    assertValidation(await ctx.call(alice, 'PATCH', url, { data: { minLoanAmount: 'lots' } }), 'data.minLoanAmount');
    assertValidation(await ctx.call(alice, 'PATCH', url, { data: { employees: 3.5 } }), 'data.employees');
    assertValidation(await ctx.call(alice, 'PATCH', url, { data: { lenderType: 'Pawn shop' } }), 'data.lenderType');
    assertValidation(await ctx.call(alice, 'PATCH', url, { data: { email: 'nope' } }), 'data.email');
    assertValidation(await ctx.call(alice, 'PATCH', url, { data: { website: 'ftp://x.example' } }), 'data.website');
    assertValidation(await ctx.call(alice, 'PATCH', url, { data: { loanTypes: ['ok', { no: 1 }] } }), 'data.loanTypes');
    assertValidation(await ctx.call(alice, 'PATCH', url, { data: { founded: '2023-13-01' } }), 'data.founded');
    assertValidation(await ctx.call(alice, 'PATCH', url, { data: { notAField: 1 } }), 'data.notAField');
    assertValidation(await ctx.call(alice, 'PATCH', url, { data: { companyName: null } }), 'data.companyName');
    assertValidation(await ctx.call(alice, 'PATCH', url, { data: { notes: 'fine', sba: 'perhaps' } }), 'data.sba');
    assertValidation(await ctx.call(alice, 'PATCH', url, { data: ['x'] }), 'data');
    assertValidation(await ctx.call(alice, 'PATCH', url, { status: 'DONE' }), 'status');
    assertValidation(await ctx.call(alice, 'PATCH', url, {}), 'body');
    const [row] = await ctx.deps.db.select().from(profiles).where(eq(profiles.id, ids.acme!));
    assert.equal(row!.data.notes, undefined);
    assert.equal(row!.data.minLoanAmount, 50000);
  });

  test("PATCH another user's, unknown or malformed profile is a 404 and changes nothing", async () => {
    for (const id of [ids.bob, uuid(), 'nope']) {
      const res = await ctx.call(alice, 'PATCH', `/api/profiles/${id}`, { status: 'ARCHIVED' });
      assert.equal(res.statusCode, 404);
    }
    const [row] = await ctx.deps.db.select().from(profiles).where(eq(profiles.id, ids.bob!));
    assert.equal(row!.status, 'NEW');
  });

  test(
    'GET /api/profiles/export?profileTypeId: CSV attachment, type columns, RFC 4180 quoting, formulas ' + 'neutralised',
    async () => {
      const res = await ctx.call(alice, 'GET', `/api/profiles/export?profileTypeId=${lender.id}`);
      assert.equal(res.statusCode, 200, res.body);
      assert.match(String(res.headers['content-type']), /^text\/csv/);
      assert.match(
        String(res.headers['content-disposition']),
        /^attachment; filename="profiles-lender-\d{4}-\d{2}-\d{2}\.csv"$/,
      );
      assert.ok(
        res.body.startsWith(
          `id,profileType,status,sourceUrl,createdAt,${lenderFields.map((f) => f.name).join(',')}\r\n`,
        ),
      );
      const [header, ...rows] = parseCsv(res.body);
      assert.deepEqual(header, [
        'id',
        'profileType',
        'status',
        'sourceUrl',
        'createdAt',
        ...lenderFields.map((f) => f.name),
      ]);
      assert.deepEqual(
        rows.map((r) => r[0]),
        await list(alice, `?profileTypeId=${lender.id}`),
      );
      const byId = new Map(rows.map((r) => [r[0], Object.fromEntries(header!.map((h, i) => [h, r[i]]))]));
      const beta = byId.get(ids.beta)!;
      assert.equal(beta.notes, 'Says "hi", then\nleaves');
      assert.ok(res.body.includes('"Says ""hi"", then\nleaves"'));
      assert.equal(beta.status, 'QUALIFIED');
      assert.equal(beta.profileType, 'lender');
      assert.equal(beta.minLoanAmount, '100000');
      const acme = byId.get(ids.acme)!;
      assert.equal(acme.loanTypes, 'SBA 7(a); Bridge');
      assert.equal(acme.email, 'a@acme.example');
      assert.equal(acme.lenderType, '');
      assert.ok(Date.parse(acme.createdAt!));
      assert.equal(byId.get(ids.formula)!.companyName, `'=HYPERLINK("http://evil")`);
    },
  );

  test("export without a type: union of the caller's fields; status filter; never another user's rows", async () => {
    const res = await ctx.call(alice, 'GET', '/api/profiles/export');
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-disposition']), /filename="profiles-all-/);
    const [header, ...rows] = parseCsv(res.body);
    assert.deepEqual(header, [
      'id',
      'profileType',
      'status',
      'sourceUrl',
      'createdAt',
      ...lenderFields.map((f) => f.name),
      'name',
      'cuisines',
      'rating',
    ]);
    assert.deepEqual(
      rows.map((r) => r[0]),
      await list(alice, '?limit=1000'),
    );
    assert.ok(!res.body.includes(ids.bob!) && !res.body.includes('(Bob)'));
    const taco = rows.find((r) => r[0] === ids.taco)!;
    assert.equal(taco[1], 'cafe');
    assert.equal(taco[header!.indexOf('cuisines')], 'Mexican; Street food');
    assert.equal(taco[header!.indexOf('companyName')], '');
    const qualified = parseCsv((await ctx.call(alice, 'GET', '/api/profiles/export?status=QUALIFIED')).body);
    assert.deepEqual(
      qualified.slice(1).map((r) => r[0]),
      [ids.beta],
    );
    const bobCsv = parseCsv((await ctx.call(bob, 'GET', '/api/profiles/export')).body);
    assert.deepEqual(
      bobCsv.slice(1).map((r) => r[0]),
      [ids.bob],
    );
  });

  test("export errors: another user's or unknown type 404 naming profileTypeId; malformed 400", async () => {
    for (const id of [bobType.id, uuid()]) {
      const res = await ctx.call(alice, 'GET', `/api/profiles/export?profileTypeId=${id}`);
      assert.equal(res.statusCode, 404);
      assert.equal(res.json().error.code, 'NOT_FOUND');
      assert.equal(res.json().error.details[0].field, 'profileTypeId');
    }
    assertValidation(await ctx.call(alice, 'GET', '/api/profiles/export?profileTypeId=nope'), 'profileTypeId');
    assertValidation(await ctx.call(alice, 'GET', '/api/profiles/export?status=nope'), 'status');
  });
});

describe('export across pages', () => {
  test('2,050 profiles stream out once each (pages of 1000), and with tiny pages too', async () => {
    const u = await ctx.signup();
    const t = await createType(u, 'bulk', cafeFields);
    const made = await svc.createProfiles(
      u.id,
      t.id,
      Array.from({ length: 2050 }, (_, i) => ({ data: { name: `Cafe ${i}`, rating: i % 5 } })),
    );
    assert.equal(made.created.length, 2050);
    const res = await ctx.call(u, 'GET', `/api/profiles/export?profileTypeId=${t.id}`);
    const rows = parseCsv(res.body).slice(1);
    assert.equal(rows.length, 2050);
    assert.equal(new Set(rows.map((r) => r[0])).size, 2050);
    assert.deepEqual(
      rows.map((r) => r[0]),
      made.created.map((p) => p.id).reverse(),
    );
    const { stream } = await createProfileExporter(ctx.deps)(u.id, {}, 7);
    let text = '';
    for await (const chunk of stream) text += chunk;
    assert.equal(text, res.body); // same bytes whatever the page size
  });
});

describe('GET /api/profiles/stats', () => {
  test('totals, status counts and per-field completeness match the seeded data; other users not counted', async () => {
    const u = await ctx.signup();
    const other = await ctx.signup();
    const t = await createType(u, 'cafe', cafeFields);
    const empty = await createType(u, 'empty', [{ name: 'x', type: 'string' }]);
    const made = await svc.createProfiles(u.id, t.id, [
      { data: { name: 'A', cuisines: ['Thai'], rating: 4 } },
      { data: { name: 'B', rating: 3 } },
      { data: { name: 'C', cuisines: [] } },
      { data: { name: 'D' } },
    ]);
    await ctx.deps.db.update(profiles).set({ status: 'QUALIFIED' }).where(eq(profiles.id, made.created[0]!.id));
    await ctx.deps.db
      .update(profiles)
      .set({ data: { name: 'D', notes: '' } })
      .where(eq(profiles.id, made.created[3]!.id));
    const ot = await createType(other, 'cafe', cafeFields);
    await svc.createProfiles(other.id, ot.id, [{ data: { name: 'X', rating: 1, cuisines: ['y'] } }]);

    const res = await ctx.call(u, 'GET', '/api/profiles/stats');
    assert.equal(res.statusCode, 200);
    const s = res.json().data;
    assert.equal(s.total, 4);
    assert.deepEqual(s.byStatus, { NEW: 3, REVIEWED: 0, QUALIFIED: 1, DISQUALIFIED: 0, ARCHIVED: 0 });
    assert.deepEqual(s.byProfileType, [
      {
        profileTypeId: t.id,
        name: 'cafe',
        slug: 'cafe',
        count: 4,
        fieldCompleteness: [
          { field: 'name', filled: 4, ratio: 1 },
          { field: 'cuisines', filled: 1, ratio: 0.25 },
          { field: 'rating', filled: 2, ratio: 0.5 },
          { field: 'notes', filled: 0, ratio: 0 },
        ],
      },
      {
        profileTypeId: empty.id,
        name: 'empty',
        slug: 'empty',
        count: 0,
        fieldCompleteness: [{ field: 'x', filled: 0, ratio: 0 }],
      },
    ]);
    const fresh = await ctx.signup();
    const none = await ctx.call(fresh, 'GET', '/api/profiles/stats');
    assert.deepEqual(none.json().data, {
      total: 0,
      byStatus: { NEW: 0, REVIEWED: 0, QUALIFIED: 0, DISQUALIFIED: 0, ARCHIVED: 0 },
      byProfileType: [],
    });
  });
});
