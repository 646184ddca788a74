/**
 * Markdown exports (docs/scraping.md "Markdown exports"): a 500-page loopback site exported through the real service
 * (API + in-process workers), pages/s, against a bare loop in the same run: undici fetch of the same pages, one
 * after the other, each converted by the same converter (Readability + mdream). The ratio is the median of
 * BENCH_MARKDOWN_ROUNDS rounds (default 5; each measures both back to back), after one warm-up round of each side
 * that is not counted (the export's conversion threads start and compile on first use, the bare loop's converter
 * in the main thread: a first round measured start-up, not throughput). The converter's own time per page is
 * reported. Target on PostgreSQL: >= 0.7; PGlite reported. MARKDOWN_CONVERT_THREADS, when set, sizes the pool.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { loadConfig } from '../src/config.ts';
import { markdownEngine, pageToMarkdown } from '../src/modules/markdown-exports/markdown-convert.ts';
import { startRuntime } from '../src/runtime.ts';
import { startMarkdownSite } from '../test/fixtures/markdown-site.ts';
import { type ApiClient, signedUpClient } from '../test/helpers/http-client.ts';
import { freePort } from '../test/helpers/process.ts';
import { BENCH_CREDITS, freshBenchDatabase, median, type Row } from './lib.ts';

const PAGES = 500;
const TARGET = 0.7;

/** The bare loop: fetch, convert, next page; pages/s and the converter's ms per page. */
async function bareLoop(origin: string): Promise<{ rate: number; convertMs: number }> {
  let converting = 0;
  const started = performance.now();
  for (let n = 1; n <= PAGES; n++) {
    const url = `${origin}/gen/${n}`;
    const res = await request(url);
    const html = await res.body.text();
    const t = performance.now();
    pageToMarkdown(html, url, true);
    converting += performance.now() - t;
  }
  return { rate: PAGES / ((performance.now() - started) / 1000), convertMs: converting / PAGES };
}

/** One export of the whole site, from POST to its final state (its event stream ends there). */
async function timedExport(client: ApiClient, origin: string) {
  const started = performance.now();
  const created = (
    await client.call('POST', '/api/markdown-exports', {
      startUrl: `${origin}/gen/1`,
      maxPages: PAGES,
      maxDepth: 20,
      respectRobotsTxt: true,
    })
  ).body.data.export;
  const events = await fetch(`${client.base}/api/markdown-exports/${created.id}/events`, {
    headers: { authorization: client.headers.authorization! },
  });
  await events.text();
  let view = (await client.call('GET', `/api/markdown-exports/${created.id}`)).body.data.export;
  while (view.status === 'PENDING' || view.status === 'RUNNING') {
    await new Promise((r) => setTimeout(r, 20));
    view = (await client.call('GET', `/api/markdown-exports/${created.id}`)).body.data.export;
  }
  const secs = (performance.now() - started) / 1000;
  const runSecs = (Date.parse(view.finishedAt) - Date.parse(view.startedAt)) / 1000;
  const queuedSecs = (Date.parse(view.startedAt) - Date.parse(view.createdAt)) / 1000;
  return {
    rate: view.pagesDone / secs,
    runSecs,
    queuedSecs,
    secs,
    view: view as { pagesDone: number; status: string },
  };
}

async function onRuntime(label: string, databaseUrl: string | undefined, origin: string): Promise<Row[]> {
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-bench-markdown-'));
  const config = loadConfig({
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    PORT: String(port),
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    ALLOW_PRIVATE_NETWORK: 'true',
    ...BENCH_CREDITS,
    ...(process.env.MARKDOWN_CONVERT_THREADS ? { MARKDOWN_CONVERT_THREADS: process.env.MARKDOWN_CONVERT_THREADS } : {}),
  });
  const runtime = await startRuntime(config, { http: true, workers: true });
  try {
    const client = await signedUpClient(`http://127.0.0.1:${port}`, 'bench-markdown@example.com');
    const rounds = Number(process.env.BENCH_MARKDOWN_ROUNDS ?? 5);
    const ratios: number[] = [];
    const rates: number[] = [];
    const converter: number[] = [];
    let allDone = true;
    // Warm-up, not counted: JIT, connections, the export's conversion threads (started on first use).
    await bareLoop(origin);
    await timedExport(client, origin);
    for (let round = 0; round < rounds; round++) {
      const bare = await bareLoop(origin);
      const { rate, view, runSecs, queuedSecs, secs } = await timedExport(client, origin);
      allDone &&= view.status === 'COMPLETED' && view.pagesDone === PAGES;
      ratios.push(rate / bare.rate);
      rates.push(rate);
      converter.push(bare.convertMs);
      console.log(
        `${label} round ${round + 1}: bare loop ${bare.rate.toFixed(0)}, export ${rate.toFixed(0)} pages/s ` +
          `(${view.pagesDone} pages, ${view.status}; ${secs.toFixed(2)} s: queued ${queuedSecs.toFixed(2)}, ` +
          `running ${runSecs.toFixed(2)}), ratio ${(rate / bare.rate).toFixed(2)}`,
      );
    }
    const ratio = median(ratios);
    const onPostgres = !!databaseUrl;
    return [
      {
        name: `markdown export via the API on ${label}, ${PAGES} pages: pages/s`,
        value: median(rates).toFixed(0),
        target: '',
        pass: null,
      },
      {
        name: `markdown export on ${label} ÷ bare undici fetch + converter loop, median of ${rounds}`,
        value: ratio.toFixed(2),
        target: onPostgres ? `>= ${TARGET}` : 'reported',
        pass: onPostgres ? allDone && ratio >= TARGET : null,
      },
      {
        name: `converter (Readability + mdream ${markdownEngine.name}) per page, ms`,
        value: median(converter).toFixed(2),
        target: 'reported',
        pass: null,
      },
    ];
  } finally {
    await runtime.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function benchMarkdown(): Promise<Row[]> {
  const site = await startMarkdownSite({ genPages: PAGES, log: false });
  const postgres = await freshBenchDatabase('quarry_bench_markdown');
  try {
    const rows = await onRuntime('PostgreSQL', postgres.url, site.origin);
    if (process.env.BENCH_MARKDOWN_PGLITE === '0') return rows;
    return [...rows, ...(await onRuntime('PGlite', undefined, site.origin)).slice(0, 2)];
  } finally {
    await postgres.drop();
    await site.close();
  }
}
