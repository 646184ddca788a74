/**
 * Scraping figures (issue 3): the engine against baselines measured in the same run on the same
 * loopback site, served from its own process (bench/fixture-server.ts):
 *   STATIC  raw limit (keep-alive undici + cheerio parse, no framework), bare default Crawlee
 *           CheerioCrawler, and runCrawl STATIC, 2,000 pages each, same concurrency;
 *   DYNAMIC bare PlaywrightCrawler and runCrawl DYNAMIC, 200 pages;
 *   (the bare crawlers' concurrency is pinned as runCrawl's, by the same `pinnedConcurrency`: Crawlee's default
 *   pool would start at 1 and grow 5 % per 10 s, so "same concurrency" would not hold;)
 *   memory  max RSS of a process running a 10,000-page runCrawl STATIC (bench/scraping-rss.ts);
 *   jobs    the STATIC crawl as a job through the API, leads stored, against runCrawl (bench/scraping-jobs.ts).
 * `npm run bench -- scraping`. BENCH_SCRAPING_ROUNDS (default 5) repeats the STATIC trio; medians reported.
 * BENCH_SCRAPING_JOBS_ONLY=1 runs the jobs part alone (bench/scraping-jobs.ts: BENCH_SCRAPING_NORMAL_PGLITE).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CheerioCrawler } from '@crawlee/cheerio';
import { Configuration, log as crawleeLog, LogLevel } from '@crawlee/core';
import { load } from 'cheerio';
import { chromium } from 'playwright-core';
import { Agent, request } from 'undici';
import { runCrawl } from '../src/modules/scraping/crawl.ts';
import { pinnedConcurrency } from '../src/modules/scraping/crawl-session.ts';
import { PlaywrightCrawler } from '../src/modules/scraping/playwright-crawler.ts';
import type { CrawlSettings } from '../src/modules/scraping/scraping.types.ts';
import { DIRECTORY_SELECTORS } from '../test/fixtures/sites.ts';
import { median, type Row, repoRoot } from './lib.ts';
import { benchScrapingJobs } from './scraping-jobs.ts';

const STATIC_PAGES = 2000;
const DYNAMIC_PAGES = 200;
const RSS_PAGES = 10_000;
const CONCURRENCY = 16;
const BROWSER_CONCURRENCY = 4;
const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
];

interface SiteProcess {
  origin: string;
  child: ChildProcess;
}

async function startSiteProcess(options: Record<string, unknown>): Promise<SiteProcess> {
  const child = spawn(process.execPath, [path.join(repoRoot, 'bench/fixture-server.ts'), JSON.stringify(options)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const origin = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n')[0];
      if (out.includes('\n')) resolve(JSON.parse(line!).origin);
    });
    child.on('exit', (code) => reject(new Error(`fixture server exited ${code}`)));
  });
  return { origin, child };
}

const stopSite = (site: SiteProcess) => site.child.stdin!.end();

/** Runs `use` with a loopback site of its own, stopped after. */
async function withSite<T>(options: Record<string, unknown>, use: (site: SiteProcess) => Promise<T>): Promise<T> {
  const site = await startSiteProcess(options);
  try {
    return await use(site);
  } finally {
    stopSite(site);
  }
}

function settings(url: string, maxPages: number, overrides: Partial<CrawlSettings> = {}): CrawlSettings {
  return {
    url,
    scrapeType: 'STATIC',
    selectors: DIRECTORY_SELECTORS,
    maxPages,
    respectRobotsTxt: true,
    userAgent: 'Mozilla/5.0 (compatible; QuarryBot/0.1; +https://github.com/quarry)',
    maxConcurrency: CONCURRENCY,
    domainConcurrency: CONCURRENCY,
    domainDelayMs: 0,
    requestTimeoutSecs: 30,
    maxRetries: 2,
    allowPrivateNetwork: true,
    chromiumPath: CHROMIUM_PATH,
    ...overrides,
  };
}

/** The raw limit: a breadth-first crawl with keep-alive undici and a cheerio parse per page, nothing else. */
async function rawCrawl(origin: string, pages: number): Promise<number> {
  const agent = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 10_000 });
  const seen = new Set<string>([`${origin}/big/1`]);
  const queue = [`${origin}/big/1`];
  let done = 0;
  let running = 0;
  await new Promise<void>((resolve, reject) => {
    const pump = () => {
      if (done >= pages || (queue.length === 0 && running === 0)) return resolve();
      while (running < CONCURRENCY && queue.length) {
        const url = queue.shift()!;
        running++;
        request(url, { dispatcher: agent, headers: { 'user-agent': 'raw', 'accept-encoding': 'gzip, br' } })
          .then(async (res) => {
            const $ = load(await res.body.text(), { _useHtmlParser2: true } as Parameters<typeof load>[1]);
            for (const a of $('a.next').toArray()) {
              const next = new URL(a.attribs.href!, url).href;
              if (!seen.has(next) && seen.size < pages) {
                seen.add(next);
                queue.push(next);
              }
            }
            done++;
            running--;
            pump();
          })
          .catch(reject);
      }
    };
    pump();
  });
  await agent.close();
  return done;
}

async function bareCheerio(origin: string, pages: number): Promise<number> {
  const config = new Configuration({ persistStorage: false, purgeOnStart: false });
  let done = 0;
  const crawler = new CheerioCrawler(
    {
      ...pinnedConcurrency(CONCURRENCY),
      maxRequestsPerCrawl: pages,
      async requestHandler({ enqueueLinks }) {
        done++;
        await enqueueLinks({ selector: 'a.next' });
      },
    },
    config,
  );
  await crawler.run([`${origin}/big/1`]);
  return done;
}

async function bareBrowser(origin: string, pages: number): Promise<number> {
  const config = new Configuration({ persistStorage: false, purgeOnStart: false });
  let done = 0;
  const crawler = new PlaywrightCrawler(
    {
      ...pinnedConcurrency(BROWSER_CONCURRENCY),
      maxRequestsPerCrawl: pages,
      launchContext: {
        launcher: chromium,
        launchOptions: { executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS },
      },
      async requestHandler({ enqueueLinks }) {
        done++;
        await enqueueLinks({ selector: 'a.next' });
      },
    },
    config,
  );
  await crawler.run([`${origin}/big/1`]);
  return done;
}

async function quarry(
  origin: string,
  pages: number,
  overrides: Partial<CrawlSettings> = {},
): Promise<{ pages: number; items: number }> {
  let items = 0;
  const result = await runCrawl(settings(`${origin}/big/1`, pages, overrides), {
    // The job runner's store is this hook; here it only counts (the job-level figure below measures storage).
    onPage: async (page) => {
      items += page.items.length;
    },
    signal: new AbortController().signal,
  });
  return { pages: result.pagesVisited, items };
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; secs: number }> {
  const t = performance.now();
  const value = await fn();
  return { value, secs: (performance.now() - t) / 1000 };
}

export async function benchScraping(): Promise<Row[]> {
  crawleeLog.setLevel(LogLevel.WARNING);
  // BENCH_SCRAPING_JOBS_ONLY=1: the jobs against runCrawl only (no STATIC trio rounds, no DYNAMIC, no memory run).
  const jobsOnly = process.env.BENCH_SCRAPING_JOBS_ONLY === '1';
  const rows: Row[] = [];
  const storageBefore = fs.existsSync(path.join(process.cwd(), 'storage'));
  const site = await startSiteProcess({ bigPages: STATIC_PAGES, leadsPerPage: 10 });
  try {
    // Warm-up (JIT, connection pools, module loading), then alternating rounds; medians are reported
    // (other work on the machine shows up as outliers in single runs).
    await rawCrawl(site.origin, 200);
    await bareCheerio(site.origin, 200);
    await quarry(site.origin, 200);
    const rates = { raw: [] as number[], bare: [] as number[], ours: [] as number[] };
    const rounds = jobsOnly ? 0 : Number(process.env.BENCH_SCRAPING_ROUNDS ?? 5);
    let items = 0;
    for (let round = 0; round < rounds; round++) {
      const raw = await timed(() => rawCrawl(site.origin, STATIC_PAGES));
      const bare = await timed(() => bareCheerio(site.origin, STATIC_PAGES));
      const ours = await timed(() => quarry(site.origin, STATIC_PAGES));
      rates.raw.push(raw.value / raw.secs);
      rates.bare.push(bare.value / bare.secs);
      rates.ours.push(ours.value.pages / ours.secs);
      items = ours.value.items;
      console.log(
        `round ${round + 1}: raw ${rates.raw.at(-1)!.toFixed(0)}, ` +
          `bare CheerioCrawler ${rates.bare.at(-1)!.toFixed(0)}, runCrawl ${rates.ours.at(-1)!.toFixed(0)} pages/s`,
      );
    }
    const med = { raw: median(rates.raw), bare: median(rates.bare), ours: median(rates.ours) };
    if (!jobsOnly) {
      rows.push({
        name: `STATIC raw limit (undici keep-alive + cheerio, c=${CONCURRENCY}) pages/s, median`,
        value: med.raw.toFixed(0),
        target: '',
        pass: null,
      });
      rows.push({
        name: `STATIC bare default CheerioCrawler (concurrency pinned at ${CONCURRENCY}) pages/s, median`,
        value: med.bare.toFixed(0),
        target: '',
        pass: null,
      });
      rows.push({
        name: `STATIC runCrawl pages/s, median (${items} items extracted per run)`,
        value: med.ours.toFixed(0),
        target: '',
        pass: null,
      });
      rows.push({
        name: 'STATIC runCrawl ÷ bare CheerioCrawler',
        value: (med.ours / med.bare).toFixed(2),
        target: '>= 1.2',
        pass: med.ours / med.bare >= 1.2,
      });
      rows.push({
        name: 'STATIC runCrawl ÷ raw limit',
        value: (med.ours / med.raw).toFixed(2),
        target: '',
        pass: null,
      });
    }

    // The same site through the service: API, queue, worker, leads stored (PostgreSQL, then PGlite).
    const measure = async () => {
      const run = await timed(() => quarry(site.origin, STATIC_PAGES));
      return run.value.pages / run.secs;
    };
    rows.push(
      ...(await withSite({ bigPages: 3 * STATIC_PAGES, leadsPerPage: 10 }, (longer) =>
        benchScrapingJobs(
          site.origin,
          STATIC_PAGES,
          { measure, bareRate: med.bare, concurrency: CONCURRENCY },
          // The API is loaded during a crawl 3 times as long, so the load (2 s) ends before the job does.
          { origin: longer.origin, pages: 3 * STATIC_PAGES },
        ),
      )),
    );

    if (jobsOnly) {
      // The jobs only.
    } else if (fs.existsSync(CHROMIUM_PATH)) {
      await bareBrowser(site.origin, 10);
      await quarry(site.origin, 10, {
        scrapeType: 'DYNAMIC',
        maxConcurrency: BROWSER_CONCURRENCY,
        domainConcurrency: BROWSER_CONCURRENCY,
      });
      const bare = await timed(() => bareBrowser(site.origin, DYNAMIC_PAGES));
      const ours = await timed(() =>
        quarry(site.origin, DYNAMIC_PAGES, {
          scrapeType: 'DYNAMIC',
          maxConcurrency: BROWSER_CONCURRENCY,
          domainConcurrency: BROWSER_CONCURRENCY,
        }),
      );
      const bareRate = bare.value / bare.secs;
      const ourRate = ours.value.pages / ours.secs;
      rows.push({
        name: `DYNAMIC bare PlaywrightCrawler (concurrency pinned at ${BROWSER_CONCURRENCY}) pages/s`,
        value: bareRate.toFixed(1),
        target: '',
        pass: null,
      });
      rows.push({ name: 'DYNAMIC runCrawl pages/s', value: ourRate.toFixed(1), target: '', pass: null });
      rows.push({
        name: 'DYNAMIC runCrawl ÷ bare PlaywrightCrawler',
        value: (ourRate / bareRate).toFixed(2),
        target: '>= 0.9',
        pass: ourRate / bareRate >= 0.9,
      });
    } else {
      rows.push({
        name: `DYNAMIC skipped: Chromium not found at ${CHROMIUM_PATH} (apt-get install chromium)`,
        value: '-',
        target: '>= 0.9',
        pass: null,
      });
    }
  } finally {
    stopSite(site);
  }

  if (jobsOnly) return rows;
  const big = await startSiteProcess({ bigPages: RSS_PAGES, leadsPerPage: 10 });
  try {
    const out = execFileSync(
      process.execPath,
      [path.join(repoRoot, 'bench/scraping-rss.ts'), `${big.origin}/big/1`, String(RSS_PAGES)],
      { encoding: 'utf8' },
    );
    const { pages, secs, maxRssMb } = JSON.parse(out.trim().split('\n').at(-1)!) as {
      pages: number;
      secs: number;
      maxRssMb: number;
    };
    rows.push({
      name: `STATIC runCrawl ${pages} pages (own process): pages/s`,
      value: (pages / secs).toFixed(0),
      target: '',
      pass: null,
    });
    rows.push({
      name: `STATIC runCrawl ${RSS_PAGES} pages: max RSS of its process (sampled every 100 ms)`,
      value: `${maxRssMb.toFixed(0)} MB`,
      target: '< 1024 MB',
      pass: maxRssMb < 1024,
    });
  } finally {
    stopSite(big);
  }
  if (!storageBefore && fs.existsSync(path.join(process.cwd(), 'storage'))) {
    rows.push({
      name: 'Crawlee wrote a ./storage directory (memory-only storage expected)',
      value: 'yes',
      target: 'no',
      pass: false,
    });
  }
  return rows;
}
