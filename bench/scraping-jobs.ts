/**
 * Job-level scraping figures through the real service (API + in-process workers), on PostgreSQL and
 * on embedded PGlite:
 *   - a STATIC job over the 2,000-page loopback site, its leads stored: pages/s, and its ratio to
 *     runCrawl alone (no storage) on the same site and at the same pinned concurrency, the two measured back to
 *     back in each round (medians of BENCH_SCRAPING_ROUNDS rounds, default 5, PostgreSQL and PGlite interleaved,
 *     so other work on the machine weighs on both alike); target 0.7 on both databases;
 *   - POST /api/jobs → RUNNING latency (the worker has claimed the job), p50 over 30 jobs (PostgreSQL).
 * PGlite runs twice, side by side: as the service runs it by default (PGLITE_WORKER as set, else its default; the
 * target applies there) and in the other mode (PGlite in the service's thread vs in its worker thread: informative),
 * and each is measured for `GET /api/leads` latency while a job crawls (BENCH_SCRAPING_LATENCY_ROUNDS, default 3).
 * BENCH_SCRAPING_NORMAL_PGLITE=1 adds PGlite on its normal write path (informative: the before of the embedded one).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { loadConfig } from '../src/config.ts';
import { type Runtime, startRuntime } from '../src/runtime.ts';
import { DIRECTORY_SELECTORS } from '../test/fixtures/sites.ts';
import { type ApiClient, activeSourceVia, signedUpClient } from '../test/helpers/http-client.ts';
import { freePort } from '../test/helpers/process.ts';
import { BENCH_CREDITS, freshBenchDatabase, type LoadResult, loadTest, median, percentile, type Row } from './lib.ts';

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
  /** PGlite's: in the service's thread or in its worker thread (PGLITE_WORKER). */
  mode?: 'in process' | 'worker thread';
  onPostgres: boolean;
  runtime: Runtime;
  client: ApiClient;
  dataDir: string;
  rates: { job: number[]; engine: number[]; ratio: number[]; cpu: number[] };
  last: { pagesVisited: number; leadsFound: number; status: string };
  allStored: boolean;
  /** A comparison service (BENCH_SCRAPING_NORMAL_PGLITE), not one the target applies to. */
  informative?: boolean;
}

/**
 * Both services run side by side and rounds interleave them (issue 19): a round is runCrawl then the job,
 * on PostgreSQL and on PGlite in turn (the order alternating each round), so a burst of other work on the
 * machine weighs on both databases and on the baseline measured just before each job.
 */
export async function benchScrapingJobs(
  origin: string,
  pages: number,
  engine: EngineBaseline,
  latencySite: { origin: string; pages: number } = { origin, pages },
): Promise<Row[]> {
  const postgres = await freshBenchDatabase('quarry_bench_jobs');
  const services: Service[] = [];
  try {
    services.push(await startService('PostgreSQL', postgres.url, engine.concurrency));
    const pglite = await startService('PGlite', undefined, engine.concurrency);
    services.push(pglite);
    // The other mode of the embedded database, in the same rounds (informative).
    const inProcess = pglite.mode === 'in process';
    const other = await startService(
      `PGlite, ${inProcess ? 'worker thread' : 'in process'}`,
      undefined,
      engine.concurrency,
      {
        PGLITE_WORKER: String(inProcess),
      },
    );
    other.informative = true;
    services.push(other);
    // BENCH_SCRAPING_NORMAL_PGLITE=1: a third service, PGlite on the normal write path (what it ran before the
    // embedded one: per-row foreign-key checks, the jsonb parameter), for a before/after in the same rounds.
    if (process.env.BENCH_SCRAPING_NORMAL_PGLITE === '1') {
      const normal = await startService('PGlite, normal write path', undefined, engine.concurrency);
      // A trigger that fires in origin mode only sends every batch down the normal path
      // (leads.repository.ts, replicaSkipsOnlyTheParentChecks); a statement trigger that does nothing costs nothing.
      await normal.runtime.deps.database.query(
        `CREATE FUNCTION bench_noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
      );
      await normal.runtime.deps.database.query(
        'CREATE TRIGGER bench_normal_path AFTER INSERT ON leads FOR EACH STATEMENT EXECUTE FUNCTION bench_noop()',
      );
      services.push({ ...normal, informative: true });
    }
    const rounds = Number(process.env.BENCH_SCRAPING_ROUNDS ?? 5);
    for (let round = 0; round < rounds; round++) {
      for (const service of round % 2 ? [...services].reverse() : services) {
        // Main-thread CPU (PGlite runs in it, unless PGLITE_WORKER): a figure the machine's load hardly moves.
        const cpu0 = threadCpuSecs();
        const engineRate = await engine.measure();
        const cpu1 = threadCpuSecs();
        // A new source each round: leads are de-duplicated per source, so every round stores them all.
        const { rate, job } = await timedJob(service.client, origin, pages, `Big ${round}`);
        const cpu2 = threadCpuSecs();
        service.rates.engine.push(engineRate);
        service.rates.job.push(rate);
        service.rates.ratio.push(rate / engineRate);
        service.rates.cpu.push((cpu1 - cpu0) / (cpu2 - cpu1));
        service.last = job;
        service.allStored &&= job.status === 'COMPLETED' && job.leadsFound === pages * 10;
        console.log(
          `${nameOf(service)} round ${round + 1}: runCrawl ${engineRate.toFixed(0)}, job ${rate.toFixed(0)} pages/s ` +
            `(${job.leadsFound} leads, ${job.status}), ratio ${(rate / engineRate).toFixed(2)}; main-thread CPU ` +
            `runCrawl ${(cpu1 - cpu0).toFixed(2)} s, job ${(cpu2 - cpu1).toFixed(2)} s; load ${os.loadavg()[0]!.toFixed(1)}`,
        );
      }
    }
    const rows: Row[] = [];
    for (const service of services) rows.push(...(await figures(service, rounds, engine, origin)));
    // PostgreSQL too: its reads wait for no writer (MVCC), so what is left there is the crawl's share of the thread.
    rows.push(...(await leadsWhileCrawling([services[0]!, pglite, other], latencySite.origin, latencySite.pages)));
    return rows;
  } finally {
    for (const service of services) {
      await service.runtime.stop();
      fs.rmSync(service.dataDir, { recursive: true, force: true });
    }
    await postgres.drop();
  }
}

const threadCpuSecs = () => {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1e6;
};

async function startService(
  label: string,
  databaseUrl: string | undefined,
  concurrency: number,
  env: Record<string, string> = {},
): Promise<Service> {
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
    ...env,
  });
  const runtime = await startRuntime(config, { http: true, workers: true });
  const client = await signedUpClient(`http://127.0.0.1:${port}`, 'bench-jobs@example.com');
  const { pglite } = runtime.deps.database;
  return {
    label,
    mode: pglite ? (pglite instanceof PGlite ? 'in process' : 'worker thread') : undefined,
    onPostgres: !!databaseUrl,
    runtime,
    client,
    dataDir,
    rates: { job: [], engine: [], ratio: [], cpu: [] },
    last: { pagesVisited: 0, leadsFound: 0, status: '' },
    allStored: true,
  };
}

/** The service's label, with the mode its PGlite runs in unless the label already says it. */
const nameOf = ({ label, mode }: Service): string => (mode && !label.includes(mode) ? `${label} (${mode})` : label);

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
        `STATIC job on ${nameOf(service)} ÷ runCrawl, median of ${rounds} interleaved rounds ` +
        `[${rates.ratio.map((r) => r.toFixed(2)).join(' ')}] (range ${range(rates.ratio)})`,
      value: ratio.toFixed(2),
      target: service.informative
        ? `(informative; ${JOB_TO_ENGINE_TARGET} is for the service's own path)`
        : `>= ${JOB_TO_ENGINE_TARGET}`,
      pass: service.informative ? null : allStored && ratio >= JOB_TO_ENGINE_TARGET,
    },
    {
      // What the ratio would be if the main thread were the only limit (the machine's load moves it little): on
      // PGlite in process the database's work is in this thread, on PostgreSQL it is not.
      name: `STATIC main-thread CPU: runCrawl ÷ job on ${nameOf(service)}, median [${rates.cpu.map((r) => r.toFixed(2)).join(' ')}]`,
      value: median(rates.cpu).toFixed(2),
      target: '(informative)',
      pass: null,
    },
  ];
  if (service.onPostgres && Number.isFinite(engine.bareRate)) {
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
async function timedJob(client: ApiClient, origin: string, pages: number, sourceName: string, onPosted = () => {}) {
  const view = async (id: string) => (await client.call('GET', `/api/jobs/${id}`)).body.data.job;
  const sourceId = await activeSourceVia(client, {
    name: sourceName,
    url: `${origin}/big/1`,
    selectors: DIRECTORY_SELECTORS,
    maxPages: pages,
  });
  const started = performance.now();
  const created = (await client.call('POST', '/api/jobs', { name: 'Bench', sourceId })).body.data.job;
  onPosted();
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
  return {
    rate: job.pagesVisited / secs,
    secs,
    job: job as { pagesVisited: number; leadsFound: number; status: string },
  };
}

const LEADS_LOAD = { path: '/api/leads?limit=50', connections: 4, seconds: 2 };

/**
 * `GET /api/leads?limit=50` from another process (4 connections, 2 s), idle and while a STATIC job crawls, on each
 * service in turn (the order alternating each round): what a user of the console feels during a crawl, with
 * the database in the service's thread or in its worker thread.
 */
async function leadsWhileCrawling(services: Service[], origin: string, pages: number): Promise<Row[]> {
  const rounds = Number(process.env.BENCH_SCRAPING_LATENCY_ROUNDS ?? 3);
  const runs = new Map(services.map((s) => [s, { idle: [] as LoadResult[], busy: [] as LoadResult[], short: 0 }]));
  for (let round = 0; round < rounds; round++) {
    for (const service of round % 2 ? [...services].reverse() : services) {
      const run = runs.get(service)!;
      const load = () =>
        loadTest(`${service.client.base}${LEADS_LOAD.path}`, {
          ...LEADS_LOAD,
          headers: { authorization: service.client.headers.authorization! },
        });
      run.idle.push(await load());
      let posted = () => {};
      const crawling = new Promise<void>((resolve) => (posted = resolve));
      const job = timedJob(service.client, origin, pages, `Latency ${round}`, posted);
      // The load starts once the crawl is under way and must end before the job does (else `short` counts it).
      await crawling;
      await new Promise((resolve) => setTimeout(resolve, 300));
      const started = performance.now();
      run.busy.push(await load());
      const loaded = (performance.now() - started) / 1000;
      const { secs } = await job;
      if (secs < loaded + 0.3) run.short++;
      const last = run.busy.at(-1)!;
      console.log(
        `${nameOf(service)} GET /api/leads round ${round + 1}: idle ${oneLoad(run.idle.at(-1)!)}; ` +
          `while a job crawls ${oneLoad(last)} (job ${secs.toFixed(1)} s); load ${os.loadavg()[0]!.toFixed(1)}`,
      );
    }
  }
  const summary = (results: LoadResult[]) =>
    `${median(results.map((r) => r.rps)).toFixed(0)} req/s, p50 ${median(results.map((r) => r.p50)).toFixed(0)} ms, ` +
    `p99 ${median(results.map((r) => r.p99)).toFixed(0)} ms`;
  return services.flatMap((service) => {
    const { idle, busy, short } = runs.get(service)!;
    const name = `GET ${LEADS_LOAD.path} (${LEADS_LOAD.connections} connections, ${idle[0]?.tool}) on ${nameOf(service)}`;
    return [
      { name: `${name}, idle: medians of ${rounds}`, value: summary(idle), target: '(informative)', pass: null },
      {
        name:
          `${name}, while a STATIC job crawls: medians of ${rounds} [p99 ${busy.map((r) => r.p99.toFixed(0)).join(' ')}]` +
          (short ? ` (${short} job(s) ended before the load did)` : ''),
        value: summary(busy),
        target: '(informative)',
        pass: null,
      },
    ];
  });
}

const oneLoad = (r: LoadResult) =>
  `${r.rps.toFixed(0)} req/s, p50 ${r.p50.toFixed(0)} ms, p99 ${r.p99.toFixed(0)} ms${r.non2xx ? `, ${r.non2xx} non-2xx` : ''}`;

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
