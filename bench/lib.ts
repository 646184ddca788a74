import { execFile, spawn, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

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

/**
 * Requests/s of a keep-alive load from another process: wrk when installed (a C client, so more of
 * a 2-core machine is left to the server: `apt-get install wrk`), else autocannon.
 */
export async function loadTest(
  url: string,
  opts: { connections: number; seconds: number; headers?: Record<string, string> },
): Promise<{ rps: number; non2xx: number; errors: number; tool: string }> {
  const wrk = spawnSync('wrk', ['--version']).error ? undefined : 'wrk';
  if (!wrk) return { ...(await autocannon(url, opts)), tool: 'autocannon' };
  const args = ['-t1', `-c${opts.connections}`, `-d${opts.seconds}s`];
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}: ${v}`);
  // Asynchronously: the server under test may live in this very process.
  const { stdout: out } = await execFileAsync('wrk', [...args, url], { encoding: 'utf8' });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const errors = /Socket errors:/.test(out) ? 1 : 0;
  if (!Number.isFinite(rps)) throw new Error(`wrk output not understood: ${out}`);
  return { rps, non2xx, errors, tool: 'wrk' };
}

function autocannon(
  url: string,
  opts: { connections: number; seconds: number; headers?: Record<string, string> },
): Promise<{ rps: number; non2xx: number; errors: number }> {
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
      resolve({ rps: r.requests.average, non2xx: r.non2xx, errors: r.errors });
    });
  });
}

/** Calls `fn` from `concurrency` loops for `seconds`; returns operations per second. */
export async function closedLoop(fn: () => Promise<unknown>, concurrency: number, seconds: number): Promise<number> {
  const deadline = performance.now() + seconds * 1000;
  let count = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        await fn();
        count++;
      }
    }),
  );
  return count / seconds;
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
