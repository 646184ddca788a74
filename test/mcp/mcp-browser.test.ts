import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startBrowserPages } from '../fixtures/browser-pages.ts';
import type { TestUser } from '../helpers/app.ts';
import { type BrowserTestContext, createBrowserContext } from '../helpers/browser.ts';
import { connectMcp, dataOf, textOf } from '../helpers/mcp-client.ts';

let ctx: BrowserTestContext;
let site: Awaited<ReturnType<typeof startBrowserPages>>;
let alice: TestUser;
const clients: Client[] = [];

before(async () => {
  site = await startBrowserPages();
  ctx = await createBrowserContext();
  alice = await ctx.signup();
});
after(async () => {
  for (const client of clients) await client.close();
  await ctx?.close();
  await site?.close();
});

const connect = async (headers: Record<string, string> = {}) => {
  const { client } = await connectMcp(`http://${ctx.hostPort}`, alice.apiKey, headers);
  clients.push(client);
  return client;
};

test('a browser session driven through the tools: navigate, scrape, markdown, screenshot, release', async () => {
  const client = await connect({ 'x-client-ref': 'tenant-a' });
  const { session } = dataOf<{ session: { id: string; status: string; cdpUrl: string } }>(
    await client.callTool({ name: 'create_browser_session', arguments: {} }),
  );
  assert.equal(session.status, 'LIVE');
  assert.ok(session.cdpUrl.includes(ctx.hostPort), `cdpUrl names the host the client reached: ${session.cdpUrl}`);

  const navigated = dataOf<{ url: string }>(
    await client.callTool({ name: 'browser_navigate', arguments: { id: session.id, url: `${site.url}/list` } }),
  );
  assert.equal(navigated.url, `${site.url}/list`, JSON.stringify(navigated));

  const scraped = dataOf<{ items: Array<{ fields: Record<string, string> }> }>(
    await client.callTool({
      name: 'browser_scrape',
      arguments: { id: session.id, selectors: { item: '.p', name: '.n', email: '.m@href' } },
    }),
  );
  assert.deepEqual(
    scraped.items.map((i) => i.fields.name),
    ['Ada Lovelace', 'Alan Turing'],
  );

  const markdown = dataOf<{ format: string; content: string }>(
    await client.callTool({ name: 'browser_read_markdown', arguments: { id: session.id } }),
  );
  assert.equal(markdown.format, 'markdown');
  assert.match(markdown.content, /# Team/);
  assert.match(markdown.content, /\*\*bold\*\*/);

  const shot = await client.callTool({ name: 'browser_screenshot', arguments: { id: session.id } });
  assert.equal(shot.isError, undefined, textOf(shot));
  const image = (shot.content as Array<{ type: string; data: string; mimeType: string }>)[0]!;
  assert.equal(image.type, 'image');
  assert.equal(image.mimeType, 'image/png');
  assert.deepEqual([...Buffer.from(image.data, 'base64').subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);

  // X-Client-Ref holds for tools as for routes: another ref's session does not exist for this client.
  const otherTenant = await connect({ 'x-client-ref': 'tenant-b' });
  const hidden = await otherTenant.callTool({ name: 'browser_navigate', arguments: { id: session.id, url: site.url } });
  assert.equal(hidden.isError, true);
  assert.match(textOf(hidden), /^NOT_FOUND/);

  dataOf(await client.callTool({ name: 'release_browser_session', arguments: { id: session.id } }));
  const after = await client.callTool({ name: 'browser_navigate', arguments: { id: session.id, url: site.url } });
  assert.equal(after.isError, true);
});
