import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { type SQL, sql } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { type PgDatabase, PgDialect, type PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import pg from 'pg';
import { acquireDataDirLock } from './lock.ts';
import { type EmbeddedDatabase, openPgliteWorker } from './pglite-worker.ts';
import { type PipelineOutcome, type PipelineStep, runPipeline } from './pipeline.ts';
import * as schema from './schema/index.ts';

export type Schema = typeof schema;
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
/** A transaction handle is used wherever a Db is. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

export interface Database {
  kind: 'pglite' | 'postgres';
  db: Db;
  /** Set in embedded mode: the single PGlite instance, or its worker-thread proxy (pg-boss shares it). */
  pglite?: EmbeddedDatabase;
  /**
   * Set in embedded mode: a write transaction as one list of statements (src/db/pipeline.ts), one message to the
   * worker thread. PostgreSQL has none: its lock waits are per row, not the whole database's.
   */
  pipeline?(steps: PipelineStep[]): Promise<PipelineOutcome>;
  /** Set on PostgreSQL: the shared pool. */
  pool?: pg.Pool;
  /** Raw parameterised query, used where an ORM would only add cost (benchmarks, health). */
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

// Dates come back as JS Date from both drivers; bigint counts (count(*)) as numbers where safe.
pg.types.setTypeParser(20, (v) => Number(v));

/**
 * PGlite's WASM heap holds PostgreSQL's shared buffers and never gives memory back: the server
 * default (128 MB) alone keeps the idle process above 500 MB. The files stay in the OS page cache,
 * so a smaller buffer pool costs little for one embedded process.
 */
const EMBEDDED_POSTGRESQL_CONF = ['shared_buffers=32MB', 'maintenance_work_mem=32MB'];

export interface OpenOptions {
  databaseUrl?: string;
  dataDir?: string;
  /** In-memory PGlite restored from a dump (tests). */
  loadDataDir?: Blob | File;
  poolSize?: number;
  /** Embedded with a dataDir or a dump: run PGlite in a worker thread (PGLITE_WORKER), off the service's event loop. */
  worker?: boolean;
}

export async function openDatabase(options: OpenOptions): Promise<Database> {
  if (options.databaseUrl) return openPostgres(options.databaseUrl, options.poolSize ?? 10);
  return openPglite(options);
}

async function openPostgres(connectionString: string, max: number): Promise<Database> {
  const pool = new pg.Pool({ connectionString, max, application_name: 'quarry' });
  pool.on('error', () => {}); // idle-client errors surface on the next query instead of crashing
  // A checked-out client (a transaction) has no pool listener: a connection lost mid-transaction
  // would be an uncaught 'error' that ends the process. Its queries reject; release() drops it.
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = drizzlePg(pool, { schema }) as unknown as Db;
  return {
    kind: 'postgres',
    db,
    pool,
    async query(text, params) {
      return (await pool.query(text, params as unknown[])).rows;
    },
    async close() {
      await pool.end();
    },
  };
}

async function openPglite(options: OpenOptions): Promise<Database> {
  let release = () => {};
  let pglite: EmbeddedDatabase;
  if (options.loadDataDir) {
    const open = { loadDataDir: options.loadDataDir };
    pglite = options.worker ? await openPgliteWorker(open) : await PGlite.create(open);
  } else if (options.dataDir) {
    const dir = path.join(options.dataDir, 'pgdata');
    fs.mkdirSync(options.dataDir, { recursive: true });
    release = acquireDataDirLock(options.dataDir);
    try {
      const open = { dataDir: dir, postgresqlconf: EMBEDDED_POSTGRESQL_CONF };
      pglite = options.worker ? await openPgliteWorker(open) : await PGlite.create(open);
    } catch (err) {
      release();
      throw err;
    }
  } else {
    pglite = await PGlite.create();
  }
  const db = drizzlePglite(pglite as PGlite, { schema }) as unknown as Db;
  return {
    kind: 'pglite',
    db,
    pglite,
    pipeline: (steps) => (pglite.pipeline ? pglite.pipeline(steps) : runPipeline(pglite, steps)),
    async query(text, params) {
      return (await pglite.query(text, params as unknown[])).rows as never[];
    },
    async close() {
      try {
        await pglite.close();
      } finally {
        release();
      }
    },
  };
}

export async function ping(database: Database): Promise<void> {
  await database.db.execute(sql`SELECT 1`);
}

const dialect = new PgDialect();

/** A drizzle `sql` query as a pipeline step (src/db/pipeline.ts), its params bound. */
export function pipelineStep(query: SQL, expect?: PipelineStep['expect']): PipelineStep {
  const { sql, params } = dialect.sqlToQuery(query);
  return { sql, params, ...(expect ? { expect } : {}) };
}

/** Runs a raw `sql` query through drizzle on either driver and returns its rows. */
export async function queryRows<T>(db: Db | Tx, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}
