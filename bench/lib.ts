import { execFile, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { type Runtime, startRuntime } from '../src/runtime.ts';
import { freePort } from '../test/helpers/process.ts';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Bench services meter credits (its cost is part of every figure: metering is off by default without a payment
 * provider), with a signup grant large enough that no bench runs out.
 */
export const BENCH_CREDITS = { CREDITS_ENABLED: 'true', CREDITS_SIGNUP_GRANT: '100000000' } as const;

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx]!;
}

export const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

export interface Row {
  name: string;
  value: string;
  target: string;
  pass: boolean | null;
}

export function printTable(title: string, rows: Row[]): void {
  console.log(`\n## ${title}`);
  const w = Math.max(...rows.map((r) => r.name.length));
  for (const r of rows) {
    const mark = r.pass === null ? '    ' : r.pass ? 'PASS' : 'FAIL';
    console.log(`${mark}  ${r.name.padEnd(w)}  ${r.value.padEnd(28)}  target ${r.target}`);
  }
}

/** A load test's answer; latencies in ms. */
export interface LoadResult {
  rps: number;
  non2xx: number;
  errors: number;
  p50: number;
  p99: number;
  tool: string;
}

/**
 * Requests/s (and latency percentiles) of a keep-alive load from another process: wrk when installed (a C client, so
 * more of a 2-core machine is left to the server: `apt-get install wrk`), else autocannon.
 */
export async function loadTest(
  url: string,
  opts: { connections: number; seconds: number; headers?: Record<string, string> },
): Promise<LoadResult> {
  const wrk = spawnSync('wrk', ['--version']).error ? undefined : 'wrk';
  if (!wrk) return { ...(await autocannon(url, opts)), tool: 'autocannon' };
  const args = ['-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '--latency'];
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}: ${v}`);
  // Asynchronously: the server under test may live in this very process.
  const { stdout: out } = await execFileAsync('wrk', [...args, url], { encoding: 'utf8' });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const errors = /Socket errors:/.test(out) ? 1 : 0;
  if (!Number.isFinite(rps)) throw new Error(`wrk output not understood: ${out}`);
  return { rps, non2xx, errors, p50: wrkPercentile(out, 50), p99: wrkPercentile(out, 99), tool: 'wrk' };
}

/** A percentile of wrk's `--latency` distribution ("  99%  12.34ms"), in ms. */
function wrkPercentile(out: string, p: number): number {
  const match = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)\\b`, 'm').exec(out);
  if (!match) return NaN;
  return Number(match[1]) * { us: 0.001, ms: 1, s: 1000 }[match[2] as 'us' | 'ms' | 's'];
}

function autocannon(
  url: string,
  opts: { connections: number; seconds: number; headers?: Record<string, string> },
): Promise<Omit<LoadResult, 'tool'>> {
  const args = [
    path.join(repoRoot, 'node_modules/autocannon/autocannon.js'),
    '-j',
    '-c',
    String(opts.connections),
    '-d',
    String(opts.seconds),
  ];
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}=${v}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`autocannon exited ${code}`));
      const r = JSON.parse(out);
      resolve({ rps: r.requests.average, non2xx: r.non2xx, errors: r.errors, p50: r.latency.p50, p99: r.latency.p99 });
    });
  });
}

/**
 * Calls `fn` from `concurrency` loops for about `seconds`; returns operations per second over the time until the last
 * loop finished (a call still running at the deadline counts, and so does the time it took).
 */
export async function closedLoop(fn: () => Promise<unknown>, concurrency: number, seconds: number): Promise<number> {
  const started = performance.now();
  const deadline = started + seconds * 1000;
  let count = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        await fn();
        count++;
      }
    }),
  );
  return count / ((performance.now() - started) / 1000);
}

/**
 * A new, empty PostgreSQL database for one bench section (BENCH_DATABASE_URL, else TEST_DATABASE_URL, else the local
 * cluster).
 */
export async function freshBenchDatabase(name: string): Promise<{ url: string; drop(): Promise<void> }> {
  const { default: pg } = await import('pg');
  const adminUrl =
    process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(statement).finally(() => client.end());
  };
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.href, drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {}) };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

export function request(
  port: number,
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; body: string; ms: number; headers: http.IncomingHttpHeaders }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: url,
        agent,
        headers: { ...headers, ...(payload ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (data += d));
        res.on('end', () =>
          resolve({ status: res.statusCode!, body: data, ms: performance.now() - started, headers: res.headers }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** One user's leads, inserted set-based: ids are UUIDv7-shaped so they sort by creation like real ones. */
export async function seedLeads(client: pg.Pool, userId: string, count: number, companies: number): Promise<void> {
  const batch = 250_000;
  for (let start = 0; start < count; start += batch) {
    await client.query(
      `INSERT INTO leads (id, user_id, first_name, last_name, email, company, job_title, source_url, status,
                          created_at, updated_at)
       SELECT (lpad(to_hex(1700000000000 + g), 12, '0') || '7' || substr(md5(g::text), 1, 3) || '8'
               || substr(md5(g::text), 4, 15))::uuid,
              $1, 'First' || g, 'Last' || g, 'person' || g || '@company' || (g % $4) || '.com',
              'Company ' || (g % $4), 'Engineer', 'https://example.com/people', 'VALID', now(), now()
       FROM generate_series($2::int, $3::int) AS g`,
      [userId, start + 1, Math.min(start + batch, count), companies],
    );
  }
  await client.query('ANALYZE leads');
}

export interface BenchService {
  port: number;
  runtime: Runtime;
  user: { id: string };
  /** The signed-up user's API key as a header. */
  auth: { authorization: string };
  pool: pg.Pool;
  stop(): Promise<void>;
}

/**
 * The service on a fresh PostgreSQL database (`quarry_<name>`), listening on a free port, with one user
 * signed up through the API. `workers: false` leaves background jobs out of what the bench times.
 */
export async function startBenchService(
  name: string,
  options: { workers: boolean; env?: Record<string, string> },
): Promise<BenchService> {
  const database = await freshBenchDatabase(`quarry_${name}`);
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-bench-'));
  const config = loadConfig({
    DATABASE_URL: database.url,
    PORT: String(port),
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    DATABASE_POOL_SIZE: '16',
    ...BENCH_CREDITS,
    ...options.env,
  });
  const runtime = await startRuntime(config, { http: true, workers: options.workers });
  const stop = async () => {
    await runtime.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    await database.drop();
  };
  try {
    const signup = await request(
      port,
      'POST',
      '/api/auth/signup',
      {},
      { email: 'bench@example.com', password: 'bench password', termsAccepted: true, privacyAccepted: true },
    );
    const { user, apiKey } = JSON.parse(signup.body).data;
    const auth = { authorization: `Bearer ${apiKey}` };
    return { port, runtime, user, auth, pool: runtime.deps.database.pool!, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
