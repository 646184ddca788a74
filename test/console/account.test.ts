/**
 * The console's account pages in real Chromium (issue 25): webhooks with deliveries and replay, credits with the
 * burn-rate chart, analytics charts, organizations with members and invitations. Loopback only: a webhook
 * receiver, an SMTP server for the invitation mail.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { creditTransactions } from '../../src/db/schema/index.ts';
import type { MeteredFeature } from '../../src/shared/credits.ts';
import {
  assertAccessible,
  assertLooksLike,
  type ConsoleContext,
  offMachine,
  settled,
  startConsole,
} from '../helpers/console.ts';
import { invitationTokenIn } from '../helpers/orgs.ts';
import { seedLeads } from '../helpers/seed.ts';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.ts';
import { startWebhookReceiver, verifyWith, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

let con: ConsoleContext;
let smtp: TestSmtpServer;
let receiver: WebhookReceiver;
before(async () => {
  smtp = await startSmtpServer();
  receiver = await startWebhookReceiver({ status: 200, body: 'ok' });
  con = await startConsole({ env: { SMTP_URL: smtp.url } });
});
after(async () => {
  await con?.close();
  await receiver?.close();
  await smtp?.close();
});

const lead = (user: Parameters<ConsoleContext['ctx']['call']>[0], body: Record<string, string>) =>
  con.ctx.call(user, 'POST', '/api/leads', { sourceUrl: 'https://directory.example.com/people', ...body });

test('webhooks: create an endpoint (secret once), an event is delivered, Replay sends it again, test event, rotate, disable, delete', async () => {
  const user = await con.ctx.signup();
  const { page, requests, errors } = await con.page(user);
  await page.goto('/webhooks');
  await settled(page);
  await page.getByText('No endpoints yet').waitFor();
  await assertAccessible(page, 'webhooks (empty)');

  await page.getByRole('button', { name: 'New endpoint' }).click();
  await page.getByRole('textbox', { name: 'URL' }).fill(receiver.url);
  await page.getByRole('textbox', { name: 'Description' }).fill('CRM sync');
  // Without an event type the service refuses, naming the field.
  await page.getByRole('button', { name: 'Create endpoint' }).click();
  await page.getByRole('alert').getByText('eventTypes').first().waitFor();
  await page.getByRole('group', { name: 'Event types' }).getByRole('checkbox', { name: 'lead.created' }).check();
  await page.getByRole('button', { name: 'Create endpoint' }).click();
  const secret = (await page.getByRole('status').locator('code').textContent())!;
  assert.match(secret, /^whsec_/);
  await page.getByRole('table', { name: 'Endpoints' }).getByRole('link', { name: receiver.url }).waitFor();
  await assertAccessible(page, 'webhooks (secret shown)');
  await page.getByRole('button', { name: 'Done' }).click();
  await settled(page);
  await assertLooksLike(page, 'webhooks');

  // The API sees the endpoint as created on the page.
  const [endpoint] = (await con.ctx.call(user, 'GET', '/api/webhooks')).json().data.webhooks;
  assert.deepEqual(
    [endpoint.url, endpoint.eventTypes, endpoint.description],
    [receiver.url, ['lead.created'], 'CRM sync'],
  );

  // An event: a lead created through the API is delivered, signed with the secret the page showed.
  const before = receiver.requests.length;
  assert.equal((await lead(user, { firstName: 'Ada', email: 'ada@example.com' })).statusCode, 201);
  const [first] = (await receiver.waitFor(before + 1)).slice(before);
  assert.equal(verifyWith(secret, first!).type, 'lead.created');

  await page.getByRole('link', { name: receiver.url }).click();
  await page.waitForURL(`**/webhooks/${endpoint.id}`);
  await page.getByRole('heading', { name: 'Webhook endpoint' }).waitFor();
  const deliveries = page.getByRole('table', { name: 'Deliveries, newest first' });
  const row = deliveries.getByRole('row').filter({ hasText: 'lead.created' });
  await row.getByText('succeeded').waitFor();
  await settled(page);
  await assertAccessible(page, 'webhook');
  await assertLooksLike(page, 'webhook');

  // Replay: the receiver gets the same delivery again, with the same webhook-id.
  await row.getByRole('button', { name: 'Replay' }).click();
  await page.getByRole('status').getByText('being sent again').waitFor();
  const [, again] = (await receiver.waitFor(before + 2)).slice(before);
  assert.equal(again!.headers['webhook-id'], first!.headers['webhook-id']);
  assert.equal(verifyWith(secret, again!).type, 'lead.created');
  await row.getByText('2 attempts').waitFor();

  // A test event from the page: a webhook.test delivery, shown once delivered.
  await page.getByRole('button', { name: 'Send test event' }).click();
  const [, , test] = (await receiver.waitFor(before + 3)).slice(before);
  assert.equal(verifyWith(secret, test!).type, 'webhook.test');
  await deliveries.getByRole('row').filter({ hasText: 'webhook.test' }).getByText('succeeded').waitFor();
  const listed = (await con.ctx.call(user, 'GET', `/api/webhooks/${endpoint.id}/deliveries`)).json().data.deliveries;
  assert.deepEqual(listed.map((d: { eventType: string; status: string }) => [d.eventType, d.status]).sort(), [
    ['lead.created', 'succeeded'],
    ['webhook.test', 'succeeded'],
  ]);
  assert.equal(receiver.requests.length, before + 3);

  // Rotate the secret (shown once, different), disable and enable, change the event types, delete.
  page.on('dialog', (dialog) => dialog.accept());
  await page.getByRole('button', { name: 'Rotate secret' }).click();
  const rotated = (await page
    .getByRole('status')
    .filter({ hasText: 'shown only once' })
    .locator('code')
    .textContent())!;
  assert.match(rotated, /^whsec_/);
  assert.notEqual(rotated, secret);
  await page.getByRole('button', { name: 'Done' }).click();
  const state = async () => (await con.ctx.call(user, 'GET', '/api/webhooks')).json().data.webhooks[0];
  await page.getByRole('button', { name: 'Disable' }).click();
  await page.getByRole('button', { name: 'Enable' }).waitFor();
  assert.equal((await state()).enabled, false);
  await page.getByRole('button', { name: 'Enable' }).click();
  await page.getByRole('button', { name: 'Disable' }).waitFor();
  assert.equal((await state()).enabled, true);
  await page.getByRole('button', { name: 'Change event types' }).click();
  const form = page.getByRole('form', { name: 'Event types of this endpoint' });
  await form.getByRole('checkbox', { name: 'job.completed' }).check();
  await form.getByRole('button', { name: 'Save event types' }).click();
  await form.waitFor({ state: 'detached' });
  assert.deepEqual((await state()).eventTypes.sort(), ['job.completed', 'lead.created']);
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.waitForURL('**/webhooks');
  await page.getByText('No endpoints yet').waitFor();
  assert.equal(await state(), undefined);
  assert.deepEqual(offMachine(requests), []);
  assert.deepEqual(errors, []);
});

/** Usage rows of the ledger on fixed past days, so a chart over a fixed window looks the same on every run. */
const HISTORY: Array<[string, number, MeteredFeature]> = [
  ['2026-03-02', 40, 'pages'],
  ['2026-03-05', 25, 'email_validations'],
  ['2026-03-12', 60, 'pages'],
  ['2026-03-20', 10, 'ai_tokens'],
];
const MARCH = 'from=2026-03-01&to=2026-03-30';

async function seedUsageHistory(userId: string) {
  await con.ctx.deps.db.insert(creditTransactions).values(
    HISTORY.map(([day, credits, feature]) => ({
      userId,
      kind: 'usage' as const,
      amount: -credits,
      balanceAfter: 0,
      feature,
      units: credits,
      createdAt: new Date(`${day}T09:00:00Z`),
    })),
  );
}

test('credits: the balance, the ledger and the burn-rate chart (a canvas) over a window', async () => {
  const user = await con.ctx.signup();
  const { db, credits } = con.ctx.deps;
  await credits.spend(db, user.id, 'pages', 120);
  await credits.spend(db, user.id, 'email_validations', 30);
  await seedUsageHistory(user.id);
  const { page, requests, errors } = await con.page(user);
  await page.goto('/credits');
  await settled(page);
  const balance = (await con.ctx.call(user, 'GET', '/api/credits/balance')).json().data.balance as number;
  assert.equal(balance, 1_000_000 - 150);
  await page.locator('.stat', { hasText: 'Balance' }).getByText('999,850').waitFor();
  await page.locator('.stat', { hasText: 'Used this month' }).getByText('150').waitFor();
  await page
    .getByRole('figure', { name: /Burn rate/ })
    .locator('canvas')
    .first()
    .waitFor();
  const ledger = page.getByRole('table', { name: 'Ledger, newest first' });
  assert.equal(await ledger.getByRole('row').count(), 1 + 3 + HISTORY.length); // header, grant, 2 usages, history
  await ledger.getByRole('row').filter({ hasText: 'email_validations' }).filter({ hasText: '-30' }).waitFor();
  await page.getByRole('table', { name: 'Usage this month by feature' }).getByText('pages').waitFor();

  // A fixed window (in the address): the chart and figures are the API's for it.
  await page.getByRole('textbox', { name: 'From', exact: true }).fill('2026-03-01');
  await page.getByRole('textbox', { name: 'To', exact: true }).fill('2026-03-30');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.waitForURL(`**/credits?${MARCH}`);
  const burn = (await con.ctx.call(user, 'GET', `/api/analytics/credit-burn-rate?${MARCH}`)).json().data;
  assert.equal(burn.usedInWindow, 135);
  const chart = page.getByRole('figure', { name: 'Burn rate: credits used per day, 2026-03-01 to 2026-03-30' });
  await chart.locator('canvas').first().waitFor();
  await page.locator('.stat', { hasText: 'Average per day' }).getByText('4.5', { exact: true }).waitFor();
  await page.getByText('135 used in the window').waitFor();
  await settled(page);
  await assertAccessible(page, 'credits');
  await assertLooksLike(page, 'credits');
  assert.deepEqual(offMachine(requests), []);
  assert.deepEqual(errors, []);
});

test('analytics: stat tiles, the activity and burn charts as canvases, the funnel, over a window', async () => {
  const user = await con.ctx.signup();
  const at = (day: string) => new Date(`${day}T10:00:00Z`);
  const valid = (day: string) => ({
    emailValidation: { status: 'valid', tier: 'domain', errors: [], flags: [], checkedAt: at(day).toISOString() },
    validatedAt: at(day),
  });
  await seedLeads(con.ctx.deps.db, user.id, [
    { firstName: 'Grace', email: 'grace@example.com', status: 'NEW', createdAt: at('2026-03-03') },
    {
      firstName: 'Alan',
      email: 'alan@example.com',
      status: 'VALID',
      createdAt: at('2026-03-03'),
      ...valid('2026-03-04'),
    },
    {
      firstName: 'Edsger',
      email: 'edsger@example.com',
      status: 'CONTACTED',
      createdAt: at('2026-03-10'),
      ...valid('2026-03-11'),
    },
    {
      firstName: 'Barbara',
      email: 'barbara@example.com',
      status: 'REPLIED',
      createdAt: at('2026-03-10'),
      ...valid('2026-03-11'),
    },
    {
      firstName: 'Donald',
      email: 'donald@example.com',
      status: 'QUALIFIED',
      createdAt: at('2026-03-15'),
      ...valid('2026-03-16'),
    },
    {
      firstName: 'Frances',
      email: 'frances@example.com',
      status: 'CONVERTED',
      createdAt: at('2026-03-15'),
      ...valid('2026-03-16'),
    },
    { firstName: 'Ken', status: 'NEW', createdAt: at('2026-03-22') },
    { firstName: 'Outside', status: 'NEW', createdAt: at('2026-04-02') },
  ] as never);
  await seedUsageHistory(user.id);
  const { page, requests, errors } = await con.page(user);
  await page.goto('/analytics');
  await settled(page);
  await page.locator('.stat', { hasText: 'Leads' }).first().getByText('8', { exact: true }).waitFor();
  await page
    .getByRole('figure', { name: /Recent activity/ })
    .locator('canvas')
    .first()
    .waitFor();

  // The window: the form puts it in the address; the page shows the API's figures for it.
  await page.getByRole('textbox', { name: 'From', exact: true }).fill('2026-03-01');
  await page.getByRole('textbox', { name: 'To', exact: true }).fill('2026-03-30');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.waitForURL(`**/analytics?${MARCH}`);
  const overview = (await con.ctx.call(user, 'GET', `/api/analytics/pipeline-overview?${MARCH}`)).json().data;
  assert.equal(overview.totalLeads, 7);
  await page.locator('.stat', { hasText: 'Leads' }).first().getByText('7', { exact: true }).waitFor();
  await page.locator('.stat', { hasText: 'With an email' }).getByText('6', { exact: true }).waitFor();
  await page
    .getByRole('figure', { name: 'Recent activity per day, 2026-03-01 to 2026-03-30' })
    .locator('canvas')
    .first()
    .waitFor();
  await page
    .getByRole('figure', { name: 'Credits used per day, 2026-03-01 to 2026-03-30' })
    .locator('canvas')
    .first()
    .waitFor();
  assert.equal(await page.locator('figure.chart').count(), 2);
  assert.equal((await page.locator('figure.chart canvas').count()) >= 2, true);
  const funnel = page.getByRole('table', { name: 'Funnel' });
  for (const stage of overview.funnel as Array<{ stage: string; leads: number }>) {
    const name = stage.stage[0]!.toUpperCase() + stage.stage.slice(1);
    await funnel.getByRole('row', { name: new RegExp(`^${name} ${stage.leads} `) }).waitFor();
  }
  await page.locator('.stat', { hasText: 'Used in the window' }).getByText('135').waitFor();
  await settled(page);
  await assertAccessible(page, 'analytics');
  await assertLooksLike(page, 'analytics');

  // A bad window: the service's error, naming the field.
  await page.getByRole('textbox', { name: 'From', exact: true }).fill('2026-02-10');
  await page.getByRole('textbox', { name: 'To', exact: true }).fill('2026-01-10');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.waitForURL(/from=2026-02-10/);
  await page.getByRole('alert').getByText('from').first().waitFor();
  assert.deepEqual(offMachine(requests), []);
  assert.deepEqual(errors, []);
});

test('organizations: create one, invite a member by mail, change their role, remove them, withdraw an invitation', async () => {
  const owner = await con.ctx.signup();
  const { page, requests, errors } = await con.page(owner);
  page.on('dialog', (dialog) => dialog.accept());
  await page.goto('/organizations');
  await settled(page);
  await page.getByText('You are in no organization yet.').waitFor();
  await page.getByRole('button', { name: 'New organization' }).click();
  await page.getByRole('textbox', { name: 'Name' }).fill('Acme Growth');
  await assertAccessible(page, 'organizations');
  await page.getByRole('textbox', { name: 'Name' }).press('Enter'); // Enter submits, as in every form
  await page.waitForURL(/\/organizations\/[0-9a-f-]{36}$/);
  await page.getByRole('heading', { name: 'Acme Growth', level: 1 }).waitFor();
  const orgId = page.url().split('/').at(-1)!;
  const members = page.getByRole('table', { name: 'Members and their roles' });
  await members
    .getByRole('row')
    .filter({ hasText: owner.email })
    .getByRole('combobox', { name: `Role of ${owner.email}` })
    .waitFor();

  // Invite by email: the mail carries a token the invitee joins with.
  const invitee = `invitee-${Date.now()}@example.com`;
  await page.getByRole('textbox', { name: 'Email' }).fill(invitee);
  await page.getByRole('combobox', { name: 'Role', exact: true }).selectOption('admin');
  await page.getByRole('button', { name: 'Invite', exact: true }).click();
  await page.getByRole('status').getByText('Invitation sent').waitFor();
  const pending = page.getByRole('table', { name: 'Invitations not accepted yet' });
  await pending.getByRole('row').filter({ hasText: invitee }).getByText('admin').waitFor();
  const mail = await smtp.waitFor(invitee);
  const token = invitationTokenIn(mail);
  await settled(page);
  await assertAccessible(page, 'organization');
  await assertLooksLike(page, 'organization');

  const member = await con.ctx.signup({ email: invitee });
  const accepted = await con.ctx.call(member, 'POST', '/api/orgs/invitations/accept', { token });
  assert.equal(accepted.statusCode, 200, accepted.body);
  await page.reload();
  await settled(page);
  const role = page.getByRole('combobox', { name: `Role of ${invitee}` });
  assert.equal(await role.inputValue(), 'admin');
  await page.getByText('No pending invitations.').waitFor();

  // Change the role: the API sees it.
  await role.selectOption('viewer');
  const roleOf = async () =>
    (await con.ctx.call(owner, 'GET', `/api/orgs/${orgId}`))
      .json()
      .data.organization.members.find((m: { email: string }) => m.email === invitee)?.role;
  for (let i = 0; i < 50 && (await roleOf()) !== 'viewer'; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(await roleOf(), 'viewer');

  // Withdraw an invitation: its token no longer joins.
  const second = `second-${Date.now()}@example.com`;
  await page.getByRole('textbox', { name: 'Email' }).fill(second);
  await page.getByRole('combobox', { name: 'Role', exact: true }).selectOption('member');
  await page.getByRole('button', { name: 'Invite', exact: true }).click();
  const secondToken = invitationTokenIn(await smtp.waitFor(second));
  await page.getByRole('button', { name: `Withdraw the invitation of ${second}` }).click();
  await page.getByText('No pending invitations.').waitFor();
  const late = await con.ctx.signup({ email: second });
  const refused = await con.ctx.call(late, 'POST', '/api/orgs/invitations/accept', { token: secondToken });
  assert.equal(refused.statusCode, 400, refused.body);

  // Remove the member.
  await page.getByRole('button', { name: `Remove ${invitee}` }).click();
  await members.getByText(invitee).waitFor({ state: 'detached' });
  const detail = (await con.ctx.call(owner, 'GET', `/api/orgs/${orgId}`)).json().data.organization;
  assert.deepEqual(
    detail.members.map((m: { email: string; role: string }) => [m.email, m.role]),
    [[owner.email, 'owner']],
  );
  assert.deepEqual(detail.invitations, []);

  // The list shows the organization with the owner's role.
  await page.getByRole('link', { name: 'All organizations' }).click();
  await page.waitForURL('**/organizations');
  await page.getByRole('table', { name: 'Your organizations' }).getByRole('link', { name: 'Acme Growth' }).waitFor();
  await settled(page);
  await assertLooksLike(page, 'organizations');
  assert.deepEqual(offMachine(requests), []);
  assert.deepEqual(errors, []);
});
