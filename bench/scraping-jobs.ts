/**
 * Job-level scraping figures through the real service (API + in-process workers), on PostgreSQL and
 * on embedded PGlite:
 *   - a STATIC job over the 2,000-page loopback site, its leads stored: pages/s, and its ratio to
 *     runCrawl alone (no storage) on the same site and at the same pinned concurrency, the two measured back to
 *     back in each round (medians of BENCH_SCRAPING_ROUNDS rounds, default 5, PostgreSQL and PGlite interleaved,
 *     so other work on the machine weighs on both alike); target 0.7 on both databases;
 *   - POST /api/jobs → RUNNING latency (the worker has claimed the job), p50 over 30 jobs (PostgreSQL).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.ts';
import { type Runtime, startRuntime } from '../src/runtime.ts';
import { DIRECTORY_SELECTORS } from '../test/fixtures/sites.ts';
import { type ApiClient, activeSourceVia, signedUpClient } from '../test/helpers/http-client.ts';
import { freePort } from '../test/helpers/process.ts';
import { BENCH_CREDITS, freshBenchDatabase, median, percentile, type Row } from './lib.ts';

const LATENCY_SAMPLES = 30;
const range = (values: number[]) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;
/** The job must keep this share of the engine's own rate (leads stored in batches, not page by page). */
const JOB_TO_ENGINE_TARGET = 0.7;

export interface EngineBaseline {
  /** runCrawl alone over the same pages: pages/s. */
  measure(): Promise<number>;
  /** The bare CheerioCrawler median of this run, its concurrency pinned as runCrawl's (the issue-3 comparison). */
  bareRate: number;
  /** runCrawl's concurrency (total and per host): the service under test crawls at the same, pinned. */
  concurrency: number;
}

interface Service {
  label: string;
  onPostgres: boolean;
  runtime: Runtime;
  client: ApiClient;
  dataDir: string;
  rates: { job: number[]; engine: number[]; ratio: number[] };
  last: { pagesVisited: number; leadsFound: number; status: string };
  allStored: boolean;
}

/**
 * Both services run side by side and rounds interleave them (issue 19): a round is runCrawl then the job,
 * on PostgreSQL and on PGlite in turn (the order alternating each round), so a burst of other work on the
 * machine weighs on both databases and on the baseline measured just before each job.
 */
export async function benchScrapingJobs(origin: string, pages: number, engine: EngineBaseline): Promise<Row[]> {
  const postgres = await freshBenchDatabase('quarry_bench_jobs');
  const services: Service[] = [];
  try {
    services.push(await startService('PostgreSQL', postgres.url, engine.concurrency));
    services.push(await startService('PGlite', undefined, engine.concurrency));
    const rounds = Number(process.env.BENCH_SCRAPING_ROUNDS ?? 5);
    for (let round = 0; round < rounds; round++) {
      for (const service of round % 2 ? [...services].reverse() : services) {
        const engineRate = await engine.measure();
        // A new source each round: leads are de-duplicated per source, so every round stores them all.
        const { rate, job } = await timedJob(service.client, origin, pages, round);
        service.rates.engine.push(engineRate);
        service.rates.job.push(rate);
        service.rates.ratio.push(rate / engineRate);
        service.last = job;
        service.allStored &&= job.status === 'COMPLETED' && job.leadsFound === pages * 10;
        console.log(
          `${service.label} round ${round + 1}: runCrawl ${engineRate.toFixed(0)}, job ${rate.toFixed(0)} pages/s ` +
            `(${job.leadsFound} leads, ${job.status}), ratio ${(rate / engineRate).toFixed(2)}`,
        );
      }
    }
    const rows: Row[] = [];
    for (const service of services) rows.push(...(await figures(service, rounds, engine, origin)));
    return rows;
  } finally {
    for (const service of services) {
      await service.runtime.stop();
      fs.rmSync(service.dataDir, { recursive: true, force: true });
    }
    await postgres.drop();
  }
}

async function startService(label: string, databaseUrl: string | undefined, concurrency: number): Promise<Service> {
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-bench-jobs-'));
  const config = loadConfig({
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    PORT: String(port),
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    ALLOW_PRIVATE_NETWORK: 'true',
    JOB_CONCURRENCY: '4',
    // The job crawls as the runCrawl baseline does (issue 19 item 15): same total and per-host concurrency.
    SCRAPER_CONCURRENCY: String(concurrency),
    SCRAPER_DOMAIN_CONCURRENCY: String(concurrency),
    // PGLITE_WORKER=true npm run bench -- scraping measures PGlite in its worker thread.
    PGLITE_WORKER: process.env.PGLITE_WORKER,
    ...BENCH_CREDITS,
  });
  const runtime = await startRuntime(config, { http: true, workers: true });
  const client = await signedUpClient(`http://127.0.0.1:${port}`, 'bench-jobs@example.com');
  return {
    label,
    onPostgres: !!databaseUrl,
    runtime,
    client,
    dataDir,
    rates: { job: [], engine: [], ratio: [] },
    last: { pagesVisited: 0, leadsFound: 0, status: '' },
    allStored: true,
  };
}

async function figures(service: Service, rounds: number, engine: EngineBaseline, origin: string): Promise<Row[]> {
  const { label, rates, last, allStored } = service;
  const job = median(rates.job);
  const ratio = median(rates.ratio);
  const rows: Row[] = [
    {
      name: `STATIC job via the API on ${label}, ${last.pagesVisited} pages, ${last.leadsFound} leads: pages/s`,
      value: job.toFixed(0),
      target: '',
      pass: null,
    },
    {
      name:
        `STATIC job on ${label} ÷ runCrawl, median of ${rounds} interleaved rounds ` +
        `[${rates.ratio.map((r) => r.toFixed(2)).join(' ')}] (range ${range(rates.ratio)})`,
      value: ratio.toFixed(2),
      target: `>= ${JOB_TO_ENGINE_TARGET}`,
      pass: allStored && ratio >= JOB_TO_ENGINE_TARGET,
    },
  ];
  if (service.onPostgres) {
    rows.push({
      name: 'STATIC job on PostgreSQL ÷ bare CheerioCrawler',
      value: (job / engine.bareRate).toFixed(2),
      target: '>= 1.2',
      pass: allStored && job / engine.bareRate >= 1.2,
    });
    rows.push(await jobLatency(service.client, service.runtime, origin));
  }
  return rows;
}

/** One job over the whole site, from POST /api/jobs to a final status seen through the API. */
async function timedJob(client: ApiClient, origin: string, pages: number, round: number) {
  const view = async (id: string) => (await client.call('GET', `/api/jobs/${id}`)).body.data.job;
  const sourceId = await activeSourceVia(client, {
    name: `Big ${round}`,
    url: `${origin}/big/1`,
    selectors: DIRECTORY_SELECTORS,
    maxPages: pages,
  });
  const started = performance.now();
  const created = (await client.call('POST', '/api/jobs', { name: 'Bench', sourceId })).body.data.job;
  // The job's event stream ends with its final state: no polling load in the process under test.
  const events = await fetch(`${client.base}/api/jobs/${created.id}/events`, {
    headers: { authorization: client.headers.authorization! },
  });
  await events.text();
  let job = await view(created.id);
  while (job.status === 'PENDING' || job.status === 'RUNNING') {
    await new Promise((r) => setTimeout(r, 20));
    job = await view(created.id);
  }
  const secs = (performance.now() - started) / 1000;
  return { rate: job.pagesVisited / secs, job: job as { pagesVisited: number; leadsFound: number; status: string } };
}

/** POST /api/jobs → the job is RUNNING in a worker (one page each, so slots free quickly). */
async function jobLatency(client: ApiClient, runtime: Runtime, origin: string): Promise<Row> {
  const view = async (id: string) => (await client.call('GET', `/api/jobs/${id}`)).body.data.job;
  const small = await activeSourceVia(client, {
    name: 'Small',
    url: `${origin}/big/1`,
    selectors: DIRECTORY_SELECTORS,
    maxPages: 1,
  });
  const latencies: number[] = [];
  for (let i = 0; i < LATENCY_SAMPLES; i++) {
    const t0 = performance.now();
    const created = (await client.call('POST', '/api/jobs', { name: `Latency ${i}`, sourceId: small })).body.data.job;
    for (;;) {
      const [row] = await runtime.deps.database.query<{ status: string }>('SELECT status FROM jobs WHERE id = $1', [
        created.id,
      ]);
      if (row!.status !== 'PENDING') break;
      await new Promise((res) => setTimeout(res, 2));
    }
    latencies.push(performance.now() - t0);
    while (['PENDING', 'RUNNING'].includes((await view(created.id)).status))
      await new Promise((res) => setTimeout(res, 10));
  }
  const sorted = latencies.sort((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  const p90 = percentile(sorted, 90).toFixed(0);
  return {
    name: `POST /api/jobs → RUNNING on PostgreSQL, p50 of ${LATENCY_SAMPLES} (p90 ${p90} ms)`,
    value: `${p50.toFixed(0)} ms`,
    target: '< 250 ms',
    pass: p50 < 250,
  };
}
