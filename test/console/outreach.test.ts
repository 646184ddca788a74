import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createInboxReader } from '../../src/modules/outreach/inbox/inbox.reader.ts';
import { createSequencer } from '../../src/modules/outreach/sequencer/sequencer.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import type { TestUser } from '../helpers/app.ts';
import {
  assertAccessible,
  assertLooksLike,
  type ConsoleContext,
  type ConsolePage,
  offMachine,
  settled,
  startConsole,
} from '../helpers/console.ts';
import { startTestDnsServer, TEST_ZONES, type TestDnsServer } from '../helpers/dns.ts';
import { dovecotAvailable, startImapServer, type TestImapServer } from '../helpers/imap-server.ts';
import { headerOf, type ReceivedMail, startSmtpServer, type TestSmtpServer } from '../helpers/smtp.ts';

// Issue 25, Outreach: a mailbox on loopback (real SMTP server, Dovecot) connected through the Mailboxes page with its
// DNS vitals and warmup chart; a campaign created and leads enrolled on the console; the sequencer sends, a reply
// lands in the mailbox and shows in the Inbox as a thread; suppressions added and removed. Each page passes axe-core
// and matches its accepted screenshot; nothing leaves the machine.
const skip = dovecotAvailable() ? false : 'needs Dovecot (dovecot-imapd) for the loopback IMAP mailbox';

// Monday 2026-03-02 10:00 UTC: inside the default Monday–Friday 09:00–17:00 window; fixed so pages look the same.
const clock = new ManualClock(new Date('2026-03-02T10:00:00Z'));
const SENDER = 'sales@console-sender.test';
const SMTP_PASS = 'smtp secret';
const IMAP_PASS = 'imap secret';
// A fixed ed25519 DKIM key (RFC 8463: the bare 32-byte key), so the DNS vitals table looks the same every run.
const DKIM_KEY = Buffer.alloc(32, 7).toString('base64');

let con: ConsoleContext;
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let imap: TestImapServer;
let alice: TestUser;
let tab: ConsolePage;
let campaignId: string;
const leads: Record<string, string> = {};

/** The first mail the SMTP server received that `match` accepts (the server stores it as the session ends). */
async function waitForMail(match: (mail: ReceivedMail) => boolean) {
  for (let i = 0; i < 100; i++) {
    const mail = smtp.messages.find(match);
    if (mail) return mail;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no such mail among ${smtp.messages.length}`);
}

describe('outreach pages on a loopback mailbox', { skip }, () => {
  before(async () => {
    dns = await startTestDnsServer({
      ...TEST_ZONES,
      'prospects.test': { mx: [{ exchange: 'mx.prospects.test', priority: 10 }] },
      'console-sender.test': {
        mx: [{ exchange: 'mx.console-sender.test', priority: 10 }],
        txt: ['v=spf1 ip4:127.0.0.1 -all'],
      },
      'google._domainkey.console-sender.test': { txt: [`v=DKIM1; k=ed25519; p=${DKIM_KEY}`] },
      '_dmarc.console-sender.test': { txt: ['v=DMARC1; p=quarantine'] },
    });
    smtp = await startSmtpServer({ auth: { user: SENDER, pass: SMTP_PASS } });
    imap = await startImapServer({ users: [{ user: SENDER, pass: IMAP_PASS }] });
    con = await startConsole({ clock, workers: false, env: { DNS_SERVERS: dns.address } });
    alice = await con.ctx.signup();
    // Leads made through the API (the Leads pages are another helper's); one a second apart so lists keep an order.
    for (const [key, firstName, lastName] of [
      ['ada', 'Ada', 'Lovelace'],
      ['grace', 'Grace', 'Hopper'],
      ['alan', 'Alan', 'Turing'],
    ] as const) {
      clock.advance(1000);
      const res = await con.ctx.call(alice, 'POST', '/api/leads', {
        sourceUrl: 'https://example.com/team',
        email: `${key}@prospects.test`,
        firstName,
        lastName,
        company: 'Analytical Engines',
      });
      assert.equal(res.statusCode, 201, res.body);
      leads[key] = res.json().data.lead.id;
      // Alan stays unvalidated: the enrolment gates leave him out, and the page says why.
      if (key !== 'alan') await con.ctx.call(alice, 'POST', `/api/leads/${leads[key]}/validate-email`);
    }
    tab = await con.page(alice);
    tab.page.on('dialog', (dialog) => dialog.accept());
  });
  after(async () => {
    await con?.close();
    await smtp?.close();
    await imap?.close();
    await dns?.close();
  });

  test('Mailboxes: connect through the page (both logins checked), DNS vitals, warmup enabled with its chart', async () => {
    const { page } = tab;
    await page.goto('/outreach');
    await settled(page);
    const sub = page.getByRole('navigation', { name: 'Outreach' });
    await sub.getByRole('link', { name: 'Mailboxes' }).click();
    await page.waitForURL('**/mailboxes');
    await page.getByText('No mailboxes yet').waitFor();
    await page.getByRole('button', { name: 'Connect mailbox' }).click();
    await page.getByRole('textbox', { name: 'Email' }).fill(SENDER);
    await page.getByRole('textbox', { name: 'From name' }).fill('Sam Sales');
    await page
      .getByRole('textbox', { name: 'SMTP URL' })
      .fill(`smtp://${encodeURIComponent(SENDER)}:${encodeURIComponent('wrong')}@127.0.0.1:${smtp.port}`);
    await page.getByRole('textbox', { name: 'IMAP URL' }).fill(imap.url(SENDER));
    await page.getByRole('button', { name: 'Connect', exact: true }).click();
    // A refused login is the service's answer, naming the field; nothing is stored.
    await page.getByRole('alert').getByText('mailboxes.0.smtpUrl', { exact: true }).waitFor();
    await page
      .getByRole('textbox', { name: 'SMTP URL' })
      .fill(`smtp://${encodeURIComponent(SENDER)}:${encodeURIComponent(SMTP_PASS)}@127.0.0.1:${smtp.port}`);
    await page.getByRole('button', { name: 'Connect', exact: true }).click();
    await page.getByRole('link', { name: SENDER }).waitFor();
    const accounts = (await con.ctx.call(alice, 'GET', '/api/outreach/accounts')).json().data.accounts;
    assert.equal(accounts.length, 1);
    assert.equal(accounts[0].fromName, 'Sam Sales');

    // DNS vitals are read as the mailbox is shown: MX, SPF, DKIM (under a common selector) and DMARC.
    await page.getByText('4 of 4 checks pass').waitFor();
    const dnsTable = page.getByRole('table', { name: 'DNS records of console-sender.test' });
    await dnsTable.getByRole('cell', { name: 'v=spf1 ip4:127.0.0.1 -all' }).waitFor();

    // Warmup: off, then enabled with the domain's DKIM selector (SPF and DKIM are checked by the service).
    await page.getByRole('textbox', { name: 'DKIM selector for warmup' }).fill('google');
    await page.getByRole('button', { name: 'Enable warmup' }).click();
    await page.getByRole('button', { name: 'Pause warmup' }).waitFor();
    const progress = page.getByRole('progressbar', { name: /Warmup progress/ });
    assert.equal(await progress.getAttribute('value'), '0');
    const chart = page.getByRole('figure', { name: /Warmup schedule/ });
    await chart.locator('canvas').first().waitFor();
    const warmup = (await con.ctx.call(alice, 'GET', `/api/outreach/accounts/${accounts[0].id}/warmup`)).json().data;
    assert.equal(warmup.warmupDomain.status, 'WARMING');
    await settled(page);
    await assertAccessible(page, 'mailboxes');
    await page.evaluate('window.scrollTo(0, 0)');
    await assertLooksLike(page, 'outreach-mailboxes');
    await chart.scrollIntoViewIfNeeded();
    await assertLooksLike(page, 'outreach-mailboxes-warmup');
  });

  test('New campaign on the Outreach page; the campaign page enrolls leads and starts sending', async () => {
    const { page } = tab;
    await page.goto('/outreach');
    await settled(page);
    await page.getByRole('button', { name: 'New campaign' }).click();
    await page.getByRole('textbox', { name: 'Name' }).fill('Spring outreach');
    await page.getByRole('textbox', { name: 'Step 1 subject' }).fill('Hello {{firstName}}');
    await page.getByRole('textbox', { name: 'Step 1 body' }).fill('Hi {{firstName}}, do you need leads?');
    await page.getByRole('button', { name: 'Add step' }).click();
    await page.getByRole('spinbutton', { name: 'Step 2 delay (days)' }).fill('3');
    await page.getByRole('textbox', { name: 'Step 2 body' }).fill('Hi {{fristName}}, following up.');
    await page.getByRole('spinbutton', { name: 'Minimum gap (seconds)' }).fill('0');
    await page.getByRole('spinbutton', { name: 'Maximum gap (seconds)' }).fill('0');
    await page.getByRole('button', { name: 'Create campaign' }).click();
    // The template error is the service's, naming the step and field.
    await page.getByRole('alert').getByText('steps.1.body', { exact: true }).waitFor();
    await page.getByRole('textbox', { name: 'Step 2 body' }).fill('Hi {{firstName|there}}, following up.');
    await page.getByRole('button', { name: 'Create campaign' }).click();
    await page.waitForURL(/\/outreach\/[0-9a-f-]{36}$/);
    campaignId = page.url().split('/').pop()!;
    await page.getByRole('heading', { level: 1, name: 'Spring outreach' }).waitFor();
    const steps = page.getByRole('table', { name: 'Sequence steps' });
    await steps.getByRole('cell', { name: 'Hello {{firstName}}' }).waitFor();
    await steps.getByRole('cell', { name: '3 days after step 1' }).waitFor();
    await page.getByText('Mon, Tue, Wed, Thu, Fri, 09:00–17:00 (UTC)').waitFor();
    await page
      .getByRole('table', { name: /Sending mailboxes/ })
      .getByRole('link', { name: SENDER })
      .waitFor();

    await settled(page);
    for (const name of ['Ada Lovelace', 'Grace Hopper', 'Alan Turing'])
      await page.getByRole('checkbox', { name: `Select ${name}` }).check();
    await page.getByRole('button', { name: 'Enroll selected' }).click();
    const status = page.getByRole('status').filter({ hasText: 'Enrolled' });
    await status.getByText('Enrolled 2 leads.').waitFor();
    await status.getByText('Skipped: unvalidated 1').waitFor();
    await page.getByRole('table', { name: /Enrolled leads by state \(2 in all\)/ }).waitFor();
    await page.getByRole('button', { name: 'Start sending' }).click();
    await page.getByRole('button', { name: 'Pause sending' }).waitFor();
    const campaign = (await con.ctx.call(alice, 'GET', `/api/outreach/campaigns/${campaignId}`)).json().data.campaign;
    assert.equal(campaign.status, 'ACTIVE');
    assert.deepEqual(campaign.leads, { ACTIVE: 2 });
    assert.equal(campaign.minGapSeconds, 0);
    assert.deepEqual(
      campaign.steps.map((s: { delayDays: number }) => s.delayDays),
      [0, 3],
    );
  });

  test('the sequencer sends; a reply delivered to the mailbox shows in the Inbox as a thread', async () => {
    const { page } = tab;
    const run = await createSequencer(con.ctx.deps).runDue();
    assert.equal(run.sent, 2);
    const toAda = await smtp.waitFor('ada@prospects.test');
    assert.equal(toAda.subject, 'Hello Ada');
    const messageId = headerOf(toAda.raw, 'Message-ID')!;
    await imap.append(
      SENDER,
      [
        'From: Ada Lovelace <ada@prospects.test>',
        `To: <${SENDER}>`,
        'Subject: Re: Hello Ada',
        'Message-ID: <reply-ada@prospects.test>',
        `In-Reply-To: ${messageId}`,
        `References: ${messageId}`,
        'Date: Mon, 02 Mar 2026 11:00:00 +0000',
        '',
        'Sounds interesting: tell me more.',
        '',
      ].join('\r\n'),
    );
    const read = await createInboxReader(con.ctx.deps).runDue({ force: true });
    assert.equal(read.reply, 1);

    await page.goto('/outreach');
    await settled(page);
    await page.getByRole('navigation', { name: 'Outreach' }).getByRole('link', { name: 'Inbox' }).click();
    await page.waitForURL('**/inbox');
    await settled(page);
    const thread = page.getByRole('article', { name: /Hello Ada/ });
    await thread.waitFor();
    const messages = thread.getByRole('list', { name: 'Messages with ada@prospects.test' }).getByRole('listitem');
    assert.equal(await messages.count(), 2);
    assert.match((await messages.nth(0).textContent())!, /Sent · step 1.*Hi Ada, do you need leads\?/s);
    assert.match((await messages.nth(1).textContent())!, /Reply.*Sounds interesting: tell me more\./s);
    assert.equal(await page.getByRole('article').count(), 1, 'Grace did not answer: no thread');
    await assertAccessible(page, 'inbox');
    await assertLooksLike(page, 'outreach-inbox');

    assert.deepEqual(offMachine(tab.requests), []);
  });

  test('the campaign page counts the sends and the reply per step, in a chart on a canvas', async () => {
    const { page } = tab;
    await page.goto(`/outreach/${campaignId}`);
    await settled(page);
    const totals = page.getByRole('group', { name: 'Totals' });
    await totals.getByText('Replied').waitFor();
    assert.match((await totals.textContent())!, /Enrolled2\s*Sent2\s*OpenedNot tracked\s*Replied1\s*50\.0 % of sent/);
    const perStep = page.getByRole('table', { name: 'Per step' });
    assert.deepEqual(await perStep.getByRole('row').nth(1).getByRole('cell').allTextContents(), [
      '1',
      '2',
      '0',
      '1',
      '0',
      '0',
    ]);
    const chart = page.getByRole('figure', { name: /Per step/ });
    await chart.locator('canvas').first().waitFor();
    assert.equal(await chart.locator('canvas').count(), 1);
    await page
      .getByRole('table', { name: /Enrolled leads by state/ })
      .getByText('REPLIED')
      .waitFor();
    await assertAccessible(page, 'outreach-campaign');
    await assertLooksLike(page, 'outreach-campaign');
    await chart.scrollIntoViewIfNeeded();
    await assertLooksLike(page, 'outreach-campaign-analytics');

    // The list: campaigns by name, each a link to its page; the Inbox one click away.
    await page.getByRole('link', { name: 'All campaigns' }).click();
    await page.waitForURL('**/outreach');
    await settled(page);
    const table = page.getByRole('table', { name: 'Campaigns' });
    assert.equal(
      await table.getByRole('link', { name: 'Spring outreach' }).getAttribute('href'),
      `/outreach/${campaignId}`,
    );
    await page.getByRole('navigation', { name: 'Outreach' }).getByRole('link', { name: 'Inbox' }).waitFor();
    assert.equal(await page.getByRole('navigation', { name: 'Main' }).count(), 1);
    await assertAccessible(page, 'outreach');
    await assertLooksLike(page, 'outreach');
  });

  test('a reply written in the Inbox goes out from the mailbox, in the thread, and joins it', async () => {
    const { page } = tab;
    await page.goto('/inbox');
    await settled(page);
    const thread = page.getByRole('article', { name: /Hello Ada/ });
    await thread.getByRole('button', { name: 'Reply to ada@prospects.test' }).click();
    await thread.getByRole('textbox', { name: 'Your reply' }).fill('Gladly. Here is more.');
    await thread.getByRole('button', { name: 'Send reply' }).click();
    await thread.getByRole('listitem').nth(2).getByText('Gladly. Here is more.').waitFor();
    const answer = await waitForMail((m) => m.text.includes('Gladly. Here is more.'));
    assert.equal(headerOf(answer.raw, 'In-Reply-To'), '<reply-ada@prospects.test>');
    assert.equal(await thread.getByRole('listitem').count(), 3);
    assert.deepEqual(offMachine(tab.requests), []);
  });

  test('Suppressions: add addresses and a domain, search, remove; the API agrees', async () => {
    const { page, errors, requests } = tab;
    await page.goto('/suppressions');
    await settled(page);
    await page.getByText('The list is empty.').waitFor();
    await page.getByRole('button', { name: 'Add suppression' }).click();
    await page
      .getByRole('textbox', { name: 'Addresses or domains' })
      .fill('Spam@Prospects.test\nblocked.test\nnot an address');
    await page.getByRole('textbox', { name: 'Reason' }).fill('asked us');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.getByRole('alert').getByText('items.2.value', { exact: true }).waitFor();
    await page.getByRole('textbox', { name: 'Addresses or domains' }).fill('Spam@Prospects.test\nblocked.test');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.getByRole('status').getByText('Added 2').waitFor();
    const table = page.getByRole('table', { name: 'Suppressed addresses and domains' });
    await table.getByRole('cell', { name: 'spam@prospects.test', exact: true }).waitFor();
    await table.getByRole('cell', { name: 'blocked.test', exact: true }).waitFor();
    // The unsubscribe-free reply run suppressed nobody else: only the two rows.
    assert.equal(await table.getByRole('row').count(), 3);
    await assertAccessible(page, 'suppressions');
    await assertLooksLike(page, 'outreach-suppressions');

    await page.getByRole('searchbox', { name: 'Search' }).fill('blocked');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.waitForURL('**/suppressions?q=blocked');
    await table.getByRole('cell', { name: 'spam@prospects.test', exact: true }).waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Remove blocked.test' }).click();
    await page.getByText('Nothing matches.').waitFor();
    const left = (await con.ctx.call(alice, 'GET', '/api/suppressions')).json().data.suppressions;
    assert.deepEqual(
      left.map((s: { value: string; reason: string }) => [s.value, s.reason]),
      [['spam@prospects.test', 'asked us']],
    );
    assert.deepEqual(offMachine(requests), []);
    assert.deepEqual(errors, []);
  });
});
