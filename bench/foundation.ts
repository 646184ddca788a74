/**
 * Foundation figures (issue "Foundation"): API overhead against the bare query, lead listing at
 * 1,000,000 leads, bulk update, and embedded start-up time and memory.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import type pg from 'pg';
import { freePort, startService, waitHealthy } from '../test/helpers/process.ts';
import { closedLoop, loadTest, median, percentile, type Row, request, seedLeads, startBenchService } from './lib.ts';

/**
 * The statement named `name` as the service sent it to `pool` while `run` ran (text and values), so a
 * baseline can run the very same statement.
 */
async function statementSent(
  pool: pg.Pool,
  name: string,
  run: () => Promise<unknown>,
): Promise<{ text: string; values: unknown[] }> {
  const query = pool.query;
  let sent: { text: string; values: unknown[] } | undefined;
  pool.query = ((config: unknown, values?: unknown) => {
    const c = config as Partial<pg.QueryConfig> | null;
    if (c?.name === name && c.text) sent ??= { text: c.text, values: [...((values ?? c.values ?? []) as unknown[])] };
    return (query as (...args: unknown[]) => unknown).call(pool, config, values);
  }) as typeof pool.query;
  try {
    await run();
  } finally {
    pool.query = query;
  }
  if (!sent) throw new Error(`the service did not send the prepared statement ${name}`);
  return sent;
}

export async function benchFoundation(): Promise<Row[]> {
  const rows: Row[] = [];
  const service = await startBenchService('bench', { workers: true });
  const { port, auth, user, pool } = service;
  try {
    const total = Number(process.env.BENCH_LEADS ?? 1_000_000);
    const companies = 5000;
    const t = performance.now();
    await seedLeads(pool, user.id, total, companies);
    console.log(`seeded ${total} leads in ${((performance.now() - t) / 1000).toFixed(1)} s`);

    // 1. GET /api/leads/{id} over HTTP against the same query on the same pool, same concurrency.
    const [{ id: leadId }] = (
      await pool.query('SELECT id FROM leads WHERE user_id = $1 ORDER BY id LIMIT 1 OFFSET 777', [user.id])
    ).rows;
    // The baseline runs the very statement the endpoint runs (same text, prepared the same way),
    // caught on its way to the pool: the repository names it leads_find_with_relations.
    let check = { status: 0, body: '' };
    const statement = await statementSent(pool, 'leads_find_with_relations', async () => {
      check = await request(port, 'GET', `/api/leads/${leadId}`, auth);
    });
    if (check.status !== 200) throw new Error(`GET lead failed: ${check.status} ${check.body}`);
    const concurrency = 16;
    const seconds = Number(process.env.BENCH_SECONDS ?? 8);
    const baselineQueryFor = (id: string) =>
      pool.query({
        name: 'bench_lead_baseline',
        text: statement.text,
        values: statement.values.map((v) => (v === leadId ? id : v)),
      });
    const baselineQuery = () => baselineQueryFor(leadId);
    // Warm both paths, then alternate two runs of each and keep each side's best (noise is one-sided).
    await closedLoop(baselineQuery, concurrency, 1);
    await loadTest(`http://127.0.0.1:${port}/api/leads/${leadId}`, {
      connections: concurrency,
      seconds: 2,
      headers: auth,
    });
    let sqlRps = 0;
    let httpRun = { rps: 0, non2xx: 0, errors: 0, tool: '' };
    for (let round = 0; round < 2; round++) {
      sqlRps = Math.max(sqlRps, await closedLoop(baselineQuery, concurrency, seconds));
      const run = await loadTest(`http://127.0.0.1:${port}/api/leads/${leadId}`, {
        connections: concurrency,
        seconds,
        headers: auth,
      });
      if (run.non2xx || run.errors) throw new Error(`load test saw ${run.non2xx} non-2xx responses or socket errors`);
      if (run.rps > httpRun.rps) httpRun = run;
    }
    // Reference ceiling on this machine: the leanest Fastify route around the same statement and
    // pool (no auth, validation, ORM or envelope). HTTP's own socket work is what separates it from the baseline.
    const bare = Fastify();
    bare.get('/bare/:id', async (req) => (await baselineQueryFor((req.params as { id: string }).id)).rows[0]);
    await bare.listen({ port: 0, host: '127.0.0.1' });
    const barePort = (bare.server.address() as { port: number }).port;
    let bareRps = 0;
    for (let round = 0; round < 2; round++)
      bareRps = Math.max(
        bareRps,
        (await loadTest(`http://127.0.0.1:${barePort}/bare/${leadId}`, { connections: concurrency, seconds })).rps,
      );
    await bare.close();
    const ratio = httpRun.rps / sqlRps;
    rows.push({
      name: `GET /api/leads/{id} req/s (HTTP, authenticated, ${httpRun.tool})`,
      value: httpRun.rps.toFixed(0),
      target: '',
      pass: null,
    });
    rows.push({
      name: 'same SELECT on the same pool, no HTTP (baseline)',
      value: sqlRps.toFixed(0),
      target: '',
      pass: null,
    });
    rows.push({ name: 'ratio HTTP ÷ baseline', value: ratio.toFixed(2), target: '>= 0.70', pass: ratio >= 0.7 });
    rows.push({
      name: 'reference: bare Fastify route, same statement, req/s',
      value: bareRps.toFixed(0),
      target: '',
      pass: null,
    });
    rows.push({
      name: 'reference: bare route ÷ baseline (ceiling of any HTTP API here)',
      value: (bareRps / sqlRps).toFixed(2),
      target: '',
      pass: null,
    });
    rows.push({
      name: 'Quarry API ÷ bare route (cost of auth, validation, ORM, envelope)',
      value: (httpRun.rps / bareRps).toFixed(2),
      target: '',
      pass: null,
    });

    // 2. Company filter, first pages and next pages, sequential requests.
    const latencies: number[] = [];
    for (let i = 0; i < 1000; i++) {
      const company = `Company ${(i * 7919) % companies}`;
      const first = await request(
        port,
        'GET',
        `/api/leads?company=${encodeURIComponent(i % 2 ? company.toUpperCase() : company)}&limit=50`,
        auth,
      );
      if (first.status !== 200) throw new Error(`list failed: ${first.status} ${first.body}`);
      latencies.push(first.ms);
      const next = JSON.parse(first.body).data.nextCursor;
      if (next && i % 4 === 0) {
        const page2 = await request(
          port,
          'GET',
          `/api/leads?company=${encodeURIComponent(company)}&limit=50&cursor=${next}`,
          auth,
        );
        latencies.push(page2.ms);
      }
    }
    latencies.sort((a, b) => a - b);
    const p99 = percentile(latencies, 99);
    rows.push({
      name: `GET /api/leads?company=…&limit=50 p50 (${total} leads)`,
      value: `${percentile(latencies, 50).toFixed(2)} ms`,
      target: '',
      pass: null,
    });
    rows.push({
      name: `GET /api/leads?company=…&limit=50 p99 (${total} leads)`,
      value: `${p99.toFixed(2)} ms`,
      target: '< 25 ms',
      pass: p99 < 25,
    });

    // 3. PATCH /api/leads/bulk with 1000 ids.
    const bulkTimes: number[] = [];
    for (let i = 0; i < 30; i++) {
      // 1000 distinct ids: one company's leads, topped up with others spread over the table.
      const leadIds = (
        await pool.query(
          `(SELECT id FROM leads WHERE user_id = $1 AND company = $2 LIMIT 1000)
           UNION (SELECT id FROM leads WHERE user_id = $1 AND company <> $2 ORDER BY id DESC OFFSET $3 LIMIT 1000)
           LIMIT 1000`,
          [user.id, `Company ${i}`, i * 1000],
        )
      ).rows.map((r) => r.id);
      const res = await request(port, 'PATCH', '/api/leads/bulk', auth, {
        leadIds,
        updates: {
          status: i % 2 ? 'QUALIFIED' : 'CONTACTED',
          addTags: ['bench', `run-${i}`],
          removeTags: [`run-${i - 1}`],
        },
      });
      if (res.status !== 200 || JSON.parse(res.body).data.updated !== 1000)
        throw new Error(`bulk failed: ${res.status} ${res.body.slice(0, 300)}`);
      bulkTimes.push(res.ms);
    }
    const bulkMedian = median(bulkTimes);
    rows.push({
      name: 'PATCH /api/leads/bulk, 1000 ids, median',
      value: `${bulkMedian.toFixed(1)} ms`,
      target: '< 100 ms',
      pass: bulkMedian < 100,
    });
  } finally {
    await service.stop();
  }

  // 4. Embedded mode: restart on an existing DATA_DIR, time to healthy, idle memory.
  const embeddedDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-bench-embedded-'));
  try {
    const p1 = await freePort();
    const first = startService({ DATA_DIR: embeddedDir, PORT: String(p1), LOG_LEVEL: 'warn' });
    const firstStart = await waitHealthy(p1, first);
    first.child.kill('SIGTERM');
    await first.exited;
    const starts: number[] = [];
    let rssMb = 0;
    for (let i = 0; i < 3; i++) {
      const p = await freePort();
      const svc = startService({ DATA_DIR: embeddedDir, PORT: String(p), LOG_LEVEL: 'warn' });
      starts.push(await waitHealthy(p, svc));
      if (i === 2) {
        await new Promise((r) => setTimeout(r, 5000));
        const status = fs.readFileSync(`/proc/${svc.child.pid}/status`, 'utf8');
        rssMb = Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
      }
      svc.child.kill('SIGTERM');
      await svc.exited;
    }
    const startMedian = median(starts);
    rows.push({
      name: 'embedded: first start on an empty DATA_DIR',
      value: `${(firstStart / 1000).toFixed(2)} s`,
      target: '',
      pass: null,
    });
    rows.push({
      name: 'embedded: npm start on existing DATA_DIR → healthy (median of 3)',
      value: `${(startMedian / 1000).toFixed(2)} s`,
      target: '< 3 s',
      pass: startMedian < 3000,
    });
    rows.push({ name: 'embedded: idle RSS', value: `${rssMb.toFixed(0)} MB`, target: '< 500 MB', pass: rssMb < 500 });
  } finally {
    fs.rmSync(embeddedDir, { recursive: true, force: true });
  }
  return rows;
}
