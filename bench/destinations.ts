/**
 * Destinations (docs/destinations.md): 100,000 leads pushed to a PostgreSQL destination through the real service
 * (POST /api/destinations/{id}/push, the pg-boss worker, each batch of 10,000 COPYed out of the leads table straight
 * into the destination's COPY; upsert through a staging table and one INSERT … SELECT), from the push's creation
 * (the POST) to its end by its own timestamps, rows/s, against a bare `COPY` of the same rows (CSV, ready in memory)
 * into a same-shaped table (primary key on id) in the same run. Rounds interleave the two; the ratio is the median of
 * BENCH_DESTINATIONS_ROUNDS rounds (default 3). Target: >= 0.5 for append; upsert (one row per email) reported.
 */
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { freshBenchDatabase, median, type Row, request, seedLeads, startBenchService } from './lib.ts';

const LEADS = 100_000;
const TARGET = 0.5;
const ROUNDS = Number(process.env.BENCH_DESTINATIONS_ROUNDS ?? 3);

const TABLE = `(id uuid PRIMARY KEY, first_name text, last_name text, email text, phone text, company text,
  job_title text, status text, tags text[], source_url text, created_at timestamptz,
  pushed_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now())`;
const COLUMNS = 'id, first_name, last_name, email, phone, company, job_title, status, tags, source_url, created_at';

/** The rows as COPY's CSV, read from the service's database (the baseline's input is ready before its clock). */
async function csvOf(pool: pg.Pool, userId: string): Promise<string> {
  const { rows } = await pool.query(
    `SELECT ${COLUMNS.replace('created_at', 'to_char(created_at AT TIME ZONE \'UTC\', \'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"\') AS created_at')}
     FROM leads WHERE user_id = $1 ORDER BY id DESC`,
    [userId],
  );
  const cell = (v: unknown) =>
    v === null
      ? ''
      : `"${(Array.isArray(v) ? `{${v.map((t) => `"${t}"`).join(',')}}` : String(v)).replace(/"/g, '""')}"`;
  return rows.map((r) => `${Object.values(r).map(cell).join(',')}\n`).join('');
}

async function bareCopy(dest: pg.Client, csv: string, table: string): Promise<number> {
  await dest.query(`CREATE TABLE ${table} ${TABLE}`);
  const started = performance.now();
  await pipeline([csv], dest.query(copyFrom(`COPY ${table} (${COLUMNS}) FROM STDIN (FORMAT csv)`)));
  return LEADS / ((performance.now() - started) / 1000);
}

export async function benchDestinations(): Promise<Row[]> {
  const service = await startBenchService('destinations', { workers: true, env: { ALLOW_PRIVATE_NETWORK: 'true' } });
  const target = await freshBenchDatabase('quarry_dest_bench');
  const dest = new pg.Client({ connectionString: target.url });
  try {
    await dest.connect();
    await seedLeads(service.pool, service.user.id, LEADS, 500);
    const csv = await csvOf(service.pool, service.user.id);
    const call = (method: string, url: string, body?: unknown) =>
      request(service.port, method, url, service.auth, body).then((r) => {
        if (r.status >= 300) throw new Error(`${method} ${url}: ${r.status} ${r.body}`);
        return JSON.parse(r.body).data;
      });

    async function timedPush(table: string, mode: 'append' | 'upsert'): Promise<number> {
      const { destination } = await call('POST', '/api/destinations', {
        name: table,
        type: 'postgres',
        config: { connectionString: target.url, table },
      });
      const { push } = await call('POST', `/api/destinations/${destination.id}/push`, { filter: {}, mode });
      let view = push;
      // Slow polling (each request costs the process running the push), timed by the push's own clock: from its
      // creation (the POST) to its end.
      while (view.status === 'PENDING' || view.status === 'RUNNING') {
        await new Promise((r) => setTimeout(r, 100));
        view = (await call('GET', `/api/destinations/${destination.id}/pushes/${push.id}`)).push;
      }
      const secs = (Date.parse(view.finishedAt) - Date.parse(view.createdAt)) / 1000;
      const rows = Number((await dest.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
      if (view.status !== 'COMPLETED' || view.progress.pushed !== LEADS || rows !== LEADS)
        throw new Error(`push ${view.status}: ${view.progress.pushed} pushed, ${rows} rows (${view.error})`);
      return LEADS / secs;
    }

    const append: number[] = [];
    const upsert: number[] = [];
    const copies: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const copy = await bareCopy(dest, csv, `bare_${round}`);
      const a = await timedPush(`append_${round}`, 'append');
      const u = await timedPush(`upsert_${round}`, 'upsert');
      copies.push(copy);
      append.push(a / copy);
      upsert.push(u / copy);
      console.log(
        `round ${round}: COPY ${Math.round(copy)} rows/s, push append ${Math.round(a)} rows/s (${(a / copy).toFixed(2)}),` +
          ` upsert ${Math.round(u)} rows/s (${(u / copy).toFixed(2)})`,
      );
    }
    const ratio = median(append);
    return [
      {
        name: 'bare COPY of 100k rows (median)',
        value: `${Math.round(median(copies))} rows/s`,
        target: '—',
        pass: null,
      },
      {
        name: 'push append ÷ bare COPY (median)',
        value: `${ratio.toFixed(2)} (${append.map((r) => r.toFixed(2)).join(', ')})`,
        target: `>= ${TARGET}`,
        pass: ratio >= TARGET,
      },
      {
        name: 'push upsert ÷ bare COPY (median)',
        value: `${median(upsert).toFixed(2)} (${upsert.map((r) => r.toFixed(2)).join(', ')})`,
        target: 'reported',
        pass: null,
      },
    ];
  } finally {
    await dest.end().catch(() => {});
    await service.stop();
    await target.drop();
  }
}
