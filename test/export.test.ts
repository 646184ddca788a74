import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { strFromU8, unzipSync } from 'fflate';
import {
  adminAuditEvents,
  destinations,
  jobs,
  leads,
  profiles,
  profileTypes,
  projects,
  proxyProfiles,
  sources,
  webhookEndpoints,
} from '../src/db/schema/index.ts';
import { DAY_MS, ManualClock } from '../src/shared/clock.ts';
import { csvCell, csvRow, parseCsv, parseCsvObjects, toCsv } from '../src/shared/csv.ts';
import { createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';

let ctx: TestContext;
const clock = new ManualClock(new Date());
before(async () => {
  ctx = await createTestContext({ clock });
});
after(async () => ctx?.close());

const TRICKY_NOTE = 'Met at expo, said "call me"\nafter Q3';
const FORMULA_COMPANY = '=HYPERLINK("http://evil.example","click")';

const post = (u: TestUser, payload?: object) =>
  ctx.inject({ method: 'POST', url: '/api/users/export', headers: u.headers, ...(payload ? { payload } : {}) });
const statusOf = async (u: TestUser) => {
  const res = await ctx.inject({ method: 'GET', url: '/api/users/export/status', headers: u.headers });
  assert.equal(res.statusCode, 200);
  return res.json().data.exports as Array<{
    requestId: string;
    status: string;
    format: string;
    createdAt: string;
    downloadExpiry: string | null;
  }>;
};
const completed = (u: TestUser, requestId: string) =>
  eventually(async () => (await statusOf(u)).find((e) => e.requestId === requestId && e.status === 'COMPLETED'));
const download = (u: TestUser, requestId: string) =>
  ctx.inject({
    method: 'GET',
    url: `/api/users/export/download?requestId=${encodeURIComponent(requestId)}`,
    headers: u.headers,
  });

/** A user with one of everything, owned rows inserted straight into the database. */
async function userWithData(label: string) {
  const u = await ctx.signup({ name: `${label} owner` });
  const db = ctx.deps.db;
  const [project] = await db
    .insert(projects)
    .values({ userId: u.id, name: `${label} project`, color: '#112233' })
    .returning();
  const [source] = await db
    .insert(sources)
    .values({
      userId: u.id,
      projectId: project!.id,
      name: `${label} source`,
      url: 'https://example.com/team',
      scrapeType: 'STATIC',
    })
    .returning();
  const [job] = await db
    .insert(jobs)
    .values({
      userId: u.id,
      sourceId: source!.id,
      name: `${label} job`,
      status: 'COMPLETED',
      progress: 100,
      leadsFound: 2,
    })
    .returning();
  const [lead] = await db
    .insert(leads)
    .values({
      userId: u.id,
      sourceId: source!.id,
      jobId: job!.id,
      firstName: 'Ada',
      lastName: `${label}-lovelace`,
      email: `ada.${label}@example.com`,
      company: FORMULA_COMPANY,
      tags: ['vip', 'expo'],
      notes: TRICKY_NOTE,
    })
    .returning();
  const [lead2] = await db
    .insert(leads)
    .values({ userId: u.id, firstName: 'Grace', lastName: `${label}-hopper`, phone: '-12', status: 'VALID' })
    .returning();
  const [type] = await db
    .insert(profileTypes)
    .values({ userId: u.id, name: 'Lender', slug: `lender-${label}`, fields: [{ name: 'rate', type: 'number' }] })
    .returning();
  const [profile] = await db
    .insert(profiles)
    .values({ userId: u.id, profileTypeId: type!.id, data: { rate: 4.5, label } })
    .returning();
  await db.insert(webhookEndpoints).values({
    userId: u.id,
    url: `https://hooks.example.com/${label}`,
    eventTypes: ['lead.created'],
    secretEncrypted: `sealed-secret-${label}`,
    previousSecretEncrypted: `sealed-previous-${label}`,
  });
  await db.insert(proxyProfiles).values({
    userId: u.id,
    type: 'socks5',
    host: `proxy-${label}.example.net`,
    port: 1080,
    username: 'me',
    passwordSealed: `sealed-proxy-${label}`,
  });
  await db.insert(destinations).values({
    userId: u.id,
    name: `warehouse-${label}`,
    type: 'postgres',
    config: { table: 'leads' },
    secrets: `sealed-destination-${label}`,
  });
  await db.insert(adminAuditEvents).values({
    targetUserId: u.id,
    action: 'user.update',
    before: { status: 'active' },
    after: { status: 'suspended' },
  });
  return {
    user: u,
    project: project!,
    source: source!,
    job: job!,
    leadIds: [lead!.id, lead2!.id],
    type: type!,
    profile: profile!,
  };
}

describe('POST /api/users/export', () => {
  test(
    '200 PENDING (JSON by default, also without a body); generated in the background; status lists it newest ' +
      'first',
    async () => {
      const u = await ctx.signup();
      const res = await post(u);
      assert.equal(res.statusCode, 200, res.body);
      const data = res.json().data;
      assert.deepEqual(Object.keys(data).sort(), ['createdAt', 'downloadExpiry', 'format', 'requestId', 'status']);
      assert.equal(data.status, 'PENDING');
      assert.equal(data.format, 'JSON');
      assert.equal(data.createdAt, clock.now().toISOString());
      assert.equal(data.downloadExpiry, null);
      const csv = await post(u, { format: 'CSV' });
      assert.equal(csv.statusCode, 200);
      assert.equal(csv.json().data.format, 'CSV');

      const list = await statusOf(u);
      assert.deepEqual(
        list.map((e) => e.requestId),
        [csv.json().data.requestId, data.requestId],
      );
      const done = await completed(u, data.requestId);
      assert.equal(done.downloadExpiry, new Date(clock.now().getTime() + 7 * DAY_MS).toISOString());
      const [row] = await ctx.deps.database.query<{ completed_at: Date; size_bytes: number }>(
        'SELECT completed_at, size_bytes FROM data_exports WHERE id = $1',
        [data.requestId],
      );
      assert.equal(new Date(row!.completed_at).toISOString(), clock.now().toISOString());
      assert.ok(row!.size_bytes > 100);
    },
  );

  test('400 VALIDATION_ERROR naming format for an unknown or wrong-typed format', async () => {
    const u = await ctx.signup();
    for (const format of ['XML', 'json', 7, null]) {
      const res = await post(u, { format });
      assert.equal(res.statusCode, 400, String(format));
      assert.equal(res.json().error.code, 'VALIDATION_ERROR');
      assert.equal(res.json().error.details[0].field, 'format');
    }
    const arr = await ctx.inject({
      method: 'POST',
      url: '/api/users/export',
      headers: u.headers,
      payload: [] as unknown as object,
    });
    assert.equal(arr.statusCode, 400);
    assert.deepEqual(await statusOf(u), [], 'refused requests are not recorded');
  });

  test('3 per rolling week: the 4th is 429 with Retry-After, not recorded; a week later it is allowed', async () => {
    const u = await ctx.signup();
    for (let i = 0; i < 3; i++) {
      assert.equal((await post(u)).statusCode, 200);
      clock.advance(60_000);
    }
    const refused = await post(u, { format: 'CSV' });
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().error.code, 'RATE_LIMIT_EXCEEDED');
    const retryAfter = Number(refused.headers['retry-after']);
    // The oldest of the three was accepted 3 minutes ago: it leaves the window in 7 days minus 3 minutes.
    assert.equal(retryAfter, (7 * DAY_MS - 3 * 60_000) / 1000);
    // Said in days and hours, rounded up (6 days 23 hours 57 minutes), never as 604,620 seconds.
    assert.equal(refused.json().error.message, 'Too many requests; retry in 7 days');
    assert.equal((await statusOf(u)).length, 3);
    // The status list is cursor-paginated like every list.
    const page1 = (
      await ctx.inject({ method: 'GET', url: '/api/users/export/status?limit=2', headers: u.headers })
    ).json().data;
    assert.equal(page1.exports.length, 2);
    const page2 = (
      await ctx.inject({
        method: 'GET',
        url: `/api/users/export/status?limit=2&cursor=${page1.nextCursor}`,
        headers: u.headers,
      })
    ).json().data;
    assert.equal(page2.exports.length, 1);
    assert.equal(page2.nextCursor, null);
    assert.equal(new Set([...page1.exports, ...page2.exports].map((e: { requestId: string }) => e.requestId)).size, 3);
    assert.equal((await post(u)).statusCode, 429, 'refused requests do not count, but do not reset either');

    clock.advance(retryAfter * 1000 + 1);
    assert.equal((await post(u)).statusCode, 200, 'the oldest left the window');
    assert.equal((await post(u)).statusCode, 429);
    assert.equal((await statusOf(u)).length, 4);
    // Another user has their own budget.
    assert.equal((await post(await ctx.signup())).statusCode, 200);
  });

  test('concurrent requests cannot exceed the limit', async () => {
    const u = await ctx.signup();
    const results = await Promise.all(Array.from({ length: 8 }, () => post(u)));
    const codes = results.map((r) => r.statusCode).sort();
    assert.deepEqual(codes, [200, 200, 200, 429, 429, 429, 429, 429]);
    const [row] = await ctx.deps.database.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM data_exports WHERE user_id = $1',
      [u.id],
    );
    assert.equal(Number(row!.n), 3);
  });

  test('403 with a users:read key; 401 without a key', async () => {
    const u = await ctx.signup();
    const key = await ctx.inject({
      method: 'POST',
      url: '/api/api-keys',
      headers: u.headers,
      payload: { name: 'ro', scopes: ['users:read'] },
    });
    const ro = { authorization: `Bearer ${key.json().data.apiKey.key}` };
    const res = await ctx.inject({ method: 'POST', url: '/api/users/export', headers: ro, payload: {} });
    assert.equal(res.statusCode, 403);
    assert.equal((await ctx.inject({ method: 'GET', url: '/api/users/export/status', headers: ro })).statusCode, 200);
    assert.equal((await ctx.inject({ method: 'POST', url: '/api/users/export', payload: {} })).statusCode, 401);
    assert.equal((await ctx.inject({ method: 'GET', url: '/api/users/export/status' })).statusCode, 401);
  });
});

describe('GET /api/users/export/download', () => {
  test('JSON: everything the user owns, nothing of anyone else, no password or key hashes', async () => {
    const mine = await userWithData('mine');
    const theirs = await userWithData('theirs');
    const { requestId } = (await post(mine.user, { format: 'JSON' })).json().data;
    await completed(mine.user, requestId);

    const res = await download(mine.user, requestId);
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.match(
      String(res.headers['content-disposition']),
      /^attachment; filename="quarry-export-\d{4}-\d{2}-\d{2}\.json"$/,
    );
    const text = res.body;
    const doc = JSON.parse(text);
    assert.equal(doc.profile.id, mine.user.id);
    assert.equal(doc.profile.email, mine.user.email);
    assert.equal(doc.profile.name, 'mine owner');
    assert.deepEqual(
      doc.projects.map((p: { id: string }) => p.id),
      [mine.project.id],
    );
    assert.equal(doc.projects[0].name, 'mine project');
    assert.deepEqual(
      doc.sources.map((s: { id: string }) => s.id),
      [mine.source.id],
    );
    assert.deepEqual(
      doc.jobs.map((j: { id: string }) => j.id),
      [mine.job.id],
    );
    assert.deepEqual(doc.leads.map((l: { id: string }) => l.id).sort(), [...mine.leadIds].sort());
    const ada = doc.leads.find((l: { firstName: string }) => l.firstName === 'Ada');
    assert.equal(ada.notes, TRICKY_NOTE);
    assert.deepEqual(ada.tags, ['vip', 'expo']);
    assert.deepEqual(
      doc.profileTypes.map((t: { id: string }) => t.id),
      [mine.type.id],
    );
    assert.deepEqual(
      doc.profiles.map((p: { id: string }) => p.id),
      [mine.profile.id],
    );
    assert.deepEqual(doc.profiles[0].data, { rate: 4.5, label: 'mine' });
    assert.deepEqual(doc.consentHistory.map((c: { consentType: string }) => c.consentType).sort(), [
      'marketing',
      'privacy',
      'terms',
    ]);
    assert.equal(doc.apiKeys.length, 1);
    assert.deepEqual(Object.keys(doc.apiKeys[0]).sort(), [
      'createdAt',
      'expiresAt',
      'id',
      'lastUsedAt',
      'name',
      'prefix',
      'revokedAt',
      'scopes',
    ]);
    assert.equal(doc.apiKeys[0].prefix, mine.user.apiKey.slice(0, 12));
    assert.deepEqual(
      doc.webhooks.map((w: { url: string }) => w.url),
      ['https://hooks.example.com/mine'],
    );
    assert.ok(!text.includes('sealed-secret-mine') && !text.includes('sealed-previous-mine'), 'no signing secret');
    assert.ok(
      !text.includes('sealed-proxy-mine') && !text.includes('sealed-destination-mine'),
      'no third-party secret',
    );
    assert.deepEqual(
      [doc.proxyProfiles[0].host, doc.destinations[0].name],
      ['proxy-mine.example.net', 'warehouse-mine'],
    );
    assert.ok(!('secretEncrypted' in doc.webhooks[0]) && !('previousSecretEncrypted' in doc.webhooks[0]));
    assert.deepEqual(
      doc.adminChanges.map((a: { after: unknown }) => a.after),
      [{ status: 'suspended' }],
      'what admins changed about the account',
    );
    // Secrets never leave the database.
    assert.ok(!text.includes('$argon2'), 'no password hash');
    assert.ok(!/password/i.test(text), 'no password field');
    assert.ok(!/keyHash|key_hash/.test(text));
    assert.ok(!text.includes(mine.user.apiKey), 'not the key itself');
    const [keyRow] = await ctx.deps.database.query<{ key_hash: string }>(
      'SELECT key_hash FROM api_keys WHERE user_id = $1',
      [mine.user.id],
    );
    assert.ok(!text.includes(keyRow!.key_hash));
    // Nothing of the other user.
    assert.ok(!text.includes(theirs.user.id) && !text.includes('theirs'));
  });

  test(
    'CSV: a ZIP with one RFC 4180 CSV per table; quotes, commas and newlines survive; formulas are ' + 'neutralised',
    async () => {
      const mine = await userWithData('zip');
      const { requestId } = (await post(mine.user, { format: 'CSV' })).json().data;
      await completed(mine.user, requestId);
      const res = await download(mine.user, requestId);
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['content-type'], 'application/zip');
      assert.match(String(res.headers['content-disposition']), /^attachment; filename="quarry-export-[\d-]+\.zip"$/);
      const files = unzipSync(new Uint8Array(res.rawPayload));
      assert.deepEqual(Object.keys(files).sort(), [
        'account_notes.csv',
        'admin_changes.csv',
        'ai_usage.csv',
        'api_keys.csv',
        'campaigns.csv',
        'chat_approvals.csv',
        'chat_conversations.csv',
        'chat_messages.csv',
        'consent_history.csv',
        'credit_checkouts.csv',
        'credit_transactions.csv',
        'destination_pushes.csv',
        'destinations.csv',
        'email_bounces.csv',
        'jobs.csv',
        'leads.csv',
        'markdown_export_pages.csv',
        'markdown_exports.csv',
        'matching_rules.csv',
        'matching_runs.csv',
        'network_credentials.csv',
        'network_enrich_jobs.csv',
        'organization_memberships.csv',
        'outreach_campaigns.csv',
        'outreach_connections.csv',
        'outreach_enrollments.csv',
        'outreach_mailboxes.csv',
        'outreach_messages.csv',
        'outreach_unsubscribes.csv',
        'profile.csv',
        'profile_types.csv',
        'profiles.csv',
        'projects.csv',
        'proxy_profiles.csv',
        'source_templates.csv',
        'sources.csv',
        'suppressions.csv',
        'warmup_domains.csv',
        'webhook_events.csv',
        'webhooks.csv',
      ]);
      const leadsCsv = strFromU8(files['leads.csv']!);
      // The note is quoted, inner quotes doubled, the newline kept inside the quotes.
      assert.ok(leadsCsv.includes('"Met at expo, said ""call me""\nafter Q3"'), leadsCsv);
      assert.ok(leadsCsv.endsWith('\r\n'));
      const rows = parseCsvObjects(leadsCsv);
      assert.equal(rows.length, 2);
      const ada = rows.find((r) => r.firstName === 'Ada')!;
      assert.equal(ada.notes, TRICKY_NOTE);
      assert.equal(ada.email, 'ada.zip@example.com');
      assert.equal(ada.company, `'${FORMULA_COMPANY}`, 'formula prefixed with a quote');
      assert.equal(ada.tags, '["vip","expo"]');
      assert.equal(rows.find((r) => r.firstName === 'Grace')!.phone, "'-12");
      const profile = parseCsvObjects(strFromU8(files['profile.csv']!));
      assert.equal(profile.length, 1);
      assert.equal(profile[0]!.id, mine.user.id);
      assert.ok(!Object.keys(profile[0]!).some((k) => /password/i.test(k)));
      const everything = Object.values(files)
        .map((f) => strFromU8(f))
        .join('\n');
      assert.ok(!everything.includes('$argon2'));
      assert.deepEqual(parseCsv(strFromU8(files['api_keys.csv']!))[0], [
        'id',
        'name',
        'prefix',
        'scopes',
        'expiresAt',
        'lastUsedAt',
        'revokedAt',
        'createdAt',
      ]);
      assert.equal(parseCsvObjects(strFromU8(files['projects.csv']!))[0]!.name, 'zip project');
      const ledger = parseCsvObjects(strFromU8(files['credit_transactions.csv']!));
      assert.deepEqual([ledger[0]!.kind, ledger[0]!.reason], ['grant', 'signup grant']);
      assert.deepEqual(
        parseCsv(strFromU8(files['suppressions.csv']!)).length,
        1,
        'an empty table still has its header',
      );
    },
  );

  test("404 for an unknown, malformed, pending or another user's requestId; 400 naming a missing one", async () => {
    const owner = await ctx.signup();
    const other = await ctx.signup();
    const { requestId } = (await post(owner)).json().data;
    await completed(owner, requestId);
    assert.equal((await download(owner, requestId)).statusCode, 200);

    const stolen = await download(other, requestId);
    assert.equal(stolen.statusCode, 404);
    assert.equal(stolen.json().error.code, 'NOT_FOUND');
    assert.deepEqual(await statusOf(other), [], "status lists only the caller's exports");
    for (const id of ['0190f5a2-0000-7000-8000-000000000000', 'not-a-uuid', "1' OR '1'='1"]) {
      const res = await download(owner, id);
      assert.equal(res.statusCode, 404, id);
      assert.equal(res.json().error.code, 'NOT_FOUND');
    }
    const [pending] = await ctx.deps.database.query<{ id: string }>(
      `INSERT INTO data_exports (id, user_id, format, ` +
        `status) VALUES (gen_random_uuid(), $1, 'JSON', 'PENDING') RETURNING id`,
      [owner.id],
    );
    assert.equal((await download(owner, pending!.id)).statusCode, 404);

    for (const url of ['/api/users/export/download', '/api/users/export/download?requestId=']) {
      const res = await ctx.inject({ method: 'GET', url, headers: owner.headers });
      assert.equal(res.statusCode, 400, url);
      assert.equal(res.json().error.code, 'VALIDATION_ERROR');
      assert.equal(res.json().error.details[0].field, 'requestId');
    }
    assert.equal(
      (await ctx.inject({ method: 'GET', url: `/api/users/export/download?requestId=${requestId}` })).statusCode,
      401,
    );
  });

  test('downloadable for 7 days after completion, 404 after', async () => {
    const u = await ctx.signup();
    const { requestId } = (await post(u)).json().data;
    const done = await completed(u, requestId);
    const expiry = Date.parse(done.downloadExpiry!);
    clock.set(new Date(expiry - 1000));
    assert.equal((await download(u, requestId)).statusCode, 200);
    clock.set(new Date(expiry));
    const res = await download(u, requestId);
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().error.code, 'NOT_FOUND');
    assert.equal((await statusOf(u))[0]!.status, 'COMPLETED', 'still listed, with its expiry');
  });
});

describe('csv helper', () => {
  test('RFC 4180 quoting and formula neutralisation', () => {
    assert.equal(
      csvRow(['a', 'b,c', 'say "hi"', 'two\nlines', 'cr\rhere', '']),
      'a,"b,c","say ""hi""","two\nlines","cr\rhere",\r\n',
    );
    assert.equal(
      csvRow(['=1+1', '+31 20', '-x', '@SUM(A1)', '\tTAB', 'safe=1']),
      "'=1+1,'+31 20,'-x,'@SUM(A1),'\tTAB,safe=1\r\n",
    );
    assert.equal(csvCell('=A1,"x"'), `"'=A1,""x"""`);
    assert.equal(csvRow([-5, 3.5, 0, Number.NaN, 10n, true, false, null, undefined]), '-5,3.5,0,,10,true,false,,\r\n');
    assert.equal(
      csvRow([new Date('2030-01-02T03:04:05.000Z'), ['a', 'b'], { k: 'v, w' }]),
      '2030-01-02T03:04:05.000Z,"[""a"",""b""]","{""k"":""v, w""}"\r\n',
    );
    assert.equal(csvCell('=x', { escapeFormulas: false }), '=x');
  });

  test('toCsv with key and function columns, parseCsv round trip', () => {
    const rows = [
      { id: 1, name: 'Smith, John', note: 'He said "no"\r\nthen left' },
      { id: 2, name: '', note: null },
    ];
    const text = toCsv<(typeof rows)[number]>(
      ['id', 'name', { header: 'upper', value: (r) => r.name.toUpperCase() }, 'note'],
      rows,
    );
    assert.equal(text, 'id,name,upper,note\r\n1,"Smith, John","SMITH, JOHN","He said ""no""\r\nthen left"\r\n2,,,\r\n');
    assert.deepEqual(parseCsv(text), [
      ['id', 'name', 'upper', 'note'],
      ['1', 'Smith, John', 'SMITH, JOHN', 'He said "no"\r\nthen left'],
      ['2', '', '', ''],
    ]);
    assert.ok(toCsv(['a'], [], { bom: true }).startsWith('\uFEFFa\r\n'));
    assert.deepEqual(parseCsv('\uFEFFa,b\nx,"y\n""z"""'), [
      ['a', 'b'],
      ['x', 'y\n"z"'],
    ]);
  });
});
