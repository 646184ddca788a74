import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx]!;
}

export const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 50);

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

/** Requests/s of a keep-alive load run by autocannon in its own process (so it does not share our event loop). */
export function loadTest(url: string, opts: { connections: number; seconds: number; headers?: Record<string, string> }): Promise<{ rps: number; p99: number; non2xx: number; errors: number }> {
  const args = [path.join(repoRoot, 'node_modules/autocannon/autocannon.js'), '-j', '-c', String(opts.connections), '-d', String(opts.seconds)];
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}=${v}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`autocannon exited ${code}`));
      const r = JSON.parse(out);
      resolve({ rps: r.requests.average, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors });
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
