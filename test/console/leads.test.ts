// The console's lead pages in real Chromium: the leads table (filters in the URL, bulk "Add tag" the API then sees),
// a lead's page with the URL it was found on, qualification's live preview, deal campaigns and their ranked accounts.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';
import { jobs, leads, sources } from '../../src/db/schema/index.ts';
import { newId } from '../../src/shared/ids.ts';
import type { TestUser } from '../helpers/app.ts';
import {
  assertAccessible,
  assertLooksLike,
  type ConsoleContext,
  offMachine,
  settled,
  startConsole,
} from '../helpers/console.ts';
import { seedLeads, seedProfiles, seedProfileType } from '../helpers/seed.ts';

let con: ConsoleContext;
let user: TestUser;
const names: Record<string, string> = {};
let scrapedId: string;
let jobId: string;

// Realistic, fixed people (the leads page's screenshot is the README's), oldest first: the page shows newest first.
const PEOPLE = [
  ['Amara', 'Okafor', 'amara.okafor@northwind.example', 'Northwind Traders', 'VP Sales', 'QUALIFIED', ['enterprise']],
  ['Lukas', 'Berger', 'lukas@alpenkraft.example', 'Alpenkraft GmbH', 'Head of Growth', 'CONTACTED', ['dach']],
  ['Sofia', 'Marquez', 'sofia.marquez@lumen.example', 'Lumen Analytics', 'Founder & CEO', 'VALID', []],
  ['Kenji', 'Watanabe', 'k.watanabe@harbor.example', 'Harbor Logistics', 'Operations Director', 'NEW', []],
  ['Priya', 'Raman', 'priya@northwind.example', 'Northwind Traders', 'Marketing Manager', 'VALID', ['enterprise']],
  ['Olivia', 'Chen', 'olivia.chen@brightpath.example', 'Brightpath Health', 'CTO', 'REPLIED', ['healthcare']],
  ['Mateo', 'Rossi', 'mateo@vela.example', 'Vela Studio', 'Creative Director', 'NEW', []],
  ['Hannah', 'Schmidt', 'hannah.schmidt@kiefer.example', 'Kiefer & Sohn', 'Procurement Lead', 'RISKY', ['dach']],
  ['Daniel', 'Novak', 'daniel@northwind.example', 'Northwind Traders', 'Account Executive', 'NEW', []],
  ['Aisha', 'Bello', 'aisha.bello@greenleaf.example', 'Greenleaf Energy', 'Head of Partnerships', 'VALID', []],
  ['Noah', 'Fischer', 'noah@quantia.example', 'Quantia Labs', 'Engineering Manager', 'INVALID', []],
  ['Elena', 'Petrova', 'elena.petrova@orbit.example', 'Orbit Commerce', 'COO', 'NEW', ['ecommerce']],
] as const;

before(async () => {
  // Workers run matching executions (the ranked accounts come from a rule's stored results).
  con = await startConsole({ workers: true });
  // A fixed address (one database per file): the README shows this page unmasked.
  user = await con.ctx.signup({ email: 'maya.lindqvist@quarry.example', name: 'Maya Lindqvist' });
  const ids = await seedLeads(
    con.ctx.deps.db,
    user.id,
    PEOPLE.map(([firstName, lastName, email, company, jobTitle, status, tags]) => ({
      firstName,
      lastName,
      email,
      company,
      jobTitle,
      status,
      tags: [...tags],
    })),
  );
  PEOPLE.forEach(([first, last], i) => {
    names[`${first} ${last}`] = ids[i]!;
  });
  // A scraped lead: found on a directory page by a job of a source, each field read with a selector.
  const [source] = await con.ctx.deps.db
    .insert(sources)
    .values({
      userId: user.id,
      name: 'Member directory',
      url: 'https://directory.example.org/members',
      scrapeType: 'STATIC',
    })
    .returning();
  const [job] = await con.ctx.deps.db
    .insert(jobs)
    .values({ userId: user.id, sourceId: source!.id, name: 'Member directory run', status: 'COMPLETED' })
    .returning();
  jobId = job!.id;
  scrapedId = newId();
  await con.ctx.deps.db.insert(leads).values({
    id: scrapedId,
    userId: user.id,
    sourceId: source!.id,
    jobId,
    firstName: 'Grace',
    lastName: 'Hopper',
    email: 'grace.hopper@cobol.example',
    company: 'Cobol Systems',
    jobTitle: 'Rear Admiral',
    sourceUrl: 'https://directory.example.org/members?page=3',
    provenance: {
      pageUrl: 'https://directory.example.org/members?page=3',
      selector: '.member .email',
      selectors: {
        firstName: '.member .first',
        lastName: '.member .last',
        email: '.member .email',
        company: '.member .org',
      },
      visible: true,
    },
  });
});
after(async () => con?.close());

test('the leads table: headers, a link per lead, filter by company (in the URL), bulk Add tag that the API sees', async () => {
  const { page, requests, errors } = await con.page(user);
  await page.goto('/leads');
  await page.getByRole('link', { name: 'Elena Petrova' }).waitFor();
  await settled(page);
  for (const name of ['Name', 'Email', 'Company', 'Status', 'Tags', 'Created'])
    await page.getByRole('columnheader', { name, exact: true }).waitFor();
  await page.getByRole('textbox', { name: 'Filter by tag' }).waitFor();
  await assertAccessible(page, 'leads');
  await assertLooksLike(page, 'leads');
  // Accepting a new look also renews the README's picture of this page, unmasked (docs/images/console-leads.png).
  if (process.env.QUARRY_UPDATE_SCREENSHOTS === '1') await page.screenshot({ path: 'docs/images/console-leads.png' });

  // The lead's link goes to its page.
  assert.equal(
    await page.getByRole('link', { name: 'Amara Okafor' }).getAttribute('href'),
    `/leads/${names['Amara Okafor']}`,
  );

  await page.getByRole('textbox', { name: 'Company', exact: true }).fill('northwind traders');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.waitForURL(/company=northwind/);
  await page.getByRole('link', { name: 'Elena Petrova' }).waitFor({ state: 'detached' });
  const rows = page.locator('tbody tr');
  assert.equal(await rows.count(), 3);
  for (const name of ['Daniel Novak', 'Priya Raman', 'Amara Okafor']) await page.getByRole('link', { name }).waitFor();

  await page.getByRole('checkbox', { name: 'Select Daniel Novak' }).check();
  await page.getByRole('checkbox', { name: 'Select Amara Okafor' }).check();
  await page.getByText('2 leads selected').waitFor();
  await page.getByRole('button', { name: 'Add tag' }).click();
  await page.getByRole('textbox', { name: 'Tag', exact: true }).fill('q4-pilot');
  await page.getByRole('button', { name: 'Apply', exact: true }).click();
  await page.getByRole('status').getByText('Tagged 2 leads "q4-pilot".').waitFor();

  // Export: the selection as CSV, through POST /api/leads/export.
  const download = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Export CSV' }).click();
  const file = await download;
  assert.match(file.suggestedFilename(), /^leads-\d{4}-\d\d-\d\d\.csv$/);
  const csv = fs.readFileSync((await file.path())!, 'utf8');
  assert.deepEqual(
    csv
      .trimEnd()
      .split('\r\n')
      .slice(1)
      .map((line) => line.split(',').slice(1, 3).join(' ')),
    ['Daniel Novak', 'Amara Okafor'],
  );

  const tagged = await con.ctx.call(user, 'GET', '/api/leads?tag=q4-pilot');
  assert.deepEqual(
    tagged
      .json()
      .data.leads.map((l: { id: string }) => l.id)
      .sort(),
    [names['Amara Okafor'], names['Daniel Novak']].sort(),
  );

  // The filters are the URL's: a link with ?tag= opens the page filtered (and says so in the filter box).
  await page.goto('/leads?tag=q4-pilot&sort=oldest');
  await page.getByRole('link', { name: 'Daniel Novak' }).waitFor();
  assert.equal(await page.locator('tbody tr').count(), 2);
  assert.equal(await page.getByRole('textbox', { name: 'Filter by tag' }).inputValue(), 'q4-pilot');
  assert.deepEqual(await page.locator('tbody tr td:nth-child(2) a').allInnerTexts(), ['Amara Okafor', 'Daniel Novak']);

  // A job's leads: ?jobId= from a job's page, shown as the Job filter's choice.
  await page.goto(`/leads?jobId=${jobId}`);
  await page.getByRole('link', { name: 'Grace Hopper' }).waitFor();
  assert.equal(await page.locator('tbody tr').count(), 1);
  assert.equal(await page.getByRole('combobox', { name: 'Job' }).inputValue(), jobId);

  // Text search and status, then the status bulk action.
  await page.goto('/leads?q=schmidt');
  await page.getByRole('link', { name: 'Hannah Schmidt' }).waitFor();
  assert.equal(await page.locator('tbody tr').count(), 1);
  await page.getByRole('checkbox', { name: 'Select Hannah Schmidt' }).check();
  await page.getByRole('button', { name: 'Set status' }).click();
  await page.getByRole('combobox', { name: 'New status' }).selectOption('QUALIFIED');
  await page.getByRole('button', { name: 'Apply', exact: true }).click();
  await page.getByRole('status').getByText('Set 1 lead to QUALIFIED.').waitFor();
  const hannah = await con.ctx.call(user, 'GET', `/api/leads/${names['Hannah Schmidt']}`);
  assert.equal(hannah.json().data.lead.status, 'QUALIFIED');

  assert.deepEqual(offMachine(requests), []);
  assert.deepEqual(errors, []);
});

test("a lead's page shows the URL it was found on and the selector of each field; status and tags are edited", async () => {
  const { page, requests, errors } = await con.page(user);
  await page.goto(`/leads/${scrapedId}`);
  await page.getByRole('heading', { name: 'Grace Hopper', level: 1 }).waitFor();
  await settled(page);
  const found = page.getByRole('link', { name: 'https://directory.example.org/members?page=3' });
  assert.equal(await found.getAttribute('href'), 'https://directory.example.org/members?page=3');
  await page.getByRole('cell', { name: '.member .org' }).waitFor();
  await page.getByRole('link', { name: 'Member directory', exact: true }).waitFor();
  await page.getByRole('link', { name: 'Member directory run' }).waitFor();
  await assertAccessible(page, 'lead');
  await assertLooksLike(page, 'lead');

  await page.getByRole('combobox', { name: 'Status' }).selectOption('QUALIFIED');
  await page.getByRole('textbox', { name: 'Tags' }).fill('speaker, navy');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('status').getByText('Saved.').waitFor();
  const lead = (await con.ctx.call(user, 'GET', `/api/leads/${scrapedId}`)).json().data.lead;
  assert.equal(lead.status, 'QUALIFIED');
  assert.deepEqual(lead.tags, ['speaker', 'navy']);
  assert.deepEqual(offMachine(requests), []);
  assert.deepEqual(errors, []);
});

test('qualification: the preview follows the rule as it is written; a saved rule is listed', async () => {
  const typeId = await seedProfileType(
    con.ctx.deps.db,
    user.id,
    [
      { name: 'company', type: 'string', label: 'Company' },
      { name: 'industry', type: 'string', label: 'Industry' },
      { name: 'employees', type: 'integer', label: 'Employees' },
    ],
    'Company profile',
  );
  await seedProfiles(con.ctx.deps.db, user.id, typeId, [
    {
      data: { company: 'Lumen Analytics', industry: 'Software', employees: 120 },
      lead: { firstName: 'Iris', lastName: 'Lund', email: 'iris@lumen.example', company: 'Lumen Analytics' },
    },
    {
      data: { company: 'Harbor Logistics', industry: 'Logistics', employees: 900 },
      lead: { firstName: 'Omar', lastName: 'Haddad', email: 'omar@harbor.example', company: 'Harbor Logistics' },
    },
    {
      data: { company: 'Quantia Labs', industry: 'Software', employees: 45 },
      lead: { firstName: 'Lea', lastName: 'Brun', email: 'lea@quantia.example', company: 'Quantia Labs' },
    },
    {
      data: { company: 'Greenleaf Energy', industry: 'Energy', employees: 300 },
      lead: { firstName: 'Tom', lastName: 'Reed', email: 'tom@greenleaf.example', company: 'Greenleaf Energy' },
    },
  ]);
  const { page, requests, errors } = await con.page(user);
  await page.goto('/qualification');
  await page.getByRole('combobox', { name: 'Field 1' }).selectOption('profile.industry');
  await page.getByRole('textbox', { name: 'Value 1' }).fill('software');
  await page.getByText('2 of 4 profiles match.').waitFor();
  await page.getByRole('combobox', { name: 'Operator 1' }).selectOption('not_contains');
  await page.getByText('2 of 4 profiles match.').waitFor();
  await page.getByRole('button', { name: 'Add condition' }).click();
  await page.getByRole('combobox', { name: 'Field 2' }).selectOption('profile.employees');
  await page.getByRole('combobox', { name: 'Operator 2' }).selectOption('gte');
  await page.getByRole('textbox', { name: 'Value 2' }).fill('500');
  await page.getByText('1 of 4 profiles match.').waitFor();
  await page.getByRole('cell', { name: /Harbor Logistics/ }).waitFor();
  await page.getByRole('textbox', { name: 'Rule name' }).fill('Large non-software');
  await page.getByRole('button', { name: 'Save rule' }).click();
  await page.getByRole('cell', { name: 'Large non-software', exact: true }).waitFor();
  await settled(page);
  await assertAccessible(page, 'qualification');
  await assertLooksLike(page, 'qualification');
  assert.deepEqual(offMachine(requests), []);
  assert.deepEqual(errors, []);
});

test('deal campaigns: the list, and a campaign with its rules and ranked accounts', async () => {
  const rules = (await con.ctx.call(user, 'GET', '/api/matching/rules')).json().data.rules;
  const created = await con.ctx.call(user, 'POST', '/api/campaigns', {
    name: 'Mid-market software',
    description: 'Software companies of 50–500 people in Europe',
    target: { industries: ['Software'], locations: ['Europe'] },
    rules: rules.map((r: { id: string }) => ({ ruleId: r.id, weight: 3 })),
  });
  assert.equal(created.statusCode, 201, created.body);
  const id = created.json().data.campaign.id;
  // The rule's stored results rank the accounts: run it (a worker evaluates it) and wait for the run to end.
  for (const rule of rules) {
    const run = await con.ctx.call(user, 'POST', '/api/matching/execute', { ruleId: rule.id });
    assert.ok([200, 202].includes(run.statusCode), run.body);
    for (let i = 0; ; i++) {
      const status = (await con.ctx.call(user, 'GET', `/api/matching/rules/${rule.id}`)).json().data.rule.lastRun
        ?.status;
      if (status === 'COMPLETED') break;
      assert.ok(i < 300 && status !== 'FAILED', `run ${status}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const { page, requests, errors } = await con.page(user);
  await page.goto('/campaigns');
  await page.getByRole('link', { name: 'Mid-market software' }).click();
  await page.getByRole('heading', { name: 'Mid-market software', level: 1 }).waitFor();
  await page.waitForURL(`**/campaigns/${id}`);
  await page.getByRole('table', { name: 'Accounts, best fit first' }).waitFor();
  // Harbor Logistics is the one account the rule matched: first, with the full fit score.
  assert.match((await page.locator('tbody tr').first().textContent()) ?? '', /Harbor Logistics[\s\S]*100/);
  assert.equal(await page.locator('tbody tr').count(), 4);
  await settled(page);
  await assertAccessible(page, 'campaign');
  await assertLooksLike(page, 'campaign');
  await page.goto('/campaigns');
  await page.getByRole('link', { name: 'Mid-market software' }).waitFor();
  await settled(page);
  await assertAccessible(page, 'campaigns');
  assert.deepEqual(offMachine(requests), []);
  assert.deepEqual(errors, []);
});
