import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import {
  assertAccessible,
  assertLooksLike,
  type ConsoleContext,
  offMachine,
  settled,
  startConsole,
} from '../helpers/console.ts';

/**
 * A loopback team directory: two pages of people (first and last name apart, a mailto email, the company), the
 * second answered after a pause so the job is seen running. Names are fixed so screenshots are stable.
 */
const PEOPLE = [
  ['Grace', 'Hopper', 'grace.hopper@example.com', 'Cobol Works'],
  ['Alan', 'Turing', 'alan.turing@example.com', 'Bletchley Labs'],
  ['Katherine', 'Johnson', 'katherine.johnson@example.com', 'Orbit Analytics'],
  ['Edsger', 'Dijkstra', 'edsger.dijkstra@example.com', 'Shortest Path BV'],
  ['Barbara', 'Liskov', 'barbara.liskov@example.com', 'Substitution Inc'],
  ['Donald', 'Knuth', 'donald.knuth@example.com', 'Literate Press'],
] as const;
const PER_PAGE = 3;
const SECOND_PAGE_DELAY_MS = 1500;

function teamPage(page: number): string {
  const people = PEOPLE.slice((page - 1) * PER_PAGE, page * PER_PAGE)
    .map(
      ([first, last, email, company]) =>
        `<li class="person"><span class="first">${first}</span> <span class="last">${last}</span>` +
        `<a class="email" href="mailto:${email}">${email}</a><span class="company">${company}</span></li>`,
    )
    .join('');
  const next = page * PER_PAGE < PEOPLE.length ? `<a class="next" href="/team?page=${page + 1}">Next</a>` : '';
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Our team</title></head><body>' +
    `<h1>Our team, page ${page}</h1><ul>${people}</ul>${next}</body></html>`
  );
}

let con: ConsoleContext;
let site: http.Server;
let siteUrl: string;
before(async () => {
  site = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fixture.invalid');
    if (url.pathname !== '/team') return res.writeHead(404, { 'content-type': 'text/plain' }).end('not here');
    const page = Number(url.searchParams.get('page') ?? 1);
    const answer = () => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(teamPage(page));
    if (page > 1) setTimeout(answer, SECOND_PAGE_DELAY_MS);
    else answer();
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  // Workers run here: the job is picked up and crawled by this process.
  con = await startConsole();
});
after(async () => {
  await con?.close();
  await new Promise((resolve) => site?.close(resolve));
});

test('project → source by hand with the selector tester → activate → run a job with live progress → its leads', async () => {
  const user = await con.ctx.signup();
  const { page, requests, errors } = await con.page(user);

  // Projects: "New project" → "Name" → "Create" opens the project's page.
  await page.goto('/projects');
  await settled(page);
  await page.getByRole('button', { name: 'New project' }).click();
  await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Computing pioneers');
  await page.getByRole('button', { name: 'Create', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Computing pioneers' }).waitFor();
  const projectId = new URL(page.url()).pathname.split('/').pop()!;

  await page.goto('/projects');
  await page.getByRole('link', { name: 'Computing pioneers' }).waitFor();
  await settled(page);
  await assertAccessible(page, 'projects');
  await assertLooksLike(page, 'projects');
  await page.getByRole('link', { name: 'Computing pioneers' }).click();

  // New source, by hand, from the loopback directory.
  await page.getByRole('link', { name: 'New source' }).click();
  await page.waitForURL(`**/sources/new?projectId=${projectId}`);
  await page.getByRole('button', { name: 'By hand' }).click();
  await settled(page);
  assert.equal(await page.getByRole('combobox', { name: 'Project' }).inputValue(), projectId);
  await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Pioneers team page');
  await page.getByRole('combobox', { name: 'Scrape type' }).selectOption({ label: 'Static' });
  const selectors: Record<string, string> = {
    Item: '.person',
    'First name': '.first',
    'Last name': '.last',
    Email: 'a.email@href',
    Company: '.company',
    'Next page': 'a.next@href',
  };
  for (const [name, selector] of Object.entries(selectors))
    await page.getByRole('textbox', { name, exact: true }).fill(selector);
  await assertAccessible(page, 'source-new');
  await page.evaluate('document.activeElement?.blur(); window.scrollTo(0, 0)');
  await assertLooksLike(page, 'source-new');
  // The URL (its port changes every run) after the screenshot.
  await page.getByRole('textbox', { name: 'URL', exact: true }).fill(`${siteUrl}/team`);

  // The tester shows what each selector finds on the page at the URL.
  await page.getByRole('button', { name: 'Test selectors' }).click();
  const matches = page.getByRole('table', { name: 'Matches per selector' });
  await matches.waitFor();
  await page.getByText('Found 3 items on').waitFor();
  const rows = await matches.locator('tbody tr').allInnerTexts();
  const row = (label: string) => rows.find((r) => r.startsWith(`${label}\t`))?.split('\t');
  assert.deepEqual(row('Email'), [
    'Email',
    'a.email@href',
    '3',
    'grace.hopper@example.com, alan.turing@example.com, katherine.johnson@example.com',
  ]);
  assert.equal(row('Item')?.[2], '3');
  assert.equal(row('Company')?.[3], 'Cobol Works, Bletchley Labs, Orbit Analytics');
  await page
    .getByRole('table', { name: 'The first 3 items' })
    .getByRole('cell', { name: 'Grace', exact: true })
    .waitFor();
  await assertAccessible(page, 'source-new tested');
  await page.getByRole('heading', { name: 'What the selectors find' }).scrollIntoViewIfNeeded();
  await assertLooksLike(page, 'source-new-tested');

  // Create: the draft's page offers "Activate", then "Run job".
  await page.getByRole('button', { name: 'Create source' }).click();
  await page.getByRole('heading', { level: 1, name: 'Pioneers team page' }).waitFor();
  const sourceId = new URL(page.url()).pathname.split('/').pop()!;
  await page.getByRole('button', { name: 'Activate' }).click();
  await page.getByRole('button', { name: 'Run job' }).waitFor();
  await settled(page);
  await assertAccessible(page, 'source');
  await assertLooksLike(page, 'source');
  const source = (await con.ctx.call(user, 'GET', `/api/sources/${sourceId}`)).json().data.source;
  assert.equal(source.status, 'ACTIVE');
  assert.equal(source.projectId, projectId);
  assert.deepEqual(source.selectors, {
    item: '.person',
    firstName: '.first',
    lastName: '.last',
    email: 'a.email@href',
    company: '.company',
    nextPage: 'a.next@href',
  });

  // Run job: the job's page follows its event stream; the progress bar reaches 100 without a reload.
  await page.getByRole('button', { name: 'Run job' }).click();
  await page.waitForURL('**/jobs/*');
  const jobId = new URL(page.url()).pathname.split('/').pop()!;
  await page.evaluate('window.__sameDocument = true');
  const bar = page.getByRole('progressbar', { name: 'Progress' });
  await bar.waitFor();
  // Read the bar as the stream moves it (no reload: the same document throughout) until it says 100 and COMPLETED.
  const seen: string[] = [];
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = (await bar.getAttribute('value')) ?? '';
    if (seen.at(-1) !== value) seen.push(value);
    if (value === '100' && (await page.getByText('COMPLETED', { exact: true }).count()) > 0) break;
    assert.ok(Date.now() < deadline, `the progress bar stopped at ${seen.join(' → ')}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // The second page answers after a pause: the bar was seen below 100 first, then moved without a reload.
  assert.ok(seen.length > 1 && Number(seen[0]) < 100, `progress seen: ${seen.join(' → ')}`);
  assert.equal(await bar.getAttribute('value'), '100');
  assert.equal(await page.evaluate('window.__sameDocument'), true, 'the page was not reloaded');
  assert.ok(
    requests.some((url) => url.endsWith(`/api/jobs/${jobId}/events`)),
    'the page followed the job event stream',
  );
  await settled(page);
  const stat = (label: string) => page.locator('.stat', { hasText: label }).locator('.value');
  assert.equal(await stat('Leads found').textContent(), '6');
  assert.equal(await stat('Pages visited').textContent(), '2');
  await assertAccessible(page, 'job');
  await assertLooksLike(page, 'job');
  const leadsLink = page.getByRole('link', { name: 'Leads found by this job' });
  assert.equal(await leadsLink.getAttribute('href'), `/leads?jobId=${jobId}`);

  // The leads it found, through the API.
  const leads = (await con.ctx.call(user, 'GET', `/api/leads?jobId=${jobId}&limit=50`)).json().data.leads;
  assert.deepEqual(leads.map((l: { email: string }) => l.email).sort(), PEOPLE.map((p) => p[2]).sort());
  const grace = leads.find((l: { email: string }) => l.email === 'grace.hopper@example.com');
  assert.equal(grace.firstName, 'Grace');
  assert.equal(grace.lastName, 'Hopper');
  assert.equal(grace.company, 'Cobol Works');

  // The jobs list and the source's jobs show it.
  await page.goto('/jobs');
  await page.getByRole('link', { name: 'Pioneers team page: manual run' }).waitFor();
  await settled(page);
  await assertAccessible(page, 'jobs');
  await assertLooksLike(page, 'jobs');
  await page.goto(`/sources/${sourceId}`);
  await page.getByRole('table', { name: 'Jobs of this source' }).getByRole('cell', { name: 'COMPLETED' }).waitFor();
  await page.getByRole('link', { name: 'Computing pioneers' }).click();
  await page.getByRole('table', { name: 'Sources of this project' }).getByRole('cell', { name: 'ACTIVE' }).waitFor();
  await settled(page);
  await assertAccessible(page, 'project');
  await assertLooksLike(page, 'project');

  assert.deepEqual(offMachine(requests), []);
  assert.deepEqual(errors, []);
});

test('the selector tester names what is wrong: a selector that does not parse, a page that is not there', async () => {
  const user = await con.ctx.signup();
  const { page, requests, errors } = await con.page(user);
  await page.goto('/sources/new');
  await settled(page);
  await page.getByRole('textbox', { name: 'URL', exact: true }).fill(`${siteUrl}/nowhere`);
  await page.getByRole('textbox', { name: 'Item', exact: true }).fill('.person');
  await page.getByRole('button', { name: 'Test selectors' }).click();
  await page
    .getByRole('alert')
    .getByText(/HTTP 404/)
    .first()
    .waitFor();
  await page.getByRole('textbox', { name: 'Email', exact: true }).fill('a[[');
  await page.getByRole('button', { name: 'Test selectors' }).click();
  await page.getByRole('alert').getByText('selectors.email').first().waitFor();
  // Without a project the source is created outside any project; a missing name is named by the service.
  await page.getByRole('button', { name: 'Create source' }).click();
  await page.getByRole('alert').getByText('name', { exact: true }).first().waitFor();
  assert.deepEqual(offMachine(requests), []);
  assert.deepEqual(errors, []);
});

test('the other ways to make a source: a catalogue suggestion fills the form; a template makes the source', async () => {
  const user = await con.ctx.signup();
  const { page, requests, errors } = await con.page(user);
  await page.goto('/sources/new');
  await settled(page);

  // From the catalogue (rule-based here: no AI provider): "Use" copies the suggestion into the form by hand.
  await page.getByRole('button', { name: 'From the catalogue' }).click();
  await page.getByRole('searchbox', { name: 'What to find' }).fill('dentists in Austin');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  const suggested = page.getByRole('table', { name: 'Suggested sources' });
  await suggested.waitFor();
  await assertAccessible(page, 'source-new catalogue');
  const first = suggested.locator('tbody tr').first();
  const name = (await first.locator('td').first().textContent()) ?? '';
  assert.ok(name.length > 0);
  await first.getByRole('button', { name: /^Use / }).click();
  assert.equal(await page.getByRole('button', { name: 'By hand' }).getAttribute('aria-pressed'), 'true');
  assert.equal(await page.getByRole('textbox', { name: 'Name', exact: true }).inputValue(), name);
  assert.match(await page.getByRole('textbox', { name: 'URL', exact: true }).inputValue(), /^https:\/\//);

  // From a template: its variables, then "Create source" opens the new draft.
  await page.getByRole('button', { name: 'From a template' }).click();
  const template = page.getByRole('combobox', { name: 'Template' });
  await template.waitFor();
  await template.selectOption('builtin:avvo');
  await page.getByRole('textbox', { name: 'query', exact: true }).fill('patent lawyer');
  await assertAccessible(page, 'source-new template');
  await page.getByRole('button', { name: 'Create source' }).click();
  await page.getByRole('heading', { level: 1, name: 'Avvo lawyer directory' }).waitFor();
  await page.getByRole('button', { name: 'Activate' }).waitFor();
  const sourceId = new URL(page.url()).pathname.split('/').pop()!;
  const source = (await con.ctx.call(user, 'GET', `/api/sources/${sourceId}`)).json().data.source;
  assert.equal(source.templateId, 'builtin:avvo');
  assert.equal(source.status, 'DRAFT');
  assert.match(source.url, /q=patent%20lawyer|q=patent\+lawyer/);

  assert.deepEqual(offMachine(requests), []);
  assert.deepEqual(errors, []);
});
