import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { DIRECTORY_SELECTORS, type FixtureSite, startFixtureSite } from '../fixtures/sites.ts';
import { createTestContext, eventually, type TestContext, type TestUser } from '../helpers/app.ts';
import { connectMcp, dataOf, textOf } from '../helpers/mcp-client.ts';

let ctx: TestContext;
let site: FixtureSite;
let base: string;
let alice: TestUser;
let client: Client;

before(async () => {
  // A polite crawl (robots.txt asks one second between pages): the job runs long enough to report progress.
  site = await startFixtureSite({ pages: 4, leadsPerPage: 3, robots: { crawlDelaySecs: 1 } });
  ctx = await createTestContext();
  base = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  alice = await ctx.signup();
  ({ client } = await connectMcp(base, alice.apiKey));
});
after(async () => {
  await client?.close();
  await ctx?.close();
  await site?.close();
});

test('a source made, activated and crawled through the tools; wait_for_job reports progress; the job resource announces changes', async () => {
  const { source } = dataOf<{ source: { id: string; status: string } }>(
    await client.callTool({
      name: 'create_source',
      arguments: {
        name: 'Directory',
        url: `${site.url}directory`,
        scrapeType: 'STATIC',
        selectors: DIRECTORY_SELECTORS,
      },
    }),
  );
  assert.equal(source.status, 'DRAFT');
  dataOf(await client.callTool({ name: 'activate_source', arguments: { id: source.id } }));
  const { job } = dataOf<{ job: { id: string } }>(
    await client.callTool({ name: 'start_job', arguments: { name: 'MCP run', sourceId: source.id } }),
  );

  // The job as a resource, followed over the session's GET stream.
  const uri = `quarry://jobs/${job.id}`;
  const read = await client.readResource({ uri });
  assert.equal(JSON.parse((read.contents[0] as { text: string }).text).job.id, job.id);
  const updates: string[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push(n.params.uri);
  });
  await client.subscribeResource({ uri });

  const progress: Array<{ progress: number; message?: string }> = [];
  const waited = await client.callTool(
    { name: 'wait_for_job', arguments: { id: job.id, timeoutSeconds: 120 } },
    undefined,
    { onprogress: (p) => progress.push(p), timeout: 130_000 },
  );
  const finished = dataOf<{ job: { status: string; leadsFound: number } }>(waited).job;
  assert.equal(finished.status, 'COMPLETED');
  assert.equal(finished.leadsFound, 12);
  assert.ok(progress.length >= 2, `progress notifications: ${JSON.stringify(progress)}`);
  for (let i = 1; i < progress.length; i++) assert.ok(progress[i]!.progress >= progress[i - 1]!.progress);
  assert.match(progress.at(-1)!.message ?? '', /COMPLETED/);
  assert.ok(updates.includes(uri), 'resources/updated for the subscribed job');

  const found = dataOf<{ leads: unknown[] }>(
    await client.callTool({ name: 'search_leads', arguments: { jobId: job.id, limit: 100 } }),
  );
  assert.equal(found.leads.length, 12);
});

test('a job of another user is neither readable nor subscribable', async () => {
  const bob = await ctx.signup();
  const source = (
    await ctx.call(bob, 'POST', '/api/sources', {
      name: 'Bob',
      url: `${site.url}directory`,
      scrapeType: 'STATIC',
      selectors: DIRECTORY_SELECTORS,
    })
  ).json().data.source;
  await ctx.call(bob, 'POST', `/api/sources/${source.id}/activate`);
  const job = (await ctx.call(bob, 'POST', '/api/jobs', { name: 'Bob run', sourceId: source.id })).json().data.job;
  await assert.rejects(client.readResource({ uri: `quarry://jobs/${job.id}` }), /NOT_FOUND/);
  await assert.rejects(client.subscribeResource({ uri: `quarry://jobs/${job.id}` }), /NOT_FOUND/);
  const waited = await client.callTool({ name: 'wait_for_job', arguments: { id: job.id } });
  assert.equal(waited.isError, true);
  assert.match(textOf(waited), /^NOT_FOUND/);
  // Bob's crawl ends before the service stops (a crawl stopped mid-way leaves Crawlee's timers in a test process).
  await eventually(async () => {
    const status = (await ctx.call(bob, 'GET', `/api/jobs/${job.id}`)).json().data.job.status;
    return ['COMPLETED', 'FAILED', 'CANCELLED'].includes(status) || undefined;
  }, 60_000);
});

test('wait_for_job stops with UNAUTHORIZED when its key is revoked during the wait', async () => {
  const made = await ctx.call(alice, 'POST', '/api/api-keys', { name: 'agent', scopes: ['*'] });
  const { key, id: keyId } = made.json().data.apiKey;
  const { client: agent } = await connectMcp(base, key);
  try {
    const { source } = (
      await ctx.call(alice, 'POST', '/api/sources', {
        name: 'Revoked wait',
        url: `${site.url}directory`,
        scrapeType: 'STATIC',
        selectors: DIRECTORY_SELECTORS,
      })
    ).json().data;
    await ctx.call(alice, 'POST', `/api/sources/${source.id}/activate`);
    const job = (await ctx.call(alice, 'POST', '/api/jobs', { name: 'Revoked wait', sourceId: source.id })).json().data
      .job;
    const waiting = agent.callTool({ name: 'wait_for_job', arguments: { id: job.id, timeoutSeconds: 60 } });
    // The crawl takes seconds (robots.txt's delay); the key goes while the tool waits.
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal((await ctx.call(alice, 'DELETE', `/api/api-keys/${keyId}`)).statusCode, 200);
    const waited = await waiting;
    assert.equal(waited.isError, true);
    assert.match(textOf(waited), /^UNAUTHORIZED/);
    await eventually(async () => {
      const status = (await ctx.call(alice, 'GET', `/api/jobs/${job.id}`)).json().data.job.status;
      return ['COMPLETED', 'FAILED', 'CANCELLED'].includes(status) || undefined;
    }, 60_000);
  } finally {
    await agent.close().catch(() => {});
  }
});
