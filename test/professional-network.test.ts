/**
 * The professional-network integration (`/api/linkedin/…`) against a loopback imitation of the network: credentials
 * sealed and masked, their computed status (RATE_LIMITED, SOFT_BANNED after a 999 or a login wall, INVALID after a
 * rejected login), profile URL validation, enrichment of one lead and of a paced job through real Chromium,
 * commonalities with the AI stub and offline, another user's things, bad input and scopes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { networkCredentials, networkEnrichJobs } from '../src/db/schema/index.ts';
import { collectUserData } from '../src/modules/data-export/data-export.builder.ts';
import { createCredentials, credentialStatus } from '../src/modules/professional-network/credentials.ts';
import { createEnricher, createEnrichRecovery } from '../src/modules/professional-network/index.ts';
import type { CredentialRow } from '../src/modules/professional-network/network.repository.ts';
import { type NetworkSite, startNetworkSite } from './fixtures/network-site.ts';
import { createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError } from './helpers/assertions.ts';
import { type BrowserTestContext, createBrowserContext } from './helpers/browser.ts';
import { type OpenAiStub, promptText, startOpenAiStub } from './helpers/openai-stub.ts';
import { seedLeads } from './helpers/seed.ts';

const GOOD = 'AQEDAR-good-cookie-0001';
const GOOD2 = 'AQEDAR-good-cookie-0002';
const DELAY_MS = 300;

let site: NetworkSite;
let ai: OpenAiStub;
let ctx: BrowserTestContext;
let alice: TestUser;
let bob: TestUser;

before(async () => {
  site = await startNetworkSite(new Set([GOOD, GOOD2]));
  ai = await startOpenAiStub();
  ctx = await createBrowserContext({
    workers: true,
    env: {
      LINKEDIN_BASE_URL: site.url,
      LINKEDIN_DELAY_MS: String(DELAY_MS),
      LINKEDIN_JITTER_MS: '100',
      AI_BASE_URL: ai.baseURL,
      AI_MODEL: 'stub-model',
      AI_MAX_RETRIES: '0',
    },
  });
  [alice, bob] = await Promise.all([ctx.signup(), ctx.signup()]);
});
after(async () => {
  await ctx?.close();
  await ai?.close();
  await site?.close();
});

const call = (user: TestUser, method: 'GET' | 'POST', url: string, payload?: unknown) =>
  ctx.app.inject({
    method,
    url,
    headers: user.headers,
    ...(payload !== undefined ? { payload: payload as object } : {}),
  });
const profile = (slug: string) => `${site.url}/in/${slug}`;

async function credential(user: TestUser, body: object): Promise<any> {
  const res = await call(user, 'POST', '/api/linkedin/credentials', body);
  assert.equal(res.statusCode, 201, JSON.stringify(res.json()));
  return res.json().data.credential;
}
async function credentialNow(user: TestUser, id: string): Promise<any> {
  const res = await call(user, 'GET', '/api/linkedin/credentials?limit=100');
  return res.json().data.credentials.find((c: any) => c.id === id);
}
const leadOf = async (user: TestUser, id: string) => (await call(user, 'GET', `/api/leads/${id}`)).json().data.lead;
const seed = (user: TestUser, rows: Parameters<typeof seedLeads>[2]) => seedLeads(ctx.deps.db, user.id, rows);

function assertField(res: { statusCode: number; json(): any }, field: string) {
  assertError(res, 400, 'VALIDATION_ERROR');
  const fields = (res.json().error.details as Array<{ field: string }>).map((d) => d.field);
  assert.ok(
    fields.some((f) => f === field || f.startsWith(`${field}.`)),
    `${field} in ${fields}`,
  );
}

describe('credentials', () => {
  test('stored sealed, answered masked, listed with status, limit and requests remaining', async () => {
    const made = await credential(alice, { cookie: GOOD, name: 'main', dailyLimit: 25 });
    assert.equal(made.cookie, '••••0001');
    assert.equal(made.cookieName, 'li_at');
    assert.equal(made.status, 'ACTIVE');
    assert.equal(made.dailyLimit, 25);
    assert.equal(made.requestsRemaining, 25);
    const [row] = await ctx.deps.db.select().from(networkCredentials).where(eq(networkCredentials.id, made.id));
    assert.ok(row);
    assert.ok(!JSON.stringify(row).includes(GOOD), 'no column holds the cookie in plain text');
    assert.match(row.cookieSealed, /^v1\./);
    const list = await call(alice, 'GET', '/api/linkedin/credentials');
    assert.equal(list.statusCode, 200);
    assert.ok(!list.body.includes(GOOD));
    const listed = list.json().data.credentials.find((c: any) => c.id === made.id);
    assert.deepEqual(
      [listed.status, listed.dailyLimit, listed.requestsToday, listed.requestsRemaining, listed.cookie],
      ['ACTIVE', 25, 0, 25, '••••0001'],
    );
    // The default limit is LINKEDIN_DAILY_LIMIT.
    assert.equal((await credential(alice, { cookie: 'AQEDAR-other-cookie' })).dailyLimit, 80);
    // Bob sees none of them.
    const bobs = (await call(bob, 'GET', '/api/linkedin/credentials')).json().data.credentials;
    assert.equal(bobs.length, 0);
  });

  test('bad input is a 400 naming the field', async () => {
    assertField(await call(alice, 'POST', '/api/linkedin/credentials', {}), 'cookie');
    assertField(await call(alice, 'POST', '/api/linkedin/credentials', { cookie: 'abc;def=ghi1' }), 'cookie');
    assertField(await call(alice, 'POST', '/api/linkedin/credentials', { cookie: GOOD, dailyLimit: 0 }), 'dailyLimit');
    const extra = await call(alice, 'POST', '/api/linkedin/credentials', { cookie: GOOD, extra: 1 });
    assertField(extra, 'body');
    assert.match(extra.json().error.details[0].message, /extra/);
    assertField(await call(alice, 'GET', '/api/linkedin/credentials?cursor=nope'), 'cursor');
  });

  test('scopes: linkedin:read lists but cannot store; another scope cannot list', async () => {
    const mint = async (scopes: string[]) => {
      const res = await ctx.inject({
        method: 'POST',
        url: '/api/api-keys',
        headers: alice.headers,
        payload: { name: scopes.join(' '), scopes },
      });
      return { ...alice, headers: { authorization: `Bearer ${res.json().data.apiKey.key}` } };
    };
    const reader = await mint(['linkedin:read']);
    const other = await mint(['leads:read']);
    assert.equal((await call(reader, 'GET', '/api/linkedin/credentials')).statusCode, 200);
    assertError(await call(reader, 'POST', '/api/linkedin/credentials', { cookie: GOOD }), 403, 'INSUFFICIENT_SCOPE');
    assertError(await call(reader, 'POST', '/api/linkedin/enrich', { leadIds: [] }), 403, 'INSUFFICIENT_SCOPE');
    assertError(await call(other, 'GET', '/api/linkedin/credentials'), 403, 'INSUFFICIENT_SCOPE');
    assertError(await call(other, 'GET', '/api/linkedin/jobs'), 403, 'INSUFFICIENT_SCOPE');
  });
});

test('status computation: the daily count restarts each UTC day, a soft ban lasts 24 hours, INVALID stays', () => {
  const at = new Date('2026-03-10T23:59:00Z');
  const row = {
    dailyLimit: 2,
    requestsDay: '2026-03-10',
    requestsToday: 2,
    softBannedAt: null,
    invalidAt: null,
  } as unknown as CredentialRow;
  assert.equal(credentialStatus(row, at), 'RATE_LIMITED');
  assert.equal(credentialStatus(row, new Date('2026-03-11T00:00:01Z')), 'ACTIVE');
  assert.equal(credentialStatus({ ...row, requestsToday: 1 }, at), 'ACTIVE');
  const banned = { ...row, requestsToday: 0, softBannedAt: new Date('2026-03-10T12:00:00Z') };
  assert.equal(credentialStatus(banned, at), 'SOFT_BANNED');
  assert.equal(credentialStatus(banned, new Date('2026-03-11T12:00:01Z')), 'ACTIVE');
  assert.equal(credentialStatus({ ...banned, invalidAt: new Date('2026-01-01T00:00:00Z') }, at), 'INVALID');
});

describe('validate', () => {
  test('a profile URL: canonical, with its public metadata', async () => {
    const res = await call(alice, 'POST', '/api/linkedin/validate', { url: `${profile('ann-lee')}?trk=x#top` });
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.equal(data.url, `${site.url}/in/ann-lee/`);
    assert.equal(data.slug, 'ann-lee');
    assert.equal(data.reachable, true);
    assert.equal(data.profile.name, 'Ann Lee');
    assert.equal(data.profile.title, 'VP Engineering');
    assert.equal(data.profile.company, 'Acme Corp');
    assert.equal(data.profile.headline, 'VP Engineering - Acme Corp');
    assert.equal(data.profile.imageUrl, 'https://media.example/ann.jpg');
    // Sent without any credential.
    const seen = site.requests.filter((r) => r.path.startsWith('/in/ann-lee/'));
    assert.ok(seen.length > 0 && seen.every((r) => r.cookie === undefined));
  });

  test('a challenge, a login wall and a missing profile: not reachable, with the reason', async () => {
    const challenged = (await call(alice, 'POST', '/api/linkedin/validate', { url: profile('challenged') })).json()
      .data;
    assert.deepEqual([challenged.reachable, challenged.httpStatus, challenged.profile], [false, 999, null]);
    assert.match(challenged.reason, /999/);
    const walled = (await call(alice, 'POST', '/api/linkedin/validate', { url: profile('walled') })).json().data;
    assert.equal(walled.reachable, false);
    assert.match(walled.reason, /login wall/);
    const missing = (await call(alice, 'POST', '/api/linkedin/validate', { url: profile('nobody-here') })).json().data;
    assert.deepEqual([missing.reachable, missing.httpStatus], [false, 404]);
  });

  test('bad URLs are a 400 naming url', async () => {
    for (const url of [
      'not a url',
      'https://elsewhere.example/in/ann-lee',
      `${site.url}/company/acme`,
      `${site.url}/in/`,
      `${site.url}/in/a`,
      `${site.url}/in/ann-lee/details`,
      `ftp://127.0.0.1/in/ann-lee`,
    ]) {
      assertField(await call(alice, 'POST', '/api/linkedin/validate', { url }), 'url');
    }
    assertField(await call(alice, 'POST', '/api/linkedin/validate', {}), 'url');
  });
});

describe('enrich one lead', () => {
  test('fills title, company, location and profile URL through a browser session carrying the cookie', async () => {
    const cred = await credential(alice, { cookie: GOOD, dailyLimit: 5 });
    const [leadId] = await seed(alice, [
      { firstName: 'Ann', email: 'ann@acme.test', customFields: { profileUrl: profile('ann-lee') } },
    ]);
    const before = site.profileRequests().length;
    const res = await call(alice, 'POST', '/api/linkedin/enrich', { leadId, credentialId: cred.id });
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.deepEqual(data.lead, {
      id: leadId,
      jobTitle: 'VP Engineering',
      company: 'Acme Corp',
      location: 'Austin',
      profileUrl: `${site.url}/in/ann-lee/`,
    });
    assert.equal(data.credential.requestsToday, 1);
    assert.equal(data.credential.requestsRemaining, 4);
    const lead = await leadOf(alice, leadId!);
    assert.deepEqual(
      [lead.jobTitle, lead.company, lead.customFields.location, lead.customFields.profileUrl],
      ['VP Engineering', 'Acme Corp', 'Austin', `${site.url}/in/ann-lee/`],
    );
    const sent = site.profileRequests().slice(before);
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.cookie, GOOD);
    // Through a session of Alice's, released once done.
    const sessions = (await call(alice, 'GET', '/api/browser/sessions?metadata=purpose=linkedin.enrich')).json().data
      .sessions;
    assert.ok(sessions.length >= 1);
    assert.ok(sessions.every((s: any) => s.status === 'RELEASED'));
  });

  test('meta tags alone are read when the page has no JSON-LD; profileUrl in the body wins', async () => {
    await credential(alice, { cookie: GOOD2 });
    const [leadId] = await seed(alice, [{ firstName: 'Bob' }]);
    const res = await call(alice, 'POST', '/api/linkedin/enrich', { leadId, profileUrl: profile('bob-stone') });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(
      [res.json().data.lead.jobTitle, res.json().data.lead.company, res.json().data.profile.name],
      ['Head of Sales', 'Globex', 'Bob Stone'],
    );
  });

  test('RATE_LIMITED once the daily limit is spent: the next enrichment is a 429', async () => {
    const cred = await credential(alice, { cookie: GOOD, dailyLimit: 1 });
    const [a, b] = await seed(alice, [
      { customFields: { profileUrl: profile('ann-lee') } },
      { customFields: { profileUrl: profile('cid-moss') } },
    ]);
    assert.equal(
      (await call(alice, 'POST', '/api/linkedin/enrich', { leadId: a, credentialId: cred.id })).statusCode,
      200,
    );
    const now = await credentialNow(alice, cred.id);
    assert.deepEqual([now.status, now.requestsRemaining], ['RATE_LIMITED', 0]);
    const before = site.profileRequests().length;
    const res = await call(alice, 'POST', '/api/linkedin/enrich', { leadId: b, credentialId: cred.id });
    assertError(res, 429, 'RATE_LIMIT_EXCEEDED');
    assert.equal(site.profileRequests().length, before, 'nothing was requested');
  });

  test('SOFT_BANNED after a 999 and after a login wall; INVALID after a rejected login', async () => {
    const cases = [
      { slug: 'challenged', cookie: GOOD, status: 'SOFT_BANNED', reason: /999/ },
      { slug: 'walled', cookie: GOOD, status: 'SOFT_BANNED', reason: /login wall/ },
      { slug: 'throttled', cookie: GOOD, status: 'SOFT_BANNED', reason: /429/ },
      { slug: 'ann-lee', cookie: 'AQEDAR-revoked-cookie', status: 'INVALID', reason: /rejected/ },
    ];
    for (const c of cases) {
      const cred = await credential(alice, { cookie: c.cookie });
      const [leadId] = await seed(alice, [{ customFields: { profileUrl: profile(c.slug) } }]);
      const res = await call(alice, 'POST', '/api/linkedin/enrich', { leadId, credentialId: cred.id });
      assertError(res, 502, 'PLATFORM_ERROR');
      const now = await credentialNow(alice, cred.id);
      assert.equal(now.status, c.status, c.slug);
      assert.match(now.statusReason, c.reason);
      // A marked credential is refused before anything is sent.
      const again = await call(alice, 'POST', '/api/linkedin/enrich', { leadId, credentialId: cred.id });
      assertError(again, 400, 'INVALID_STATE');
      assert.equal((await leadOf(alice, leadId!)).jobTitle, null, 'the lead is unchanged');
    }
  });

  test('a lead without a profile URL, another user, bad input', async () => {
    const [plain] = await seed(alice, [{ firstName: 'Nobody' }]);
    assertField(await call(alice, 'POST', '/api/linkedin/enrich', { leadId: plain }), 'profileUrl');
    assertField(
      await call(alice, 'POST', '/api/linkedin/enrich', { leadId: plain, profileUrl: 'https://x.example/in/abc' }),
      'profileUrl',
    );
    // Bob: Alice's lead and credential are not found; he has no credential at all.
    const mine = await credential(alice, { cookie: GOOD });
    assertError(await call(bob, 'POST', '/api/linkedin/enrich', { leadId: plain }), 400, 'INVALID_STATE');
    await credential(bob, { cookie: GOOD2 });
    assertError(await call(bob, 'POST', '/api/linkedin/enrich', { leadId: plain }), 404, 'NOT_FOUND');
    const other = await call(bob, 'POST', '/api/linkedin/enrich', { leadId: plain, credentialId: mine.id });
    assertError(other, 404, 'NOT_FOUND');
    assert.equal(other.json().error.details[0].field, 'credentialId');
    assertField(await call(alice, 'POST', '/api/linkedin/enrich', {}), 'leadId');
    assertField(await call(alice, 'POST', '/api/linkedin/enrich', { leadId: plain, leadIds: [plain] }), 'leadId');
    assertField(await call(alice, 'POST', '/api/linkedin/enrich', { leadId: 'nope' }), 'leadId');
    assertField(await call(alice, 'POST', '/api/linkedin/enrich', { leadIds: ['nope'] }), 'leadIds');
    assertField(await call(alice, 'POST', '/api/linkedin/enrich', { leadIds: [] }), 'leadIds');
    assertField(
      await call(alice, 'POST', '/api/linkedin/enrich', { leadIds: [plain], profileUrl: profile('ann-lee') }),
      'profileUrl',
    );
  });
});

describe('enrichment jobs', () => {
  test('several leads at a human pace, with progress and per-lead outcomes', async () => {
    const cred = await credential(alice, { cookie: GOOD, dailyLimit: 50 });
    const [foreign] = await seed(bob, [{ customFields: { profileUrl: profile('bob-stone') } }]);
    const ids = await seed(alice, [
      { customFields: { profileUrl: profile('ann-lee') } },
      { firstName: 'No URL' },
      { customFields: { profileUrl: profile('cid-moss') } },
      { customFields: { profileUrl: profile('nobody-here') } },
    ]);
    const before = site.profileRequests().length;
    const res = await call(alice, 'POST', '/api/linkedin/enrich', {
      leadIds: [...ids, foreign],
      credentialId: cred.id,
    });
    assert.equal(res.statusCode, 202, res.body);
    const { job } = res.json().data;
    assert.deepEqual([job.status, job.total, job.processed, job.progress], ['PENDING', 5, 0, 0]);
    const done = await eventually(async () => {
      const j = (await call(alice, 'GET', `/api/linkedin/jobs/${job.id}`)).json().data.job;
      return j.status === 'COMPLETED' && j;
    }, 60_000);
    assert.deepEqual([done.processed, done.enriched, done.failed, done.progress], [5, 2, 3, 100]);
    assert.deepEqual(
      done.results.map((r: any) => r.status),
      ['ENRICHED', 'SKIPPED', 'ENRICHED', 'FAILED', 'SKIPPED'],
    );
    assert.equal(done.results[4].leadId, foreign, "Bob's lead is not Alice's to enrich");
    assert.equal((await leadOf(alice, ids[2]!)).jobTitle, 'Staff Engineer');
    assert.equal((await leadOf(bob, foreign!)).jobTitle, null);
    const sent = site.profileRequests().slice(before);
    assert.equal(sent.length, 3);
    for (let i = 1; i < sent.length; i++) {
      assert.ok(sent[i]!.at - sent[i - 1]!.at >= DELAY_MS, `paced: ${sent[i]!.at - sent[i - 1]!.at} ms`);
    }
    assert.equal((await credentialNow(alice, cred.id)).requestsToday, 3);
    // Listed, and Bob sees neither the job nor its detail.
    const listed = (await call(alice, 'GET', '/api/linkedin/jobs')).json().data.jobs;
    assert.ok(listed.some((j: any) => j.id === job.id));
    assert.equal((await call(bob, 'GET', '/api/linkedin/jobs')).json().data.jobs.length, 0);
    assertError(await call(bob, 'GET', `/api/linkedin/jobs/${job.id}`), 404, 'NOT_FOUND');
    assertError(await call(alice, 'GET', '/api/linkedin/jobs/not-a-uuid'), 404, 'NOT_FOUND');
  });

  test('stops at a challenge and marks the credential SOFT_BANNED', async () => {
    const cred = await credential(alice, { cookie: GOOD2 });
    const ids = await seed(alice, [
      { customFields: { profileUrl: profile('ann-lee') } },
      { customFields: { profileUrl: profile('challenged') } },
      { customFields: { profileUrl: profile('cid-moss') } },
    ]);
    const before = site.profileRequests().length;
    const { job } = (await call(alice, 'POST', '/api/linkedin/enrich', { leadIds: ids, credentialId: cred.id })).json()
      .data;
    const done = await eventually(async () => {
      const j = (await call(alice, 'GET', `/api/linkedin/jobs/${job.id}`)).json().data.job;
      return j.status !== 'PENDING' && j.status !== 'RUNNING' && j;
    }, 60_000);
    assert.equal(done.status, 'STOPPED');
    assert.deepEqual([done.processed, done.enriched, done.failed, done.progress], [2, 1, 1, 66]);
    assert.match(done.stopReason, /999.*SOFT_BANNED/);
    assert.deepEqual(
      site
        .profileRequests()
        .slice(before)
        .map((r) => r.path),
      ['/in/ann-lee/', '/in/challenged/'],
      'nothing after the challenge',
    );
    assert.equal((await credentialNow(alice, cred.id)).status, 'SOFT_BANNED');
  });

  test('stops when the daily limit is spent', async () => {
    const cred = await credential(alice, { cookie: GOOD, dailyLimit: 1 });
    const ids = await seed(alice, [
      { customFields: { profileUrl: profile('ann-lee') } },
      { customFields: { profileUrl: profile('cid-moss') } },
    ]);
    const { job } = (await call(alice, 'POST', '/api/linkedin/enrich', { leadIds: ids, credentialId: cred.id })).json()
      .data;
    const done = await eventually(async () => {
      const j = (await call(alice, 'GET', `/api/linkedin/jobs/${job.id}`)).json().data.job;
      return j.status !== 'PENDING' && j.status !== 'RUNNING' && j;
    }, 60_000);
    assert.deepEqual([done.status, done.processed, done.enriched], ['STOPPED', 1, 1]);
    assert.match(done.stopReason, /RATE_LIMITED/);
  });

  test('a credential marked SOFT_BANNED or INVALID meanwhile gives no further request, whatever job holds it', async () => {
    const credentials = createCredentials(ctx.deps);
    for (const mark of [{ softBannedAt: new Date() }, { invalidAt: new Date() }]) {
      const cred = await credential(alice, { cookie: GOOD, dailyLimit: 50 });
      assert.ok(await credentials.spend(cred.id), 'usable before');
      await ctx.deps.db.update(networkCredentials).set(mark).where(eq(networkCredentials.id, cred.id));
      assert.equal(await credentials.spend(cred.id), undefined);
      assert.equal((await credentialNow(alice, cred.id)).requestsToday, 1, 'the refused spend counted nothing');
      assert.equal(await credentials.whyRefused(alice.id, cred.id), 'softBannedAt' in mark ? 'SOFT_BANNED' : 'INVALID');
    }
  });
});

test('a job left RUNNING by a crash resumes after its last recorded lead', async () => {
  const cred = await credential(alice, { cookie: GOOD });
  const ids = await seed(alice, [
    { customFields: { profileUrl: profile('ann-lee') } },
    { customFields: { profileUrl: profile('cid-moss') } },
  ]);
  const [row] = await ctx.deps.db
    .insert(networkEnrichJobs)
    .values({
      userId: alice.id,
      credentialId: cred.id,
      status: 'RUNNING',
      leadIds: ids,
      processed: 1,
      enriched: 1,
      results: [{ leadId: ids[0]!, status: 'ENRICHED' }],
      startedAt: new Date(),
    })
    .returning();
  const before = site.profileRequests().length;
  assert.deepEqual(await createEnrichRecovery(ctx.deps).recoverOrphans(), [row!.id]);
  const done = await eventually(async () => {
    const j = (await call(alice, 'GET', `/api/linkedin/jobs/${row!.id}`)).json().data.job;
    return j.status === 'COMPLETED' && j;
  }, 60_000);
  assert.deepEqual([done.processed, done.enriched, done.results.length], [2, 2, 2]);
  assert.deepEqual(
    site
      .profileRequests()
      .slice(before)
      .map((r) => r.path),
    ['/in/cid-moss/'],
  );
});

test('a job running in a process that shuts down goes back to the queue and resumes elsewhere', async () => {
  const cred = await credential(alice, { cookie: GOOD });
  const ids = await seed(alice, [
    { customFields: { profileUrl: profile('ann-lee') } },
    { customFields: { profileUrl: profile('bob-stone') } },
    { customFields: { profileUrl: profile('cid-moss') } },
  ]);
  const [row] = await ctx.deps.db
    .insert(networkEnrichJobs)
    .values({ userId: alice.id, credentialId: cred.id, leadIds: ids })
    .returning();
  const before = site.profileRequests().length;
  // Another enricher, as in a second process: it runs the job until its stop.
  const enricher = createEnricher(ctx.deps);
  const run = enricher.run(row!.id);
  const jobNow = async () => (await call(alice, 'GET', `/api/linkedin/jobs/${row!.id}`)).json().data.job;
  await eventually(async () => (await jobNow()).processed >= 1, 30_000);
  await enricher.stop();
  await run;
  const [handed] = await ctx.deps.db.select().from(networkEnrichJobs).where(eq(networkEnrichJobs.id, row!.id));
  assert.ok(handed!.processed < 3, 'stopped before the end');
  assert.ok(
    handed!.status === 'PENDING' || handed!.workerId !== null,
    'handed back (PENDING), or already taken by the worker of the queue',
  );
  assert.equal(await enricher.run(row!.id).then(() => 'ignored'), 'ignored', 'a stopped enricher takes nothing');
  // The service's own worker gets the message and finishes the job from where it stood.
  const done = await eventually(async () => {
    const j = await jobNow();
    return j.status === 'COMPLETED' && j;
  }, 60_000);
  assert.deepEqual([done.processed, done.enriched], [3, 3]);
  assert.deepEqual(
    done.results.map((r: { leadId: string }) => r.leadId),
    ids,
  );
  const paths = site
    .profileRequests()
    .slice(before)
    .map((r) => r.path);
  assert.equal(new Set(paths).size, paths.length, `no profile read twice: ${paths}`);
});

describe('commonalities', () => {
  const people = [
    {
      firstName: 'Ann',
      email: 'ann@acme.test',
      company: 'Acme Corp',
      jobTitle: 'VP Engineering',
      customFields: { location: 'Austin' },
    },
    {
      firstName: 'Cid',
      email: 'cid@acme.test',
      company: 'Acme Corp',
      jobTitle: 'Staff Engineer',
      customFields: { location: 'Austin' },
    },
    {
      firstName: 'Dee',
      email: 'dee@globex.test',
      company: 'Globex',
      jobTitle: 'Head of Sales',
      customFields: { location: 'Berlin' },
    },
  ];

  test('with the AI provider: its traits, counts bounded by the leads given; no names or emails sent', async () => {
    const ids = await seed(alice, people);
    ai.enqueue({
      json: {
        summary: 'Engineering leaders in Austin.',
        traits: [
          { trait: 'Engineering', evidence: 'VP Engineering, Staff Engineer', leadCount: 2 },
          { trait: 'Austin', evidence: 'location', leadCount: 40 },
          { trait: '  ', evidence: 'empty', leadCount: 1 },
        ],
      },
    });
    const res = await call(alice, 'POST', '/api/linkedin/commonalities', { leadIds: ids });
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().data;
    assert.deepEqual([data.method, data.model, data.leadCount], ['ai', 'stub-model', 3]);
    assert.deepEqual(
      data.traits.map((t: any) => [t.trait, t.leadCount]),
      [
        ['Engineering', 2],
        ['Austin', 3],
      ],
    );
    const prompt = promptText(ai.requests.at(-1)!);
    assert.match(prompt, /VP Engineering/);
    assert.match(prompt, /Berlin/);
    assert.ok(!prompt.includes('ann@acme.test') && !prompt.includes('Ann'), 'no names or emails');
    // Another user's leads: 404 naming leadIds; bad input 400.
    const other = await call(bob, 'POST', '/api/linkedin/commonalities', { leadIds: ids });
    assertError(other, 404, 'NOT_FOUND');
    assert.equal(other.json().error.details[0].field, 'leadIds');
    assertField(await call(alice, 'POST', '/api/linkedin/commonalities', { leadIds: [ids[0]] }), 'leadIds');
    assertField(await call(alice, 'POST', '/api/linkedin/commonalities', { leadIds: ['x', 'y'] }), 'leadIds');
    assertField(await call(alice, 'POST', '/api/linkedin/commonalities', {}), 'leadIds');
  });

  test('without an AI provider: shared values counted, labelled heuristic', async () => {
    let offline: TestContext | undefined;
    try {
      offline = await createTestContext({ workers: false, env: { LINKEDIN_BASE_URL: site.url } });
      const user = await offline.signup();
      const ids = await seedLeads(offline.deps.db, user.id, people);
      const res = await offline.call(user, 'POST', '/api/linkedin/commonalities', { leadIds: ids });
      assert.equal(res.statusCode, 200, res.body);
      const data = res.json().data;
      assert.deepEqual([data.method, data.model, data.leadCount], ['heuristic', null, 3]);
      assert.match(data.summary, /^Heuristic, not an AI analysis/);
      const traits = Object.fromEntries(data.traits.map((t: any) => [t.trait, t.leadCount]));
      assert.equal(traits['Company: acme corp'], 2);
      assert.equal(traits['Location: austin'], 2);
      assert.equal(traits.Engineering, 2);
      assert.equal(traits['Company: globex'], undefined, 'one lead is not shared');
    } finally {
      await offline?.close();
    }
  });
});

describe('data out', () => {
  test('the GDPR export holds credentials (never the cookie) and jobs', async () => {
    const { data } = await collectUserData(ctx.deps.db, alice.id, new Date());
    const creds = data.networkCredentials as Array<Record<string, unknown>>;
    assert.ok(creds.length > 0);
    assert.ok(!('cookieSealed' in creds[0]!) && !('cookieHint' in creds[0]!));
    assert.ok(!JSON.stringify(data).includes(GOOD));
    assert.ok((data.networkEnrichJobs as unknown[]).length > 0);
  });
});
