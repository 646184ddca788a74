/**
 * Job-level scraping figures on PostgreSQL, through the real service (API + in-process workers):
 *   - a STATIC job over the 2,000-page loopback site, leads stored: pages/s, compared with the bare
 *     CheerioCrawler rate measured in the same run by bench/scraping.ts;
 *   - POST /api/jobs → RUNNING latency (the worker has claimed the job), p50 over 30 jobs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.ts';
import { startRuntime } from '../src/runtime.ts';
import { DIRECTORY_SELECTORS } from '../test/fixtures/sites.ts';
import { freePort } from '../test/helpers/process.ts';
import { activeSourceVia, signedUpClient } from '../test/helpers/http-client.ts';
import { freshBenchDatabase, percentile, type Row } from './lib.ts';

const LATENCY_SAMPLES = 30;

export async function benchScrapingJobs(origin: string, pages: number, bareRate: number): Promise<Row[]> {
  const database = await freshBenchDatabase('quarry_bench_jobs');
  const url = new URL(database.url);
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-bench-jobs-'));
  const config = loadConfig({ DATABASE_URL: url.href, PORT: String(port), LOG_LEVEL: 'silent', DATA_DIR: dataDir, ALLOW_PRIVATE_NETWORK: 'true', JOB_CONCURRENCY: '4' });
  const runtime = await startRuntime(config, { http: true, workers: true });
  const rows: Row[] = [];
  try {
    const client = await signedUpClient(`http://127.0.0.1:${port}`, 'bench-jobs@example.com');
    const view = async (id: string) => (await client.call('GET', `/api/jobs/${id}`)).body.data.job;

    // Throughput: one job over the whole site, leads written page by page.
    const sourceId = await activeSourceVia(client, { name: 'Big', url: `${origin}/big/1`, selectors: DIRECTORY_SELECTORS, maxPages: pages });
    const started = performance.now();
    const job = (await client.call('POST', '/api/jobs', { name: 'Bench', sourceId })).body.data.job;
    let v = await view(job.id);
    while (v.status === 'PENDING' || v.status === 'RUNNING') {
      await new Promise((r) => setTimeout(r, 20));
      v = await view(job.id);
    }
    const secs = (performance.now() - started) / 1000;
    const rate = v.pagesVisited / secs;
    rows.push({ name: `STATIC job via the API, ${v.pagesVisited} pages, ${v.leadsFound} leads stored: pages/s (${v.status})`, value: rate.toFixed(0), target: '', pass: null });
    rows.push({ name: 'STATIC job ÷ bare CheerioCrawler', value: (rate / bareRate).toFixed(2), target: '>= 1.2', pass: v.status === 'COMPLETED' && v.leadsFound === pages * 10 && rate / bareRate >= 1.2 });

    // Latency: POST /api/jobs → the job is RUNNING in a worker (one page each, so slots free quickly).
    const small = await activeSourceVia(client, { name: 'Small', url: `${origin}/big/1`, selectors: DIRECTORY_SELECTORS, maxPages: 1 });
    const latencies: number[] = [];
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      const t0 = performance.now();
      const created = (await client.call('POST', '/api/jobs', { name: `Latency ${i}`, sourceId: small })).body.data.job;
      for (;;) {
        const { rows: r } = await runtime.deps.database.pool!.query('SELECT status FROM jobs WHERE id = $1', [created.id]);
        if (r[0].status !== 'PENDING') break;
        await new Promise((res) => setTimeout(res, 2));
      }
      latencies.push(performance.now() - t0);
      while (['PENDING', 'RUNNING'].includes((await view(created.id)).status)) await new Promise((res) => setTimeout(res, 10));
    }
    const sorted = latencies.sort((a, b) => a - b);
    const p50 = percentile(sorted, 50);
    rows.push({ name: `POST /api/jobs → RUNNING on PostgreSQL, p50 of ${LATENCY_SAMPLES} (p90 ${percentile(sorted, 90).toFixed(0)} ms)`, value: `${p50.toFixed(0)} ms`, target: '< 250 ms', pass: p50 < 250 });
  } finally {
    await runtime.stop();
    await database.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  return rows;
}
