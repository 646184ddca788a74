/**
 * The web console's leads page at 1,000,000 leads (issue 25): the time from navigation to the first rows visible in
 * Chromium (Debian's, headless) on loopback, p50 of 10 loads, each in a fresh browser context (nothing cached), target
 * under 1 s. The leads are one user's, seeded on PostgreSQL (the bench service's database: BENCH_DATABASE_URL, else
 * TEST_DATABASE_URL, else the local cluster) by one INSERT … SELECT over generate_series. Also, for the filters the
 * page offers, the list endpoint's own time (p50 of 20 requests). BENCH_LEADS sets the number of leads.
 */
import { chromium } from 'playwright-core';
import { median, type Row, request, startBenchService } from './lib.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const LOADS = 10;
/** A lead's link in the table's first row: rows are visible. */
const FIRST_ROW = 'main tbody tr a[href^="/leads/"]';
/** What the in-page predicate uses (evaluated in Chromium, typed here without the DOM library). */
type Browserish = { document: { querySelector(selector: string): unknown } };
const TARGET_MS = 1000;

/** One statement: realistic names, companies, titles, statuses and tags, ids UUIDv7-shaped in creation order. */
const SEED = `
INSERT INTO leads (id, user_id, first_name, last_name, email, company, job_title, source_url, status, tags,
                   created_at, updated_at)
SELECT (lpad(to_hex(1767225600000 + g), 12, '0') || '7' || substr(md5(g::text), 1, 3) || '8'
         || substr(md5(g::text), 4, 15))::uuid,
       $1, n.first, n.last,
       lower(n.first) || '.' || lower(n.last) || g || '@' || lower(replace(n.company, ' ', '')) || '.example',
       n.company, n.title, 'https://directory.example.org/members?page=' || (g / 25 + 1),
       (ARRAY['NEW','VALID','VALID','CONTACTED','REPLIED','QUALIFIED','INVALID','RISKY'])[1 + g % 8],
       CASE g % 10 WHEN 0 THEN ARRAY['enterprise'] WHEN 1 THEN ARRAY['dach'] WHEN 2 THEN ARRAY['q4-pilot']
                   ELSE '{}'::text[] END,
       timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second',
       timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second'
FROM generate_series(1, $2::int) AS g,
LATERAL (SELECT
  (ARRAY['Amara','Lukas','Sofia','Kenji','Priya','Olivia','Mateo','Hannah','Daniel','Aisha','Noah','Elena',
         'Grace','Omar','Iris','Tom','Lea','Jonas','Maya','Ravi'])[1 + g % 20] AS first,
  (ARRAY['Okafor','Berger','Marquez','Watanabe','Raman','Chen','Rossi','Schmidt','Novak','Bello','Fischer',
         'Petrova','Hopper','Haddad','Lund','Reed','Brun','Keller','Singh','Moreau'])[1 + (g / 20) % 20] AS last,
  (ARRAY['Northwind','Alpenkraft','Lumen','Harbor','Brightpath','Vela','Kiefer','Greenleaf','Quantia','Orbit'])
    [1 + (g / 400) % 10] || ' ' ||
  (ARRAY['Traders','Analytics','Logistics','Health','Studio','Energy','Labs','Commerce','Systems','Partners'])
    [1 + (g / 4000) % 10] AS company,
  (ARRAY['VP Sales','Head of Growth','Founder & CEO','Operations Director','Marketing Manager','CTO',
         'Procurement Lead','Account Executive','Engineering Manager','COO'])[1 + g % 10] AS title) AS n`;

export async function benchConsole(): Promise<Row[]> {
  const rows: Row[] = [];
  const service = await startBenchService('bench_console', { workers: false });
  const { port, auth, user, pool } = service;
  const base = `http://127.0.0.1:${port}`;
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
  try {
    const total = Number(process.env.BENCH_LEADS ?? 1_000_000);
    const { rows: version } = await pool.query<{ server_version: string }>('SHOW server_version');
    const t = performance.now();
    await pool.query(SEED, [user.id, total]);
    await pool.query('ANALYZE leads');
    rows.push({
      name: `seed ${total} leads (one INSERT … generate_series, PostgreSQL ${version[0]!.server_version})`,
      value: `${((performance.now() - t) / 1000).toFixed(1)} s`,
      target: '',
      pass: null,
    });

    // The list endpoint under the page's filters (what each load waits for).
    const get = async (url: string) => {
      const res = await request(port, 'GET', url, auth);
      if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${res.body.slice(0, 300)}`);
      return { ms: res.ms, data: JSON.parse(res.body).data };
    };
    const second = (await get('/api/leads?limit=50')).data.nextCursor;
    const lists: Array<[string, string]> = [
      ['newest first', '/api/leads?limit=50'],
      ['second page (cursor)', `/api/leads?limit=50&cursor=${second}`],
      ['oldest first', '/api/leads?limit=50&sort=oldest'],
      ['company', '/api/leads?limit=50&company=lumen%20health'],
      ['status', '/api/leads?limit=50&status=QUALIFIED'],
      ['tag', '/api/leads?limit=50&tag=dach'],
      ['text search', '/api/leads?limit=50&q=hopper'],
    ];
    for (const [label, url] of lists) {
      const times: number[] = [];
      let count = 0;
      for (let i = 0; i < 20; i++) {
        const res = await get(url);
        times.push(res.ms);
        count = res.data.leads.length;
      }
      rows.push({
        name: `GET /api/leads ${label} p50 (${count} rows)`,
        value: `${median(times).toFixed(2)} ms`,
        target: '',
        pass: null,
      });
    }

    // A console session, as the sign-in page gets one.
    const signIn = await request(
      port,
      'POST',
      '/api/console/sign-in',
      {},
      { email: 'bench@example.com', password: 'bench password' },
    );
    const cookie = /quarry_session=([^;]+)/.exec(String(signIn.headers['set-cookie']))?.[1];
    if (signIn.status !== 200 || !cookie) throw new Error(`console sign-in: ${signIn.status} ${signIn.body}`);

    const load = async (path: string): Promise<number> => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      try {
        await context.addCookies([{ name: 'quarry_session', value: cookie, url: base }]);
        const page = await context.newPage();
        await page.goto(`${base}${path}`, { waitUntil: 'commit' });
        // Measured by the page itself: from its navigation start to the first frame with a lead row.
        const handle = await page.waitForFunction(
          (selector: string) =>
            (globalThis as unknown as Browserish).document.querySelector(selector) ? performance.now() : 0,
          FIRST_ROW,
          { polling: 'raf', timeout: 30_000 },
        );
        return (await handle.jsonValue()) as number;
      } finally {
        await context.close();
      }
    };
    await load('/leads'); // the first Chromium start and the service's first page are not what is measured
    const times: number[] = [];
    for (let i = 0; i < LOADS; i++) times.push(await load('/leads'));
    const p50 = median(times);
    rows.push({
      name: `leads page at ${total} leads: navigation → first rows visible, p50 of ${LOADS} cold loads`,
      value: `${p50.toFixed(0)} ms (max ${Math.max(...times).toFixed(0)} ms)`,
      target: `< ${TARGET_MS} ms`,
      pass: p50 < TARGET_MS,
    });
    const filtered: number[] = [];
    for (let i = 0; i < LOADS; i++) filtered.push(await load('/leads?company=Lumen%20Health&tag=dach'));
    rows.push({
      name: `leads page filtered by company and tag, p50 of ${LOADS} cold loads`,
      value: `${median(filtered).toFixed(0)} ms`,
      target: '',
      pass: null,
    });
  } finally {
    await browser.close().catch(() => {});
    await service.stop();
  }
  return rows;
}
