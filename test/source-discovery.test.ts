import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { aiUsage } from '../src/db/schema/index.ts';
import { createAiTwoUserContext } from './helpers/ai-context.ts';
import { createTwoUserContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';
import { type OpenAiStub, promptText } from './helpers/openai-stub.ts';
import type { SearchStub } from './helpers/search-stub.ts';

/** A minimal valid PDF (one page, Helvetica, one text line per entry), built by hand with a correct xref table. */
function minimalPdf(lines: string[]): Buffer {
  const esc = (s: string) => s.replace(/[\\()]/g, (c) => `\\${c}`);
  const stream = `BT /F1 12 Tf 72 720 Td 14 TL ${lines.map((l) => `(${esc(l)}) Tj T*`).join(' ')} ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>',
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    `<< /Length ${Buffer.byteLength(stream)} >>\nstream\n${stream}\nendstream`,
  ];
  let out = '%PDF-1.4\n';
  const offsets = objects.map(
    (o, i) => [Buffer.byteLength(out), (out += `${i + 1} 0 obj\n${o}\nendobj\n`)][0] as number,
  );
  const xref = Buffer.byteLength(out);
  const entries = offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${entries}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

type Part = { name: string; value: string } | { name: string; filename: string; type: string; data: Buffer };

/** A multipart/form-data body, as a browser or curl -F sends it. */
function multipart(parts: Part[]) {
  const boundary = `----quarry${Math.random().toString(16).slice(2)}`;
  const chunks = parts.flatMap((p) => [
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"` +
        `${'filename' in p ? `; filename="${p.filename}"\r\nContent-Type: ${p.type}` : ''}\r\n\r\n`,
    ),
    'data' in p ? p.data : Buffer.from(p.value),
    Buffer.from('\r\n'),
  ]);
  return {
    payload: Buffer.concat([...chunks, Buffer.from(`--${boundary}--\r\n`)]),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  };
}

const pdf = minimalPdf([
  'Brief: practice-management software for dentists.',
  'Target audience: dental practice owners',
  'We are based in Austin, Texas and sell to dental clinics.',
  'Dentists lose hours to scheduling; our dental software fixes that.',
]);

/** Loopback fixture site for analyze by URL: the script, style and noscript hold a decoy location. */
const pages: Record<string, [string, string | Buffer]> = {
  '/brief.html': [
    'text/html; charset=utf-8',
    `<html><head><title>Solar installers</title><style>.x{content:"Location: Tokyo"}</style>` +
      `<script>var s = "Location: Tokyo";</script></head>` +
      `<body><h1>Solar leads</h1><p>Target audience: residential solar installers</p>` +
      `<p>We are headquartered in Denver, Colorado.</p>` +
      `<p>Solar energy and renewable power for homes.</p><noscript>Location: Tokyo</noscript></body></html>`,
  ],
  '/brief.pdf': ['application/pdf', pdf],
};
let site: http.Server;
let siteUrl: string;
before(async () => {
  site = http.createServer((req, res) => {
    const page = pages[req.url ?? ''];
    res.writeHead(page ? 200 : 404, { 'content-type': page?.[0] ?? 'text/plain' }).end(page?.[1] ?? 'not here');
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((resolve) => site.close(() => resolve())));

/** POST /api/sources/analyze as multipart/form-data. */
function analyzeForm(ctx: TestContext, user: TestUser, parts: Part[]) {
  const { payload, headers } = multipart(parts);
  return ctx.inject({ method: 'POST', url: '/api/sources/analyze', payload, headers: { ...headers, ...user.headers } });
}
const pdfPart = (data = pdf, filename = 'brief.pdf'): Part => ({
  name: 'file',
  filename,
  type: 'application/pdf',
  data,
});

async function createProject(ctx: TestContext, user: TestUser) {
  const res = await ctx.call(user, 'POST', '/api/projects', { name: 'Dental' });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.project.id as string;
}

const RULE_BASED = /rule-based suggestion from Quarry's built-in catalogue.*no AI provider is configured/i;

describe('without an AI provider (built-in catalogue)', () => {
  let ctx: TestContext;
  let alice: TestUser;
  let bob: TestUser;
  before(async () => ({ ctx, alice, bob } = await createTwoUserContext({ workers: false })));
  after(async () => ctx?.close());

  test('discover: count honoured, fields present, reasoning says rule-based and why it matched', async () => {
    const res = await ctx.call(alice, 'POST', '/api/sources/discover', { query: 'dentists in Austin, Texas' });
    assert.equal(res.statusCode, 200, res.body);
    const { sources, method } = res.json().data;
    assert.equal(method, 'catalogue');
    assert.equal(sources.length, 5);
    for (const s of sources) {
      assert.match(s.reasoning, RULE_BASED);
      assert.ok(['STATIC', 'DYNAMIC', 'API'].includes(s.scrapeType));
      assert.ok(Number.isInteger(s.estimatedLeads) && s.estimatedLeads > 0);
      assert.ok(s.name && s.category && s.description);
      assert.match(new URL(s.url).protocol, /^https:$/);
    }
    const npi = sources[0];
    assert.equal(npi.name, 'NPPES NPI Registry (US healthcare providers)');
    assert.match(npi.reasoning, /"dentists"/);
    assert.equal(new URL(npi.url).searchParams.get('taxonomy_description'), 'dentists');
    const yelp = sources.find((s: { url: string }) => s.url.startsWith('https://www.yelp.com/'));
    assert.ok(yelp, 'Yelp lists dentists too');
    assert.equal(new URL(yelp.url).searchParams.get('find_desc'), 'dentists in Austin, Texas');

    for (const count of [1, 10]) {
      const n = await ctx.call(alice, 'POST', '/api/sources/discover', { query: 'plumbers', count });
      assert.equal(n.json().data.sources.length, count);
    }
  });

  test('discover: a query nothing matches still answers general directories, saying so', async () => {
    const res = await ctx.call(alice, 'POST', '/api/sources/discover', { query: 'zzqx wibble', count: 3 });
    const { sources } = res.json().data;
    assert.equal(sources.length, 3);
    for (const s of sources) assert.match(s.reasoning, /No word of the query matched a more specific directory kind/);
  });

  const badDiscover: Array<[string, unknown, string]> = [
    ['query missing', { count: 2 }, 'query'],
    ['query too short', { query: 'ab' }, 'query'],
    ['query blank', { query: '     ' }, 'query'],
    ['query not a string', { query: 42 }, 'query'],
    ['count 0', { query: 'dentists', count: 0 }, 'count'],
    ['count 11', { query: 'dentists', count: 11 }, 'count'],
    ['count fractional', { query: 'dentists', count: 2.5 }, 'count'],
    ['count a string', { query: 'dentists', count: 'five' }, 'count'],
  ];
  for (const [name, body, field] of badDiscover) {
    test(`discover 400 naming ${field}: ${name}`, async () =>
      assertValidation(await ctx.call(alice, 'POST', '/api/sources/discover', body), field));
  }

  test('auth: no key 401; a key without sources:write 403', async () => {
    assertError(await ctx.call(undefined, 'POST', '/api/sources/discover', { query: 'dentists' }), 401, 'UNAUTHORIZED');
    const minted = await ctx.call(alice, 'POST', '/api/api-keys', { name: 'read-only', scopes: ['sources:read'] });
    assert.equal(minted.statusCode, 201, minted.body);
    const headers = { authorization: `Bearer ${minted.json().data.apiKey.key}` };
    for (const path of ['discover', 'generate', 'analyze']) {
      assertError(
        await ctx.inject({ method: 'POST', url: `/api/sources/${path}`, headers, payload: {} }),
        403,
        'INSUFFICIENT_SCOPE',
      );
    }
  });

  test('generate: default count 3, catalogue API entries carry selectors, nothing saved without autoSave', async () => {
    const res = await ctx.call(alice, 'POST', '/api/sources/generate', {
      projectDescription: 'Practice-management software for dental clinics',
      targetAudience: 'dentists',
      location: 'Texas',
    });
    assert.equal(res.statusCode, 200, res.body);
    const { sources, method } = res.json().data;
    assert.equal(method, 'catalogue');
    assert.equal(sources.length, 3);
    assert.equal(sources[0].name, 'NPPES NPI Registry (US healthcare providers)');
    assert.equal(sources[0].scrapeType, 'API');
    assert.equal(sources[0].selectors.item, '$.results[*]');
    for (const s of sources) {
      assert.equal(s.id, undefined);
      assert.match(s.reasoning, RULE_BASED);
    }
    const list = await ctx.call(alice, 'GET', '/api/sources');
    assert.equal(list.json().data.sources.length, 0);
  });

  test('generate with autoSave saves DRAFT sources into the project', async () => {
    const projectId = await createProject(ctx, alice);
    const res = await ctx.call(alice, 'POST', '/api/sources/generate', {
      projectDescription: 'Practice-management software for dental clinics in Texas',
      industry: 'healthcare',
      count: 2,
      autoSave: true,
      projectId,
    });
    assert.equal(res.statusCode, 200, res.body);
    const { sources } = res.json().data;
    assert.equal(sources.length, 2);
    for (const s of sources) {
      assert.equal(s.status, 'DRAFT');
      const saved = await ctx.call(alice, 'GET', `/api/sources/${s.id}`);
      assert.equal(saved.statusCode, 200, saved.body);
      const source = saved.json().data.source;
      assert.deepEqual(
        [source.name, source.url, source.scrapeType, source.status, source.projectId],
        [s.name, s.url, s.scrapeType, 'DRAFT', projectId],
      );
      assert.equal(source.reasoning, s.reasoning);
      assert.deepEqual(source.selectors, s.selectors ?? {});
    }
    const inProject = await ctx.call(alice, 'GET', `/api/sources?projectId=${projectId}`);
    assert.deepEqual(
      inProject
        .json()
        .data.sources.map((s: { id: string }) => s.id)
        .sort(),
      sources.map((s: { id: string }) => s.id).sort(),
    );
    assertError(await ctx.call(bob, 'GET', `/api/sources/${sources[0].id}`), 404, 'NOT_FOUND');
  });

  test("generate: another user's, an unknown or a malformed projectId is a 404 naming projectId", async () => {
    const bobs = await createProject(ctx, bob);
    for (const projectId of [bobs, '0190a8a0-0000-7000-8000-000000000000', 'not-a-uuid']) {
      const res = await ctx.call(alice, 'POST', '/api/sources/generate', {
        projectDescription: 'Software for dental clinics',
        autoSave: true,
        projectId,
      });
      assertError(res, 404, 'NOT_FOUND');
      assert.equal(res.json().error.details[0].field, 'projectId');
    }
  });

  const badGenerate: Array<[string, unknown, string]> = [
    ['projectDescription missing', { count: 2 }, 'projectDescription'],
    ['projectDescription too short', { projectDescription: 'too short' }, 'projectDescription'],
    ['count 6', { projectDescription: 'Software for dental clinics', count: 6 }, 'count'],
    ['count 0', { projectDescription: 'Software for dental clinics', count: 0 }, 'count'],
    ['autoSave not boolean', { projectDescription: 'Software for dental clinics', autoSave: 'yes' }, 'autoSave'],
    ['industry not a string', { projectDescription: 'Software for dental clinics', industry: ['x'] }, 'industry'],
  ];
  for (const [name, body, field] of badGenerate) {
    test(`generate 400 naming ${field}: ${name}`, async () =>
      assertValidation(await ctx.call(alice, 'POST', '/api/sources/generate', body), field));
  }

  test('analyze a PDF upload: heuristic requirements, labelled, and catalogue sources', async () => {
    const res = await analyzeForm(ctx, alice, [pdfPart()]);
    assert.equal(res.statusCode, 200, res.body);
    const { requirements, method } = res.json().data;
    assert.equal(method, 'heuristic');
    assert.equal(requirements.targetAudience, 'dental practice owners');
    assert.equal(requirements.industry, 'Healthcare');
    assert.equal(requirements.location, 'Austin, Texas');
    assert.match(requirements.reasoning, /^Heuristic extraction with keyword rules \(no AI provider is configured\)/);
    assert.equal(requirements.suggestedSources.length, 5);
    assert.equal(requirements.suggestedSources[0].name, 'NPPES NPI Registry (US healthcare providers)');
    for (const s of requirements.suggestedSources) assert.match(s.reasoning, RULE_BASED);
  });

  test('analyze a URL (JSON or multipart field): visible text only, scripts and styles ignored', async () => {
    const viaJson = await ctx.call(alice, 'POST', '/api/sources/analyze', { url: `${siteUrl}/brief.html` });
    assert.equal(viaJson.statusCode, 200, viaJson.body);
    const { requirements } = viaJson.json().data;
    assert.equal(requirements.targetAudience, 'residential solar installers');
    assert.equal(requirements.location, 'Denver, Colorado');
    assert.equal(requirements.industry, 'Energy');
    const viaForm = await analyzeForm(ctx, alice, [{ name: 'url', value: `${siteUrl}/brief.html` }]);
    assert.equal(viaForm.statusCode, 200, viaForm.body);
    assert.deepEqual(viaForm.json().data.requirements, requirements);
    const pdfByUrl = await ctx.call(alice, 'POST', '/api/sources/analyze', { url: `${siteUrl}/brief.pdf` });
    assert.equal(pdfByUrl.json().data.requirements.location, 'Austin, Texas');
  });

  test('analyze: neither or both of file and url is a 400 naming both', async () => {
    for (const res of [
      await ctx.call(alice, 'POST', '/api/sources/analyze', {}),
      await analyzeForm(ctx, alice, [{ name: 'note', value: 'hello' }]),
      await analyzeForm(ctx, alice, [{ name: 'url', value: `${siteUrl}/brief.html` }, pdfPart()]),
    ]) {
      assertValidation(res, 'file');
      assertValidation(res, 'url');
    }
  });

  test('analyze: a file that is not a PDF, or two files, is a 400 naming file; over 10 MB is 413', async () => {
    assertValidation(
      await analyzeForm(ctx, alice, [
        { name: 'file', filename: 'notes.txt', type: 'text/plain', data: Buffer.from('Target audience: dentists') },
      ]),
      'file',
    );
    assertValidation(await analyzeForm(ctx, alice, [pdfPart(Buffer.from('%PDF-1.4 nothing else'))]), 'file');
    assertValidation(await analyzeForm(ctx, alice, [pdfPart(), pdfPart(pdf, 'second.pdf')]), 'file');
    const res = await analyzeForm(ctx, alice, [pdfPart(Buffer.concat([pdf, Buffer.alloc(10 * 1024 * 1024)]))]);
    assertError(res, 413, 'PAYLOAD_TOO_LARGE');
    assert.equal(res.json().error.details[0].field, 'file');
  });

  test('analyze: a bad, failing or unreachable URL is a 400 naming url', async () => {
    for (const url of [
      'not a url',
      'ftp://example.org/brief.pdf',
      `${siteUrl}/missing`,
      'http://127.0.0.1:9/brief.html',
      5,
      `https://x.test/${'a'.repeat(2048)}`,
    ]) {
      assertValidation(await ctx.call(alice, 'POST', '/api/sources/analyze', { url }), 'url');
    }
    assertValidation(await ctx.call(alice, 'POST', '/api/sources/analyze', { file: 'JVBERi0xLjQ=' }), 'file');
  });
});

describe('with ALLOW_PRIVATE_NETWORK=false', () => {
  let ctx: TestContext;
  let alice: TestUser;
  before(
    async () =>
      ({ ctx, alice } = await createTwoUserContext({ workers: false, env: { ALLOW_PRIVATE_NETWORK: 'false' } })),
  );
  after(async () => ctx?.close());

  test('analyze refuses a loopback URL: 400 naming url with the guard message', async () => {
    const res = await ctx.call(alice, 'POST', '/api/sources/analyze', { url: `${siteUrl}/brief.html` });
    assertValidation(res, 'url');
    assert.match(res.json().error.details[0].message, /Refused to connect to 127\.0\.0\.1.*loopback/);
  });
});

describe('with the AI provider (loopback OpenAI stub) and web search (loopback Brave stub)', () => {
  let ctx: TestContext;
  let alice: TestUser;
  let bob: TestUser;
  let ai: OpenAiStub;
  let search: SearchStub;
  let close: () => Promise<void>;
  before(
    async () =>
      ({ ctx, alice, bob, ai, search, close } = await createAiTwoUserContext({ apiKey: 'sk-discovery', search: true })),
  );
  after(async () => close?.());

  const pick = (result: number, extra: Record<string, unknown> = {}) => ({
    result,
    name: `Pick ${result}`,
    category: 'association',
    estimatedLeads: 120.4,
    scrapeType: 'STATIC',
    description: 'A member directory',
    reasoning: 'Lists many members',
    ...extra,
  });

  test('discover: the model chooses among search results; URLs come from search only, usage recorded', async () => {
    ai.reset();
    search.respond(() => [
      {
        title: 'Texas Dental Association members',
        url: 'https://tda.example.org/members',
        description: 'Member directory',
      },
      { title: 'Austin dentists list', url: 'https://austin.example.com/dentists' },
    ]);
    // Result 2 twice, a result that does not exist, and a URL the model made up: only real results survive.
    ai.enqueue({
      json: { sources: [pick(2, { url: 'https://invented.example/' }), pick(2), pick(7), pick(1)] },
      usage: { prompt_tokens: 300, completion_tokens: 80 },
    });
    const res = await ctx.call(alice, 'POST', '/api/sources/discover', { query: 'dentists in Austin', count: 3 });
    assert.equal(res.statusCode, 200, res.body);
    const { sources, method } = res.json().data;
    assert.equal(method, 'ai+search');
    assert.deepEqual(
      sources.map((s: { url: string }) => s.url),
      ['https://austin.example.com/dentists', 'https://tda.example.org/members'],
    );
    assert.equal(sources[0].estimatedLeads, 120);
    assert.equal(sources[0].reasoning, 'Lists many members');
    assert.match(search.requests.at(-1)!.q, /^dentists in Austin/);
    assert.match(promptText(ai.requests[0]!), /https:\/\/tda\.example\.org\/members/);
    assert.equal(ai.requests[0]!.body.response_format.type, 'json_schema');
    const rows = await ctx.deps.db
      .select()
      .from(aiUsage)
      .where(and(eq(aiUsage.userId, alice.id), eq(aiUsage.feature, 'sources.discover')));
    assert.deepEqual(
      rows.map((r) => r.totalTokens),
      [380],
    );
  });

  test('discover: no search results (or search down) → the model proposes URLs; invalid ones are dropped', async () => {
    search.respond(() => []);
    for (const failSearch of [false, true]) {
      ai.reset();
      if (failSearch) search.fail(500);
      const proposal = (url: string) => ({
        name: 'X',
        url,
        category: 'registry',
        estimatedLeads: 10,
        scrapeType: 'API',
        description: 'd',
        reasoning: 'r',
      });
      ai.enqueue({
        json: {
          sources: [
            proposal('javascript:alert(1)'),
            proposal('not a url'),
            proposal('https://registry.example.gov/search?q=dentists'),
          ],
        },
      });
      const res = await ctx.call(alice, 'POST', '/api/sources/discover', { query: 'dentists in Austin' });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().data.method, 'ai');
      assert.deepEqual(
        res.json().data.sources.map((s: { url: string }) => s.url),
        ['https://registry.example.gov/search?q=dentists'],
      );
    }
  });

  test('generate with autoSave: AI sources saved as DRAFT in the project', async () => {
    ai.reset();
    search.respond(() => [{ title: 'Solar installers directory', url: 'https://solar.example.org/directory' }]);
    ai.enqueue({ json: { sources: [pick(1, { scrapeType: 'DYNAMIC', reasoning: 'Directory of installers' })] } });
    const projectId = await createProject(ctx, alice);
    const res = await ctx.call(alice, 'POST', '/api/sources/generate', {
      projectDescription: 'Inverters for residential solar installers',
      location: 'Colorado',
      autoSave: true,
      projectId,
    });
    assert.equal(res.statusCode, 200, res.body);
    const [generated] = res.json().data.sources;
    assert.equal(generated.url, 'https://solar.example.org/directory');
    assert.match(promptText(ai.requests[0]!), /Inverters for residential solar installers[\s\S]*Colorado/);
    const saved = (await ctx.call(alice, 'GET', `/api/sources/${generated.id}`)).json().data.source;
    assert.deepEqual(
      [saved.status, saved.projectId, saved.scrapeType, saved.reasoning, saved.url],
      ['DRAFT', projectId, 'DYNAMIC', 'Directory of installers', generated.url],
    );
  });

  test("generate: another user's projectId is a 404 before any AI call", async () => {
    ai.reset();
    const bobs = await createProject(ctx, bob);
    const res = await ctx.call(alice, 'POST', '/api/sources/generate', {
      projectDescription: 'Inverters for solar installers',
      projectId: bobs,
    });
    assertError(res, 404, 'NOT_FOUND');
    assert.equal(res.json().error.details[0].field, 'projectId');
    assert.equal(ai.requests.length, 0);
  });

  test('analyze a PDF: the model reads the text, then chooses sources among search results', async () => {
    ai.reset();
    search.respond(() => [{ title: 'TX dentists', url: 'https://tx.example.org/dentists' }]);
    ai.enqueue(
      {
        json: {
          targetAudience: 'Dental practice owners',
          industry: 'Dental care',
          location: 'Austin, TX',
          searchQuery: 'Austin dentist directory',
        },
      },
      { json: { sources: [pick(1)] } },
    );
    const res = await analyzeForm(ctx, alice, [pdfPart()]);
    assert.equal(res.statusCode, 200, res.body);
    const { requirements, method } = res.json().data;
    assert.equal(method, 'ai+search');
    assert.deepEqual(
      [requirements.targetAudience, requirements.industry, requirements.location],
      ['Dental practice owners', 'Dental care', 'Austin, TX'],
    );
    assert.deepEqual(
      requirements.suggestedSources.map((s: { url: string }) => s.url),
      ['https://tx.example.org/dentists'],
    );
    assert.match(promptText(ai.requests[0]!), /Target audience: dental practice owners/);
    assert.equal(search.requests.at(-1)!.q, 'Austin dentist directory');
  });

  test('a failing provider is 502 AI_PROVIDER_ERROR', async () => {
    ai.reset();
    ai.respond(() => ({ status: 500 }));
    assertError(
      await ctx.call(alice, 'POST', '/api/sources/discover', { query: 'dentists in Austin' }),
      502,
      'AI_PROVIDER_ERROR',
    );
  });
});
