import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { warmupDomains } from '../src/db/schema/index.ts';
import { createWarmupSender, WARMUP_HEADER } from '../src/modules/warmup/warmup.sender.ts';
import { QUEUES } from '../src/queue/queues.ts';
import { DAY_MS, ManualClock } from '../src/shared/clock.ts';
import { eventEnvelopeSchema } from '../src/shared/event-payloads.ts';
import { registerSchedules } from '../src/workers.ts';
import { createTestContext, createTwoUserContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';
import { startTestDnsServer, type TestDnsServer, type Zone } from './helpers/dns.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { startWebhookReceiver, verifyWith, type WebhookReceiver } from './helpers/webhook-receiver.ts';

const der = (key: crypto.KeyObject) => key.export({ type: 'spki', format: 'der' });
const rsaKey = der(crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey).toString('base64');
// RFC 8463: an ed25519 key record publishes the bare 32-byte key.
const edKey = der(crypto.generateKeyPairSync('ed25519').publicKey).subarray(-32).toString('base64');

const SPF_LOOPBACK = 'v=spf1 ip4:127.0.0.1 -all';
const dkim = (key: string, type = 'rsa') => `v=DKIM1; k=${type}; p=${key}`;
const ZONES: Record<string, Zone> = {
  'good.test': { txt: ['google-site-verification=abc', SPF_LOOPBACK] },
  's1._domainkey.good.test': { txt: [dkim(rsaKey)] },
  'other.test': { txt: [SPF_LOOPBACK] },
  's1._domainkey.other.test': { txt: [dkim(edKey, 'ed25519')] },
  'last.test': { txt: [SPF_LOOPBACK] },
  's1._domainkey.last.test': { txt: [dkim(edKey, 'ed25519')] },
  'pw.test': { txt: [SPF_LOOPBACK] },
  's1._domainkey.pw.test': { txt: [dkim(edKey, 'ed25519')] },
  // The mailbox host named, authorized by an `a:` mechanism.
  'named.test': { txt: ['v=spf1 a:mail.named.test -all'] },
  'mail.named.test': { a: ['192.0.2.55'] },
  's1._domainkey.named.test': { txt: [dkim(rsaKey)] },
  'nospf.test': { txt: ['some other record'] },
  's1._domainkey.nospf.test': { txt: [dkim(rsaKey)] },
  'wrongspf.test': { txt: ['v=spf1 ip4:192.0.2.1 -all'] },
  's1._domainkey.wrongspf.test': { txt: [dkim(rsaKey)] },
  'brokenspf.test': { txt: ['v=spf1 ip4:300.1.1.1 frobnicate -all'] },
  's1._domainkey.brokenspf.test': { txt: [dkim(rsaKey)] },
  'nodkim.test': { txt: [SPF_LOOPBACK] },
  'baddkim.test': { txt: [SPF_LOOPBACK] },
  's1._domainkey.baddkim.test': { txt: [`v=DKIM1; k=rsa; p=${Buffer.from('not a key at all').toString('base64')}`] },
};

const SEEDS = ['seed1@inbox.test', 'seed2@inbox.test'];
const MAILBOX = { user: 'warm@good.test', pass: 'sup3r-s3cret-pw' };

const clock = new ManualClock(new Date('2026-03-02T09:00:00Z'));
let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let receiver: WebhookReceiver;
let hookSecret: string;

const smtpUrl = (pass = MAILBOX.pass, host = '127.0.0.1') =>
  `smtp://${encodeURIComponent(MAILBOX.user)}:${pass}@${host}:${smtp.port}`;

before(async () => {
  dns = await startTestDnsServer(ZONES);
  smtp = await startSmtpServer({ auth: MAILBOX });
  receiver = await startWebhookReceiver();
  ({ ctx, alice, bob } = await createTwoUserContext({
    clock,
    env: { DNS_SERVERS: dns.address, WARMUP_SEED_ADDRESSES: SEEDS.join(',') },
  }));
  const res = await ctx.call(alice, 'POST', '/api/webhooks', { url: receiver.url, eventTypes: ['warmup.auto_paused'] });
  assert.equal(res.statusCode, 201, res.body);
  hookSecret = res.json().data.webhook.secret;
});
after(async () => {
  await ctx?.close();
  await smtp?.close();
  await dns?.close();
  await receiver?.close();
});

const sender = () => createWarmupSender(ctx.deps);

/** The warmup queue's job, as the cron sends it, run to its end by the worker. */
async function runJob() {
  const id = await ctx.deps.boss.send(QUEUES.warmup, {});
  assert.ok(id);
  await eventually(async () => (await ctx.deps.boss.getJobById(QUEUES.warmup, id))?.state === 'completed');
}

async function create(user: TestUser, domain: string, extra: Record<string, unknown> = {}) {
  const res = await ctx.call(user, 'POST', '/api/warmup-domains', {
    domain,
    dkimSelector: 's1',
    smtpUrl: smtpUrl(),
    fromAddress: `hello@${domain}`,
    ...extra,
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.warmupDomain as { id: string; [k: string]: any };
}

const get = async (user: TestUser, id: string) => {
  const res = await ctx.call(user, 'GET', `/api/warmup-domains/${id}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data.warmupDomain;
};
const patch = (user: TestUser, id: string, body: object) => ctx.call(user, 'PATCH', `/api/warmup-domains/${id}`, body);
const start = (user: TestUser, id: string) => ctx.call(user, 'POST', `/api/warmup-domains/${id}/start`);
const metrics = (user: TestUser, id: string, body: object) =>
  ctx.call(user, 'POST', `/api/warmup-domains/${id}/metrics`, body);

/** Warmup mails received for a domain (by the header's value). */
const mailsOf = (id: string) => smtp.messages.filter((m) => m.raw.toString().includes(`${WARMUP_HEADER}: ${id}`));

describe('settings', () => {
  test('a domain is created in DRAFT, normalized, with the mailbox shown without its password', async () => {
    const res = await ctx.call(alice, 'POST', '/api/warmup-domains', {
      domain: ' Bücher.Example. ',
      dkimSelector: 'S1',
      smtpUrl: `smtps://${MAILBOX.user}:${MAILBOX.pass}@smtp.example.com`,
      fromAddress: 'Hello@BÜCHER.example',
    });
    assert.equal(res.statusCode, 201, res.body);
    assert.ok(!res.body.includes(MAILBOX.pass));
    const view = res.json().data.warmupDomain;
    assert.equal(view.domain, 'xn--bcher-kva.example');
    assert.equal(view.dkimSelector, 's1');
    assert.equal(view.fromAddress, 'Hello@xn--bcher-kva.example');
    assert.deepEqual(view.mailbox, { host: 'smtp.example.com', port: 465, username: MAILBOX.user });
    assert.equal(view.status, 'DRAFT');
    assert.equal(view.day, null);
    assert.equal(view.todayTarget, 0);
    assert.deepEqual(
      view.schedule.map((w: { dailyVolume: number }) => w.dailyVolume),
      [5, 10, 25, 50, 100],
    );
    // Encrypted at rest, and never in a read.
    const [row] = await ctx.deps.db.select().from(warmupDomains).where(eq(warmupDomains.id, view.id));
    assert.ok(row && !row.smtpUrlEncrypted.includes(MAILBOX.pass));
    const list = await ctx.call(alice, 'GET', '/api/warmup-domains');
    assert.equal(list.statusCode, 200);
    assert.ok(list.json().data.warmupDomains.some((d: { id: string }) => d.id === view.id));
    assert.ok(!list.body.includes(MAILBOX.pass));
    assert.ok(!(await ctx.call(alice, 'GET', `/api/warmup-domains/${view.id}`)).body.includes(MAILBOX.pass));
    // The same domain twice is a conflict.
    const again = await ctx.call(alice, 'POST', '/api/warmup-domains', {
      domain: 'bücher.example',
      dkimSelector: 's1',
      smtpUrl: smtpUrl(),
      fromAddress: 'x@bücher.example',
    });
    assertError(again, 409, 'CONFLICT');
  });

  test('bad input is a 400 naming the field, and nothing is stored', async () => {
    const good = { domain: 'bad.test', dkimSelector: 's1', smtpUrl: smtpUrl(), fromAddress: 'a@bad.test' };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ domain: 'not a domain' }, 'domain'],
      [{ domain: undefined }, 'domain'],
      [{ dkimSelector: 'bad selector!' }, 'dkimSelector'],
      [{ smtpUrl: 'http://user:pw@host' }, 'smtpUrl'],
      [{ smtpUrl: 'smtp://host.test:587' }, 'smtpUrl'],
      // A query would become transport options (nodemailer reads them from the URL): refused, like a path.
      [{ smtpUrl: `${smtpUrl()}?sendmail=true&path=/bin/echo` }, 'smtpUrl'],
      [{ smtpUrl: `${smtpUrl()}/relay` }, 'smtpUrl'],
      [{ fromAddress: 'nobody' }, 'fromAddress'],
      [{ fromAddress: 'a@elsewhere.test' }, 'fromAddress'],
    ];
    for (const [change, field] of cases) {
      const res = await ctx.call(alice, 'POST', '/api/warmup-domains', { ...good, ...change });
      assertValidation(res, field);
    }
    const list = await ctx.call(alice, 'GET', '/api/warmup-domains');
    assert.ok(!list.json().data.warmupDomains.some((d: { domain: string }) => d.domain === 'bad.test'));
    const draft = await create(alice, 'nodkim.test');
    for (const [body, field] of [
      [{ bounceRate: 1.5 }, 'bounceRate'],
      [{ spamRate: -0.1 }, 'spamRate'],
      [{ openRate: 'high' }, 'openRate'],
    ] as const)
      assertValidation(await metrics(alice, draft.id, body), field);
    assertValidation(await patch(alice, draft.id, { status: 'DONE' }), 'status');
    assertValidation(await patch(alice, draft.id, { smtpUrl: 'ftp://x' }), 'smtpUrl');
    assertError(await patch(alice, draft.id, {}), 400, 'VALIDATION_ERROR');
  });

  test("another user's domain is a 404 everywhere", async () => {
    const mine = await create(alice, 'last.test');
    for (const res of [
      await ctx.call(bob, 'GET', `/api/warmup-domains/${mine.id}`),
      await patch(bob, mine.id, { status: 'PAUSED' }),
      await start(bob, mine.id),
      await metrics(bob, mine.id, { bounceRate: 0.5 }),
      await ctx.call(bob, 'DELETE', `/api/warmup-domains/${mine.id}`),
      await ctx.call(bob, 'GET', '/api/warmup-domains/not-a-uuid'),
    ])
      assertError(res, 404, 'NOT_FOUND');
    const list = await ctx.call(bob, 'GET', '/api/warmup-domains');
    assert.deepEqual(list.json().data.warmupDomains, []);
    assert.equal((await get(alice, mine.id)).status, 'DRAFT');
  });
});

describe('start: SPF and DKIM in DNS', () => {
  const failures: Array<[string, string, RegExp]> = [
    ['nospf.test', 'spf', /no v=spf1 TXT record at nospf\.test/],
    ['wrongspf.test', 'spf', /does not authorize the mailbox host 127\.0\.0\.1 .*fail/],
    ['brokenspf.test', 'spf', /does not parse/],
    ['nodkim.test', 'dkim', /no TXT record at s1\._domainkey\.nodkim\.test/],
    ['baddkim.test', 'dkim', /key record at s1\._domainkey\.baddkim\.test is invalid/],
  ];
  for (const [domain, record, why] of failures)
    test(`${domain}: 400 DNS_NOT_READY naming ${record}`, async () => {
      const list = await ctx.call(alice, 'GET', '/api/warmup-domains?limit=100');
      const existing = list.json().data.warmupDomains.find((d: { domain: string }) => d.domain === domain);
      const { id } = existing ?? (await create(alice, domain));
      const res = await start(alice, id);
      assertError(res, 400, 'DNS_NOT_READY');
      const { error } = res.json();
      assert.match(error.message, new RegExp(`^${record.toUpperCase()}: `));
      assert.match(error.message, why);
      assert.deepEqual(
        error.details.map((d: { field: string }) => d.field),
        [record],
      );
      assert.equal((await get(alice, id)).status, 'DRAFT');
    });

  test('a domain with neither record: both named, in the message and in details', async () => {
    const { id } = await create(alice, 'unknown.test');
    const res = await start(alice, id);
    assertError(res, 400, 'DNS_NOT_READY');
    const { error } = res.json();
    assert.match(error.message, /^SPF: no v=spf1 TXT record at unknown\.test; DKIM: no TXT record at s1\._domainkey/);
    assert.deepEqual(
      error.details.map((d: { field: string }) => d.field),
      ['spf', 'dkim'],
    );
  });

  test('a mailbox host given by name is resolved and authorized by an a: mechanism', async () => {
    const d = await create(alice, 'named.test', { smtpUrl: smtpUrl(MAILBOX.pass, 'mail.named.test') });
    const res = await start(alice, d.id);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().data.warmupDomain.status, 'WARMING');
    // Not a sending test: pause it so the daily runs leave it alone.
    assert.equal((await patch(alice, d.id, { status: 'PAUSED' })).statusCode, 200);
  });
});

describe('warming', () => {
  let good: { id: string };
  let other: { id: string };

  test('start moves DRAFT to WARMING on day 1 with a target of 5; a second start is INVALID_STATE', async () => {
    good = await create(alice, 'good.test');
    other = await create(alice, 'other.test');
    for (const d of [good, other]) {
      const res = await start(alice, d.id);
      assert.equal(res.statusCode, 200, res.body);
      const view = res.json().data.warmupDomain;
      assert.equal(view.status, 'WARMING');
      assert.equal(view.day, 1);
      assert.equal(view.todayTarget, 5);
      assert.equal(view.todaySent, 0);
    }
    assertError(await start(alice, good.id), 400, 'INVALID_STATE');
  });

  test('the daily job sends 5 marked mails on day 1 to the pool, once however often it runs', async () => {
    await runJob();
    assert.equal((await get(alice, good.id)).todaySent, 5);
    assert.equal((await get(alice, other.id)).todaySent, 5);
    // The same day again, through the job and directly: nothing more.
    await sender().runDue();
    await runJob();
    await sender().runDue();
    const sent = mailsOf(good.id);
    assert.equal(sent.length, 5);
    assert.equal(mailsOf(other.id).length, 5);
    // The pool: the other WARMING mailbox and the seeds, never itself.
    const to = new Set(sent.flatMap((m) => m.to));
    assert.deepEqual([...to].sort(), ['hello@other.test', ...SEEDS].sort());
    assert.ok(sent.every((m) => m.from === 'hello@good.test'));
    const view = await get(alice, good.id);
    assert.equal(view.day, 1);
    assert.equal(view.totalSent, 5);
  });

  test('day 8 sends 10', async () => {
    clock.advance(7 * DAY_MS);
    const before = await get(alice, good.id);
    assert.equal(before.day, 8);
    assert.equal(before.todayTarget, 10);
    assert.equal(before.todaySent, 0);
    // Two runs at once (as two processes would): the day is claimed by one of them.
    await Promise.all([sender().runDue(), sender().runDue()]);
    assert.equal(mailsOf(good.id).length, 15);
    const view = await get(alice, good.id);
    assert.equal(view.todaySent, 10);
    assert.equal(view.totalSent, 15);
  });

  test('a pause stops sending and does not advance the schedule', async () => {
    const res = await patch(alice, good.id, { status: 'PAUSED' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().data.warmupDomain.status, 'PAUSED');
    assert.equal(res.json().data.warmupDomain.todayTarget, 0);
    clock.advance(3 * DAY_MS);
    await sender().runDue();
    assert.equal(mailsOf(good.id).length, 15);
    assert.equal((await get(alice, good.id)).day, 8);
    assertError(await patch(alice, good.id, { status: 'PAUSED' }), 400, 'INVALID_STATE');
    // Settings change while paused, not together with a resume.
    assertError(await patch(alice, good.id, { status: 'WARMING', dkimSelector: 's2' }), 400, 'INVALID_STATE');
    const changed = await patch(alice, good.id, { fromAddress: 'warm@good.test' });
    assert.equal(changed.statusCode, 200, changed.body);
    // A new selector is checked in DNS at the resume: s2 has no key record.
    assert.equal((await patch(alice, good.id, { dkimSelector: 's2' })).statusCode, 200);
    const notReady = await patch(alice, good.id, { status: 'WARMING' });
    assertError(notReady, 400, 'DNS_NOT_READY');
    assert.match(notReady.json().error.message, /^DKIM: no TXT record at s2\._domainkey\.good\.test/);
    assert.equal((await get(alice, good.id)).status, 'PAUSED');
    assert.equal((await patch(alice, good.id, { dkimSelector: 's1' })).statusCode, 200);
    const resumed = await patch(alice, good.id, { status: 'WARMING' });
    assert.equal(resumed.statusCode, 200, resumed.body);
    // Day 8 was sent before the pause: the next day is 9.
    assert.equal(resumed.json().data.warmupDomain.day, 9);
    assertError(await patch(alice, good.id, { dkimSelector: 's2' }), 400, 'INVALID_STATE');
    assertError(await patch(alice, good.id, { status: 'WARMING' }), 400, 'INVALID_STATE');
    await sender().runDue();
    const sent = mailsOf(good.id);
    assert.equal(sent.length, 25);
    assert.ok(sent.slice(15).every((m) => m.from === 'warm@good.test'));
  });

  test('a bounce rate above 10 % auto-pauses at once, emits warmup.auto_paused, and blocks resuming', async () => {
    const fine = await metrics(alice, good.id, { openRate: 0.4, replyRate: 0.1, bounceRate: 0.1, spamRate: 0.005 });
    assert.equal(fine.statusCode, 200, fine.body);
    assert.equal(fine.json().data.warmupDomain.status, 'WARMING');
    const res = await metrics(alice, good.id, { bounceRate: 0.12, spamRate: 0 });
    assert.equal(res.statusCode, 200, res.body);
    const view = res.json().data.warmupDomain;
    assert.equal(view.status, 'AUTO_PAUSED');
    assert.match(view.statusReason, /bounce rate 12 % is above 10 %/);
    assert.equal(view.latestMetrics.bounceRate, 0.12);
    const event = await eventually(async () =>
      receiver.requests.map((r) => verifyWith(hookSecret, r)).find((e) => e.data.domainId === good.id),
    );
    eventEnvelopeSchema('warmup.auto_paused').parse(event);
    assert.equal(event.type, 'warmup.auto_paused');
    assert.equal(event.data.domain, 'good.test');
    assert.match(event.data.reason, /bounce rate/);
    // Sending stopped.
    clock.advance(DAY_MS);
    await sender().runDue();
    assert.equal(mailsOf(good.id).length, 25);
    const resume = await patch(alice, good.id, { status: 'WARMING' });
    assertError(resume, 400, 'INVALID_STATE');
    assert.match(resume.json().error.message, /bounce rate 12 % is above 10 %/);
    assertError(await patch(alice, good.id, { status: 'PAUSED' }), 400, 'INVALID_STATE');
    // Rates back within the limits: metrics alone do not resume it, the owner does.
    const better = await metrics(alice, good.id, { bounceRate: 0.03, spamRate: 0.001 });
    assert.equal(better.json().data.warmupDomain.status, 'AUTO_PAUSED');
    const resumed = await patch(alice, good.id, { status: 'WARMING' });
    assert.equal(resumed.statusCode, 200, resumed.body);
    assert.equal(resumed.json().data.warmupDomain.statusReason, null);
  });

  test('a spam rate above 0.5 % auto-pauses too; metrics in DRAFT are recorded without a move', async () => {
    const res = await metrics(alice, other.id, { spamRate: 0.006 });
    assert.equal(res.json().data.warmupDomain.status, 'AUTO_PAUSED');
    assert.match(res.json().data.warmupDomain.statusReason, /spam rate 0.6 % is above 0.5 %/);
    await eventually(async () =>
      receiver.requests.map((r) => verifyWith(hookSecret, r)).find((e) => e.data.domainId === other.id),
    );
    const draft = await create(alice, 'wrongspf2.test');
    const inDraft = await metrics(alice, draft.id, { spamRate: 0.5 });
    assert.equal(inDraft.statusCode, 200);
    assert.equal(inDraft.json().data.warmupDomain.status, 'DRAFT');
    assertError(await patch(alice, draft.id, { status: 'PAUSED' }), 400, 'INVALID_STATE');
    assertError(await patch(alice, draft.id, { status: 'WARMING' }), 400, 'INVALID_STATE');
  });

  test('a wrong mailbox password fails the day without sending, and is not retried that day', async () => {
    const d = await create(alice, 'pw.test', { smtpUrl: smtpUrl('wrong-password') });
    assert.equal((await start(alice, d.id)).statusCode, 200);
    await sender().runDue();
    await sender().runDue();
    assert.equal(mailsOf(d.id).length, 0);
    const view = await get(alice, d.id);
    assert.equal(view.todaySent, 0);
    assert.equal(view.lastSendError.day, 1);
    assert.match(view.lastSendError.message, /Invalid (login|username or password)/i);
    assert.ok(!JSON.stringify(view).includes('wrong-password'));
    assert.equal((await ctx.call(alice, 'DELETE', `/api/warmup-domains/${d.id}`)).statusCode, 200);
    assertError(await ctx.call(alice, 'GET', `/api/warmup-domains/${d.id}`), 404, 'NOT_FOUND');
  });

  test('after the 35th day the domain is COMPLETED and stays so', async () => {
    const day = (await get(alice, good.id)).day as number;
    clock.advance((35 - day) * DAY_MS);
    assert.equal((await get(alice, good.id)).todayTarget, 100);
    const before = mailsOf(good.id).length;
    await sender().runDue();
    assert.equal(mailsOf(good.id).length, before + 100);
    const view = await get(alice, good.id);
    assert.equal(view.status, 'COMPLETED');
    assert.equal(view.day, 35);
    assert.equal(view.todayTarget, 0);
    clock.advance(DAY_MS);
    await sender().runDue();
    assert.equal(mailsOf(good.id).length, before + 100);
    assertError(await patch(alice, good.id, { status: 'WARMING' }), 400, 'INVALID_STATE');
    assertError(await patch(alice, good.id, { status: 'PAUSED' }), 400, 'INVALID_STATE');
    assertError(await start(alice, good.id), 400, 'INVALID_STATE');
  });
});

test('the warmup job is a pg-boss cron schedule, hourly', async () => {
  await registerSchedules(ctx.deps);
  const schedule = (await ctx.deps.boss.getSchedules()).find((s) => s.name === QUEUES.warmup);
  assert.ok(schedule);
  assert.match(schedule.cron, /^\d+ \* \* \* \*$/);
});

describe('bounces reported for warmup mail', () => {
  test('hard bounces of its mail over 10 % of what it sent pause the domain before the next day is sent', async () => {
    const domain = await create(bob, 'good.test');
    assert.equal((await start(bob, domain.id)).statusCode, 200);
    await sender().runDue();
    assert.equal((await get(bob, domain.id)).totalSent, 5);
    const bounce = await ctx.call(bob, 'POST', '/api/email-verification/bounces', {
      email: SEEDS[0],
      smtpCode: 550,
      enhancedStatus: '5.1.1',
      diagnostic: '550 5.1.1 user unknown',
      sender: 'hello@good.test',
    });
    assert.equal(bounce.statusCode, 200, bounce.body);
    clock.advance(DAY_MS);
    await sender().runDue();
    const view = await get(bob, domain.id);
    assert.equal(view.status, 'AUTO_PAUSED');
    assert.equal(view.latestMetrics.bounceRate, 0.2, '1 bounce of 5 sent');
    assert.equal(view.totalSent, 5, 'nothing more sent');
  });
});

describe('the mailbox host and the SSRF guard', () => {
  test('without ALLOW_PRIVATE_NETWORK a private mailbox host is refused (400 naming smtpUrl), and never sent to', async () => {
    const guarded = await createTestContext({
      clock,
      env: { DNS_SERVERS: dns.address, ALLOW_PRIVATE_NETWORK: 'false' },
    });
    try {
      const carol = await guarded.signup();
      const res = await guarded.call(carol, 'POST', '/api/warmup-domains', {
        domain: 'good.test',
        dkimSelector: 's1',
        smtpUrl: smtpUrl(),
        fromAddress: 'hello@good.test',
      });
      assertValidation(res, 'smtpUrl');
      assert.match(res.json().error.message, /loopback/);
      // The same refusal for the metadata address as an IPv4-compatible IPv6 literal, and a loopback one in hex.
      for (const [host, reason] of [
        ['[::a9fe:a9fe]', /::a9fe:a9fe.*link-local/],
        ['[::127.0.0.1]', /::7f00:1.*loopback/],
        ['0x7f.1', /0x7f\.1 is a loopback address \(127\.0\.0\.1\)/],
      ] as const) {
        const hidden = await guarded.call(carol, 'POST', '/api/warmup-domains', {
          domain: 'good.test',
          dkimSelector: 's1',
          smtpUrl: smtpUrl(MAILBOX.pass, host),
          fromAddress: 'hello@good.test',
        });
        assertValidation(hidden, 'smtpUrl');
        assert.match(hidden.json().error.message, reason);
      }
    } finally {
      await guarded.close();
    }
  });
});
