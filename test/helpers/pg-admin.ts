import pg from 'pg';

/**
 * Database outages for tests on PostgreSQL, always on the test file's own throwaway database (never
 * the admin database of TEST_DATABASE_URL): terminated backends, connections refused for a while.
 */
export interface PgAdmin {
  /** Name of the throwaway database. */
  name: string;
  /** A query on a connection to the admin database (it stays usable while the test database refuses connections). */
  query<T extends Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  /** Backends of the test database (other than the admin's own) that `where` selects in pg_stat_activity. */
  backends(
    where: string,
    params?: unknown[],
  ): Promise<Array<{ pid: number; application_name: string; wait_event_type: string | null }>>;
  /** Terminates the backends of the test database that `where` selects; returns how many. */
  terminate(where: string, params?: unknown[]): Promise<number>;
  /** ALTER DATABASE … ALLOW_CONNECTIONS: new connections are refused while false. */
  allowConnections(allow: boolean): Promise<void>;
  close(): Promise<void>;
}

export async function pgAdmin(testDatabaseUrl: string): Promise<PgAdmin> {
  const name = decodeURIComponent(new URL(testDatabaseUrl).pathname.slice(1));
  // The helpers' own throwaway databases only (test/helpers/db.ts names them).
  if (!name.startsWith('quarry_t_')) throw new Error(`refusing to disturb database ${name}`);
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await client.connect();
  const query = async <T extends Record<string, unknown>>(text: string, params: unknown[] = []) =>
    (await client.query(text, params)).rows as T[];
  const activity = `FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`;
  return {
    name,
    query,
    backends: (where, params = []) =>
      query(`SELECT pid, application_name, wait_event_type ${activity} AND (${where})`, [name, ...params]),
    async terminate(where, params = []) {
      const rows = await query<{ ok: boolean }>(`SELECT pg_terminate_backend(pid) AS ok ${activity} AND (${where})`, [
        name,
        ...params,
      ]);
      return rows.filter((r) => r.ok).length;
    },
    async allowConnections(allow) {
      await query(`ALTER DATABASE ${pg.escapeIdentifier(name)} ALLOW_CONNECTIONS ${allow}`);
    },
    close: () => client.end(),
  };
}
