import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import type { Database } from './client.ts';
import * as schema from './schema/index.ts';
import { syncFreeEmailDomains } from './seed.ts';

const migrationsFolder = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

/** Applies pending migrations; on PostgreSQL under an advisory lock so concurrent starts don't race. */
export async function migrate(database: Database): Promise<void> {
  if (database.kind === 'pglite') {
    await migratePglite(database.db as never, { migrationsFolder });
    await syncFreeEmailDomains(database.db);
    return;
  }
  const client = await database.pool!.connect();
  try {
    await client.query('SELECT pg_advisory_lock(7231001)');
    await migratePg(drizzlePg(client, { schema }), { migrationsFolder });
    await syncFreeEmailDomains(database.db);
  } finally {
    await client.query('SELECT pg_advisory_unlock(7231001)').catch(() => {});
    client.release();
  }
}
