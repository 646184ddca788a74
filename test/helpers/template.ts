import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { openDatabase } from '../../src/db/client.ts';
import { migrate } from '../../src/db/migrate.ts';
import { startBoss } from '../../src/queue/queues.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tmpDir = path.join(root, '.tmp');

/** Hash of everything that shapes the schema: a template is rebuilt only when it changes. */
function schemaHash(): string {
  const h = crypto.createHash('sha256');
  const dir = path.join(root, 'src/db/migrations');
  for (const f of fs.readdirSync(dir, { recursive: true }).map(String).sort()) {
    const full = path.join(dir, f);
    if (fs.statSync(full).isFile()) h.update(f).update(fs.readFileSync(full));
  }
  h.update(fs.readFileSync(path.join(root, 'src/queue/queues.ts')));
  // What migrate() seeds: the free-mail table follows this code and the installed list.
  for (const f of ['src/db/seed.ts', 'src/db/free-mail-domains.ts', 'node_modules/email-providers/all.json'])
    h.update(fs.readFileSync(path.join(root, f)));
  h.update(JSON.parse(fs.readFileSync(path.join(root, 'node_modules/pg-boss/package.json'), 'utf8')).version);
  return h.digest('hex').slice(0, 12);
}

/** A migrated PGlite (schema + pg-boss) dumped to a file; each test file loads a copy (~0.4 s). */
export async function ensurePgliteTemplate(): Promise<string> {
  const file = path.join(tmpDir, `pglite-template-${schemaHash()}.tar.gz`);
  if (fs.existsSync(file)) return file;
  fs.mkdirSync(tmpDir, { recursive: true });
  const database = await openDatabase({});
  await migrate(database);
  const boss = await startBoss(database, { schedule: false });
  await boss.stop({ graceful: false });
  const dump = await database.pglite!.dumpDataDir('gzip');
  const tmp = `${file}.${process.pid}`;
  fs.writeFileSync(tmp, Buffer.from(await dump.arrayBuffer()));
  fs.renameSync(tmp, file);
  await database.close();
  return file;
}

export const withDatabase = (url: string, name: string) => {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
};

/** A migrated PostgreSQL database used as CREATE DATABASE … TEMPLATE for each test file. */
export async function ensurePostgresTemplate(adminUrl: string): Promise<string> {
  const name = `quarry_tpl_${schemaHash()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return name;
    const building = `${name}_build_${process.pid}`;
    await admin.query(`CREATE DATABASE "${building}"`);
    const url = withDatabase(adminUrl, building);
    const database = await openDatabase({ databaseUrl: url, poolSize: 2 });
    await migrate(database);
    const boss = await startBoss(database, { databaseUrl: url, schedule: false });
    await boss.stop({ graceful: false });
    await database.close();
    await admin.query(`ALTER DATABASE "${building}" RENAME TO "${name}"`).catch(async (err) => {
      await admin.query(`DROP DATABASE IF EXISTS "${building}" WITH (FORCE)`);
      if (!String(err.message).includes('already exists')) throw err;
    });
    // Old templates from earlier schemas are dropped so they don't pile up (kept when several
    // checkouts with different schemas share this server: QUARRY_TEST_KEEP_TEMPLATES=1).
    if (process.env.QUARRY_TEST_KEEP_TEMPLATES === '1') return name;
    const old = await admin.query(
      `SELECT datname FROM pg_database WHERE datname LIKE 'quarry_tpl_%' AND datname <> $1`,
      [name],
    );
    for (const r of old.rows) await admin.query(`DROP DATABASE IF EXISTS "${r.datname}" WITH (FORCE)`).catch(() => {});
    return name;
  } finally {
    await admin.end();
  }
}
