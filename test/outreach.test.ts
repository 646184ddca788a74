import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import PostalMime from 'postal-mime';
import { outreachEnrollments, outreachMessages } from '../src/db/schema/index.ts';
import { createSequencer } from '../src/modules/outreach/sequencer/sequencer.ts';
import { DAY_MS, ManualClock } from '../src/shared/clock.ts';
import { createTwoUserContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';
import { startTestDnsServer, TEST_ZONES, type TestDnsServer } from './helpers/dns.ts';
import { startImapServer, type TestImapServer } from './helpers/imap-server.ts';
import { headerOf, startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';

// README "Outreach": connect a mailbox (SMTP and IMAP logins checked), create a campaign, enroll leads behind the
// gates, and let the sequencer send: steps in order, in the window, threaded, with one-click unsubscribe.
let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let imap: TestImapServer;
// Monday 2026-03-02 10:00 UTC.
const clock = new ManualClock(new Date('2026-03-02T10:00:00Z'));
const SMTP_USER = { user: 'sales@quarry-sender.test', pass: 'smtp secret' };
// RFC 8463: an ed25519 key record publishes the bare 32-byte key.
const ED25519_KEY = crypto
  .generateKeyPairSync('ed25519')
  .publicKey.export({ type: 'spki', format: 'der' })
  .subarray(-32)
  .toString('base64');

before(async () => {
  dns = await startTestDnsServer({
    ...TEST_ZONES,
    'prospects.test': { mx: [{ exchange: 'mx.prospects.test', priority: 10 }] },
    // The sending domain: mail exchangers, SPF for the loopback SMTP host, a DKIM key under `google`, DMARC.
    'quarry-sender.test': {
      mx: [{ exchange: 'mx.quarry-sender.test', priority: 10 }],
      txt: ['v=spf1 ip4:127.0.0.1 -all'],
    },
    'google._domainkey.quarry-sender.test': { txt: [`v=DKIM1; k=ed25519; p=${ED25519_KEY}`] },
    '_dmarc.quarry-sender.test': { txt: ['v=DMARC1; p=none; rua=mailto:dmarc@quarry-sender.test'] },
  });
  smtp = await startSmtpServer({ auth: SMTP_USER });
  imap = await startImapServer({ users: [{ user: 'sales@quarry-sender.test', pass: 'imap secret' }] });
  ({ ctx, alice, bob } = await createTwoUserContext({
    clock,
    workers: false,
    env: { DNS_SERVERS: dns.address, PUBLIC_URL: 'https://quarry.example' },
  }));
});
after(async () => {
  await ctx?.close();
  await smtp?.close();
  await imap?.close();
  await dns?.close();
});

const smtpUrl = (pass = SMTP_USER.pass) =>
  `smtp://${encodeURIComponent(SMTP_USER.user)}:${encodeURIComponent(pass)}@127.0.0.1:${smtp.port}`;
const mailbox = (overrides: Record<string, unknown> = {}) => ({
  email: 'sales@quarry-sender.test',
  fromName: 'Sam Sales',
  smtpUrl: smtpUrl(),
  imapUrl: imap.url('sales@quarry-sender.test'),
  dailyLimit: 100,
  ...overrides,
});

let connectionId: string;

describe('connections', () => {
  test('a refused SMTP or IMAP login is 400 CONNECTION_FAILED naming the field; nothing is stored', async () => {
    const badSmtp = await ctx.call(alice, 'POST', '/api/outreach/connections', {
      provider: 'smtp',
      name: 'Sales',
      mailboxes: [mailbox({ smtpUrl: smtpUrl('wrong') })],
    });
    assertError(badSmtp, 400, 'CONNECTION_FAILED');
    assert.equal(badSmtp.json().error.details[0].field, 'mailboxes.0.smtpUrl');
    assert.match(badSmtp.json().error.message, /535|Invalid/);
    assert.doesNotMatch(badSmtp.body, /wrong|smtp secret/);
    const badImap = await ctx.call(alice, 'POST', '/api/outreach/connections', {
      provider: 'smtp',
      name: 'Sales',
      mailboxes: [mailbox({ imapUrl: imap.url('sales@quarry-sender.test').replace('imap%20secret', 'nope') })],
    });
    assertError(badImap, 400, 'CONNECTION_FAILED');
    assert.equal(badImap.json().error.details[0].field, 'mailboxes.0.imapUrl');
    assert.match(badImap.json().error.message, /Authentication failed|AUTHENTICATIONFAILED/i);
    const list = await ctx.call(alice, 'GET', '/api/outreach/connections');
    assert.deepEqual(list.json().data.connections, []);
  });

  test('bad input is a 400 naming the field', async () => {
    const post = (body: unknown) => ctx.call(alice, 'POST', '/api/outreach/connections', body);
    assertValidation(await post({ provider: 'smtp', name: 'x' }), 'mailboxes');
    assertValidation(
      await post({ provider: 'smtp', name: 'x', mailboxes: [mailbox({ smtpUrl: 'http://a:b@h' })] }),
      'mailboxes.0.smtpUrl',
    );
    assertValidation(
      await post({ provider: 'smtp', name: 'x', mailboxes: [mailbox({ smtpUrl: `${smtpUrl()}/?sendmail=true` })] }),
      'mailboxes.0.smtpUrl',
    );
    assertValidation(
      await post({ provider: 'smtp', name: 'x', mailboxes: [mailbox({ dailyLimit: 0 })] }),
      'mailboxes.0.dailyLimit',
    );
    assertValidation(
      await post({ provider: 'smtp', name: 'x', mailboxes: Array.from({ length: 51 }, () => mailbox()) }),
      'mailboxes',
    );
    assertValidation(await post({ provider: 'instantly', name: 'x' }), 'apiKey');
  });

  test('verified mailboxes are stored; credentials never come back; others see nothing', async () => {
    const res = await ctx.call(alice, 'POST', '/api/outreach/connections', {
      provider: 'smtp',
      name: 'Sales',
      mailboxes: [mailbox()],
    });
    assert.equal(res.statusCode, 201, res.body);
    assert.doesNotMatch(res.body, /smtp secret|imap secret|smtp%20secret|imap%20secret/);
    const { connection } = res.json().data;
    connectionId = connection.id;
    assert.equal(connection.mailboxes.length, 1);
    assert.deepEqual(connection.mailboxes[0].smtp, { host: '127.0.0.1', port: smtp.port });
    assert.equal(connection.mailboxes[0].username, 'sales@quarry-sender.test');
    const accounts = (await ctx.call(alice, 'GET', '/api/outreach/accounts')).json().data.accounts;
    assert.equal(accounts.length, 1);
    assert.equal(accounts[0].sentToday, 0);
    assert.deepEqual((await ctx.call(bob, 'GET', '/api/outreach/accounts')).json().data.accounts, []);
    assertError(await ctx.call(bob, 'DELETE', `/api/outreach/connections/${connectionId}`), 404, 'NOT_FOUND');
    assertError(await ctx.call(bob, 'GET', `/api/outreach/accounts?connectionId=${connectionId}`), 404, 'NOT_FOUND');
  });

  test('account test: MX, SPF, DKIM (found under a common selector) and DMARC, each with what DNS answered', async () => {
    const [account] = (await ctx.call(alice, 'GET', '/api/outreach/accounts')).json().data.accounts;
    const res = await ctx.call(alice, 'POST', `/api/outreach/accounts/${account.id}/test`, {});
    assert.equal(res.statusCode, 200, res.body);
    const { domain, checks, passed } = res.json().data;
    assert.equal(domain, 'quarry-sender.test');
    const by = Object.fromEntries(checks.map((c: { check: string }) => [c.check, c]));
    assert.equal(by.mx.record, '10 mx.quarry-sender.test');
    assert.equal(by.spf.pass, true, by.spf.message);
    assert.equal(by.spf.record, 'v=spf1 ip4:127.0.0.1 -all');
    assert.equal(by.dkim.pass, true);
    assert.match(by.dkim.message, /^google\._domainkey\.quarry-sender\.test/);
    assert.equal(by.dmarc.pass, true);
    assert.match(by.dmarc.message, /policy none/);
    assert.equal(passed, 4);
    const wrongSelector = await ctx.call(alice, 'POST', `/api/outreach/accounts/${account.id}/test`, {
      dkimSelector: 's9',
    });
    const dkim = wrongSelector.json().data.checks.find((c: { check: string }) => c.check === 'dkim');
    assert.equal(dkim.pass, false);
    assert.match(dkim.message, /s9\._domainkey/);
    assertValidation(
      await ctx.call(alice, 'POST', `/api/outreach/accounts/${account.id}/test`, { dkimSelector: 'a b' }),
      'dkimSelector',
    );
    assertError(await ctx.call(bob, 'POST', `/api/outreach/accounts/${account.id}/test`, {}), 404, 'NOT_FOUND');
  });

  test('account warmup: enabling makes the domain a warming warmup domain through this mailbox; disabling pauses', async () => {
    const [account] = (await ctx.call(alice, 'GET', '/api/outreach/accounts')).json().data.accounts;
    const url = `/api/outreach/accounts/${account.id}/warmup`;
    assert.deepEqual((await ctx.call(alice, 'GET', url)).json().data, {
      enabled: false,
      warmupDomain: null,
      platform: null,
    });
    assertValidation(await ctx.call(alice, 'POST', url, { enabled: true }), 'dkimSelector');
    const missingKey = await ctx.call(alice, 'POST', url, { enabled: true, dkimSelector: 's9' });
    assertError(missingKey, 400, 'DNS_NOT_READY');
    // The domain stays linked in DRAFT; once the right selector is set through Warmup domains it starts.
    const draft = (await ctx.call(alice, 'GET', url)).json().data;
    assert.equal(draft.warmupDomain.status, 'DRAFT');
    const fix = await ctx.call(alice, 'PATCH', `/api/warmup-domains/${draft.warmupDomain.id}`, {
      dkimSelector: 'google',
    });
    assert.equal(fix.statusCode, 200, fix.body);
    const on = await ctx.call(alice, 'POST', url, { enabled: true });
    assert.equal(on.statusCode, 200, on.body);
    assert.equal(on.json().data.enabled, true);
    assert.equal(on.json().data.warmupDomain.domain, 'quarry-sender.test');
    assert.equal(on.json().data.warmupDomain.status, 'WARMING');
    assert.equal(on.json().data.warmupDomain.fromAddress, 'sales@quarry-sender.test');
    const off = await ctx.call(alice, 'POST', url, { enabled: false });
    assert.equal(off.json().data.enabled, false);
    assert.equal(off.json().data.warmupDomain.status, 'PAUSED');
    assert.doesNotMatch(off.body, /smtp secret|smtp%20secret/);
    assertError(await ctx.call(bob, 'GET', url), 404, 'NOT_FOUND');
    assertError(await ctx.call(bob, 'POST', url, { enabled: true, dkimSelector: 'google' }), 404, 'NOT_FOUND');
  });

  test('a mailbox host on a private network is refused unless ALLOW_PRIVATE_NETWORK', async () => {
    const strict = await createTwoUserContext({ workers: false, env: { ALLOW_PRIVATE_NETWORK: 'false' } });
    try {
      const res = await strict.ctx.call(strict.alice, 'POST', '/api/outreach/connections', {
        provider: 'smtp',
        name: 'Sales',
        mailboxes: [mailbox()],
      });
      assertError(res, 400, 'CONNECTION_FAILED');
      assert.match(res.json().error.message, /ALLOW_PRIVATE_NETWORK/);
      // IPv4-compatible IPv6 forms of the metadata address and a private one: refused before any connection.
      const hidden = await strict.ctx.call(strict.alice, 'POST', '/api/outreach/connections', {
        provider: 'smtp',
        name: 'Sales',
        mailboxes: [
          mailbox({
            smtpUrl: smtpUrl().replace('127.0.0.1', '[::a9fe:a9fe]'),
            imapUrl: imap.url('sales@quarry-sender.test').replace('127.0.0.1', '[::10.0.0.1]'),
          }),
        ],
      });
      assertError(hidden, 400, 'CONNECTION_FAILED');
      const details = hidden.json().error.details as Array<{ field: string; message: string }>;
      assert.deepEqual(
        details.map((d) => d.field),
        ['mailboxes.0.smtpUrl', 'mailboxes.0.imapUrl'],
      );
      assert.match(details[0]!.message, /::a9fe:a9fe is a link-local address.*ALLOW_PRIVATE_NETWORK/);
      assert.match(details[1]!.message, /::a00:1 is a private address.*ALLOW_PRIVATE_NETWORK/);
      assert.equal(
        (await strict.ctx.call(strict.alice, 'GET', '/api/outreach/connections')).json().data.connections.length,
        0,
      );
    } finally {
      await strict.ctx.close();
    }
  });
});

const createLead = async (user: TestUser, body: Record<string, unknown>) => {
  const res = await ctx.call(user, 'POST', '/api/leads', { sourceUrl: 'https://example.com/team', ...body });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.lead.id as string;
};
const validate = async (user: TestUser, id: string) => {
  const res = await ctx.call(user, 'POST', `/api/leads/${id}/validate-email`);
  assert.equal(res.statusCode, 200, res.body);
};

describe('campaigns and the sequencer', () => {
  const steps = [
    {
      subject: '{Quick|Short} question for {{company}}',
      body: 'Hi {{firstName}},\n\nDo you need leads?',
      delayDays: 0,
    },
    { subject: '', body: 'Hi {{firstName|there}}, following up.', delayDays: 2 },
    { subject: 'Last note, {{firstName}}', body: 'Closing the loop.', delayDays: 3 },
  ];
  let campaignId: string;
  const leadIds: Record<string, string> = {};

  test('templates are checked on save: the step, the field and the position are named', async () => {
    const res = await ctx.call(alice, 'POST', '/api/outreach/campaigns', {
      connectionId,
      name: 'Bad',
      steps: [steps[0], { subject: '', body: 'Hi {{fristName}}', delayDays: 1 }],
    });
    assertValidation(res, 'steps.1.body');
    assert.match(res.body, /unknown variable \\"fristName\\" .*line 1, column 4/);
    assertValidation(
      await ctx.call(alice, 'POST', '/api/outreach/campaigns', {
        connectionId,
        name: 'Bad',
        steps: [{ subject: 'Hi {there', body: 'x' }],
      }),
      'steps.0.subject',
    );
    assertValidation(
      await ctx.call(alice, 'POST', '/api/outreach/campaigns', {
        connectionId,
        name: 'Big',
        steps: [{ subject: 'x', body: 'x'.repeat(50_001) }],
      }),
      'steps.0.body',
    );
    assertError(
      await ctx.call(bob, 'POST', '/api/outreach/campaigns', { connectionId, name: 'x', steps: [steps[0]] }),
      404,
      'NOT_FOUND',
    );
  });

  test('a campaign is created as DRAFT; enrollment counts every lead the gates stop, by reason', async () => {
    const res = await ctx.call(alice, 'POST', '/api/outreach/campaigns', {
      connectionId,
      name: 'Spring',
      steps,
      window: { timezone: 'UTC', days: [1, 2, 3, 4, 5], startHour: 9, endHour: 17 },
      minGapSeconds: 0,
      maxGapSeconds: 0,
      trackOpens: true,
    });
    assert.equal(res.statusCode, 201, res.body);
    const { campaign } = res.json().data;
    campaignId = campaign.id;
    assert.equal(campaign.status, 'DRAFT');
    for (const name of ['ada', 'grace', 'alan']) {
      leadIds[name] = await createLead(alice, {
        email: `${name}@prospects.test`,
        firstName: name[0]!.toUpperCase() + name.slice(1),
        company: 'Prospects Inc',
      });
      await validate(alice, leadIds[name]!);
    }
    leadIds.noName = await createLead(alice, { email: 'anon@prospects.test', company: 'Prospects Inc' });
    await validate(alice, leadIds.noName);
    leadIds.unvalidated = await createLead(alice, { email: 'later@prospects.test', firstName: 'Lat', company: 'P' });
    leadIds.suppressed = await createLead(alice, { email: 'no@prospects.test', firstName: 'No', company: 'P' });
    await validate(alice, leadIds.suppressed);
    await ctx.call(alice, 'POST', '/api/suppressions', {
      items: [{ type: 'email', value: 'no@prospects.test', reason: 'asked' }],
    });
    leadIds.invalid = await createLead(alice, { email: 'x@nomail.test', firstName: 'X', company: 'P' });
    await validate(alice, leadIds.invalid);
    leadIds.noEmail = await createLead(alice, { firstName: 'Nobody', company: 'P' });
    const bobs = await createLead(bob, { email: 'bob@prospects.test', firstName: 'Bob', company: 'B' });
    const enroll = await ctx.call(alice, 'POST', `/api/outreach/campaigns/${campaignId}/leads`, {
      leadIds: [...Object.values(leadIds), leadIds.ada, bobs, 'not-an-id'],
    });
    assert.equal(enroll.statusCode, 200, enroll.body);
    const result = enroll.json().data;
    assert.equal(result.uploaded, 3);
    assert.deepEqual(result.skipped, {
      missing_variable: 1,
      unvalidated: 1,
      suppressed: 1,
      invalid_email: 2,
      duplicate: 1,
      not_found: 2,
    });
    const again = await ctx.call(alice, 'POST', `/api/outreach/campaigns/${campaignId}/leads`, {
      leadIds: [leadIds.ada],
    });
    assert.deepEqual(again.json().data.skipped, { duplicate: 1 });
    assertValidation(
      await ctx.call(alice, 'POST', `/api/outreach/campaigns/${campaignId}/leads`, {
        leadIds: Array.from({ length: 1001 }, () => leadIds.ada),
      }),
      'leadIds',
    );
    assertError(await ctx.call(bob, 'GET', `/api/outreach/campaigns/${campaignId}`), 404, 'NOT_FOUND');
    assertError(
      await ctx.call(bob, 'POST', `/api/outreach/campaigns/${campaignId}/leads`, { leadIds: [bobs] }),
      404,
      'NOT_FOUND',
    );
  });

  test('nothing goes out while DRAFT; states move only as allowed', async () => {
    assert.equal((await createSequencer(ctx.deps).runDue()).sent, 0);
    assert.equal(smtp.messages.length, 0);
    assertError(
      await ctx.call(alice, 'POST', `/api/outreach/campaigns/${campaignId}/status`, { status: 'paused' }),
      400,
      'INVALID_STATE',
    );
    const active = await ctx.call(alice, 'POST', `/api/outreach/campaigns/${campaignId}/status`, { status: 'active' });
    assert.equal(active.json().data.campaign.status, 'ACTIVE');
  });

  test('step 1 goes to each lead once, with a recorded Message-ID and RFC 8058 unsubscribe headers', async () => {
    const balance = await ctx.deps.credits.balance(ctx.deps.db, alice.id);
    const run = await createSequencer(ctx.deps).runDue();
    assert.equal(run.sent, 3);
    assert.equal((await createSequencer(ctx.deps).runDue()).sent, 0, 'nothing is due twice');
    assert.equal(smtp.messages.length, 3);
    const mail = await smtp.waitFor('ada@prospects.test');
    assert.match(mail.subject, /^(Quick|Short) question for Prospects Inc$/);
    assert.match(mail.text, /^Hi Ada,\n\nDo you need leads\?/);
    assert.match(mail.text, /https:\/\/quarry\.example\/api\/outreach\/unsubscribe\//);
    assert.equal(headerOf(mail.raw, 'List-Unsubscribe-Post'), 'List-Unsubscribe=One-Click');
    assert.match(
      headerOf(mail.raw, 'List-Unsubscribe') ?? '',
      /^<https:\/\/quarry\.example\/api\/outreach\/unsubscribe\/[^>]+>$/,
    );
    const messageId = headerOf(mail.raw, 'Message-ID')!.replace(/[<>]/g, '');
    const [stored] = await ctx.deps.db.select().from(outreachMessages).where(eq(outreachMessages.messageId, messageId));
    assert.equal(stored?.status, 'SENT');
    assert.equal(stored?.leadId, leadIds.ada);
    assert.equal((await ctx.call(alice, 'GET', `/api/leads/${leadIds.ada}`)).json().data.lead.status, 'CONTACTED');
    assert.equal(await ctx.deps.credits.balance(ctx.deps.db, alice.id), balance - 3, 'one credit per mail');
    const accounts = (await ctx.call(alice, 'GET', '/api/outreach/accounts')).json().data.accounts;
    assert.equal(accounts[0].sentToday, 3);
  });

  test('step 2 waits its delay, then follows in the same thread', async () => {
    clock.advance(DAY_MS);
    assert.equal((await createSequencer(ctx.deps).runDue()).sent, 0, 'one day is not two');
    clock.advance(DAY_MS);
    assert.equal((await createSequencer(ctx.deps).runDue()).sent, 3);
    const first = smtp.messages.find((m) => m.to.includes('grace@prospects.test'))!;
    const second = smtp.messages.filter((m) => m.to.includes('grace@prospects.test'))[1]!;
    const firstId = headerOf(first.raw, 'Message-ID');
    assert.equal(second.subject, `Re: ${first.subject}`);
    assert.equal(headerOf(second.raw, 'In-Reply-To'), firstId);
    assert.equal(headerOf(second.raw, 'References'), firstId);
    assert.match(second.text, /^Hi Grace, following up\./);
  });

  test('outside the window nothing goes out; the due time moves to the next opening', async () => {
    // Step 3 is due 3 days after Wednesday 10:00: Saturday, outside Monday–Friday.
    clock.advance(3 * DAY_MS);
    assert.equal((await createSequencer(ctx.deps).runDue()).sent, 0);
    const [row] = await ctx.deps.db
      .select()
      .from(outreachEnrollments)
      .where(eq(outreachEnrollments.leadId, leadIds.alan!));
    assert.equal(row?.nextSendAt?.toISOString(), '2026-03-09T09:00:00.000Z', 'Monday 09:00 UTC');
  });

  test('one-click unsubscribe suppresses the address and stops the sequence; the link is signed', async () => {
    const mail = smtp.messages.find((m) => m.to.includes('alan@prospects.test'))!;
    const url = new URL(headerOf(mail.raw, 'List-Unsubscribe')!.slice(1, -1));
    const page = await ctx.inject({ method: 'GET', url: url.pathname });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /alan@prospects\.test/);
    const forged = await ctx.inject({ method: 'POST', url: `${url.pathname.slice(0, -4)}AAAA` });
    assert.equal(forged.statusCode, 404);
    // Exactly `<id>.<sig>`: a valid token with anything after it names nothing (parsed strictly, before the MAC).
    for (const tail of ['.x', '.', '..', '=', '==', '%3D', '.AAAA'])
      for (const method of ['GET', 'POST'] as const) {
        const res = await ctx.inject({ method, url: `${url.pathname}${tail}` });
        assert.equal(res.statusCode, 404, `${method} ${tail}`);
      }
    const post = () =>
      ctx.inject({
        method: 'POST',
        url: url.pathname,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'List-Unsubscribe=One-Click',
      });
    assert.equal((await post()).statusCode, 200);
    assert.equal((await post()).statusCode, 200, 'a second click changes nothing');
    const check = await ctx.call(alice, 'GET', '/api/suppressions?value=alan@prospects.test');
    assert.equal(check.json().data.match?.source ?? check.json().data.suppression?.source, 'unsubscribe');
    assert.equal((await ctx.call(alice, 'GET', `/api/leads/${leadIds.alan}`)).json().data.lead.status, 'UNSUBSCRIBED');
    clock.set(new Date('2026-03-09T10:00:00Z'));
    const before = smtp.messages.length;
    assert.equal((await createSequencer(ctx.deps).runDue()).sent, 2, 'ada and grace get step 3');
    assert.equal(smtp.messages.length, before + 2);
    assert.ok(!smtp.messages.slice(before).some((m) => m.to.includes('alan@prospects.test')));
  });

  test('analytics count sends, opens and unsubscribes per step and mailbox', async () => {
    const mail = smtp.messages.find((m) => m.to.includes('ada@prospects.test'))!;
    const { html } = await PostalMime.parse(mail.raw);
    const pixel = html?.match(/quarry\.example(\/api\/outreach\/o\/[^"]+\.gif)/)?.[1];
    assert.ok(pixel, 'the HTML part carries the open image');
    for (const tail of ['.x', '.', '=', '.AAAA']) {
      const res = await ctx.inject({ method: 'GET', url: pixel.replace(/\.gif$/, `${tail}.gif`) });
      assert.equal(res.statusCode, 404, tail);
    }
    const open = await ctx.inject({ method: 'GET', url: pixel });
    assert.equal(open.statusCode, 200);
    assert.equal(open.headers['content-type'], 'image/gif');
    await ctx.inject({ method: 'GET', url: pixel });
    const res = await ctx.call(alice, 'GET', `/api/outreach/campaigns/${campaignId}/analytics`);
    assert.equal(res.statusCode, 200, res.body);
    const a = res.json().data;
    assert.equal(a.enrolled, 3);
    assert.deepEqual(
      { sent: a.totals.sent, opened: a.totals.opened, unsubscribed: a.totals.unsubscribed, replied: a.totals.replied },
      { sent: 8, opened: 1, unsubscribed: 1, replied: 0 },
    );
    assert.deepEqual(
      a.perStep.map((s: { step: number; sent: number }) => [s.step, s.sent]),
      [
        [1, 3],
        [2, 3],
        [3, 2],
      ],
    );
    assert.equal(a.perMailbox[0].sent, 8);
    const campaign = (await ctx.call(alice, 'GET', `/api/outreach/campaigns/${campaignId}`)).json().data.campaign;
    assert.deepEqual(campaign.leads, { COMPLETED: 2, UNSUBSCRIBED: 1 });
    assertError(await ctx.call(bob, 'GET', `/api/outreach/campaigns/${campaignId}/analytics`), 404, 'NOT_FOUND');
  });
});
