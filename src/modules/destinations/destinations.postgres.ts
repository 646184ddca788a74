/**
 * PostgreSQL destinations: a table in another database, created when missing (the lead columns, id and
 * timestamps). Each batch is COPYed into a temporary staging table and moved into the table by one INSERT …
 * SELECT in the same transaction: `append` skips leads the table already holds (primary key: the lead id), so a
 * batch repeated after a crash adds nothing; `upsert` keeps one row per email, the newest lead's. An append batch
 * whose leads are all new goes straight into the table (one COPY, as fast as a bare one).
 * The host is resolved and checked by the SSRF guard first, and the connection goes to the checked address.
 */
import dns from 'node:dns';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { ipLiteral, privateAddressReason, SsrfBlockedError } from '../../shared/ssrf.ts';
import { type PostgresConfig, parsePostgresUrl } from './destinations.schemas.ts';
import {
  type CopyFormat,
  type CopySource,
  LEAD_COLUMNS,
  type PushContext,
  type PushLead,
  type Target,
  TargetError,
} from './destinations.target.ts';

const CONNECT_TIMEOUT_MS = 10_000;
const STAGE = 'quarry_push_stage';

/** A batch, opened once per COPY of it (a batch refused by the fast path is read again for the slow one). */
/** The batch's source (Quarry's database) failed, not the destination. */
class SourceFailure extends Error {
  constructor(cause: unknown) {
    super('reading the leads failed', { cause });
  }
}

interface Feed {
  format: CopyFormat;
  open(): Promise<Readable>;
}

interface Endpoint {
  host: string;
  port: number;
  database?: string;
  user?: string;
  password?: string;
  ssl: boolean;
}

function endpointOf(config: PostgresConfig): Endpoint {
  if (!config.connectionString) {
    return {
      host: config.host!,
      port: config.port ?? 5432,
      database: config.database,
      user: config.user,
      password: config.password,
      ssl: config.ssl ?? false,
    };
  }
  const parsed = parsePostgresUrl(config.connectionString);
  // Checked on create; a stored string that no longer parses is the destination's fault, said plainly.
  if (typeof parsed === 'string') throw new Error(`connectionString: ${parsed}`);
  const ssl = config.ssl ?? ['require', 'verify-ca', 'verify-full'].includes(parsed.sslmode ?? '');
  return {
    host: parsed.host,
    port: parsed.port,
    database: parsed.database,
    user: parsed.user,
    password: parsed.password,
    ssl,
  };
}

/** The one address the connection goes to: checked (unless private networks are allowed), never resolved again. */
async function checkedAddress(host: string, allowPrivateNetwork: boolean): Promise<string> {
  if (host.startsWith('/')) {
    if (allowPrivateNetwork) return host;
    throw new SsrfBlockedError(host, 'a local socket');
  }
  const literal = ipLiteral(host);
  const addresses = literal ? [literal] : (await dns.promises.lookup(host, { all: true })).map((a) => a.address);
  if (!allowPrivateNetwork) {
    for (const address of addresses) {
      const reason = privateAddressReason(address);
      if (reason) throw new SsrfBlockedError(address, reason, host);
    }
  }
  return addresses[0]!;
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

async function connect(config: PostgresConfig, allowPrivateNetwork: boolean): Promise<pg.Client> {
  let endpoint: Endpoint;
  try {
    endpoint = endpointOf(config);
  } catch (error) {
    throw new TargetError((error as Error).message);
  }
  let client: pg.Client | undefined;
  try {
    const address = await checkedAddress(endpoint.host, allowPrivateNetwork);
    client = new pg.Client({
      host: address,
      port: endpoint.port,
      database: endpoint.database,
      user: endpoint.user,
      password: endpoint.password,
      // TLS verifies the certificate against the name given, not the address connected to.
      ssl: endpoint.ssl ? { servername: ipLiteral(endpoint.host) ? undefined : endpoint.host } : false,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      application_name: 'quarry-destination',
    });
    client.on('error', () => {}); // a dropped connection fails the statement running on it
    await client.connect();
    return client;
  } catch (error) {
    await client?.end().catch(() => {});
    if (error instanceof SsrfBlockedError) throw new TargetError(error.message);
    throw new TargetError(`PostgreSQL ${endpoint.host}:${endpoint.port}: ${(error as Error).message}`);
  }
}

/** The check on create: the server takes the credentials. */
export async function checkPostgres(config: PostgresConfig, allowPrivateNetwork: boolean): Promise<void> {
  const client = await connect(config, allowPrivateNetwork);
  await client.end().catch(() => {});
}

/** A COPY CSV value: quoted (so an empty string stays one, unlike NULL), quotes doubled. */
const quoted = (text: string) => (text.includes('"') ? `"${text.replace(/"/g, '""')}"` : `"${text}"`);
const arrayLiteral = (items: string[]) =>
  `{${items.map((t) => `"${t.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`).join(',')}}`;
const cell = (value: string | null) => (value === null ? '' : quoted(value));

/** COPY's CSV of a batch, in LEAD_COLUMNS order (the hot loop of a push: one template per row, no lookups). */
export function copyCsv(leads: PushLead[]): string {
  let out = '';
  for (const l of leads)
    out +=
      `${cell(l.id)},${cell(l.firstName)},${cell(l.lastName)},${cell(l.email)},${cell(l.phone)},` +
      `${cell(l.company)},${cell(l.jobTitle)},${cell(l.status)},${quoted(arrayLiteral(l.tags))},` +
      `${cell(l.sourceUrl)},${cell(l.createdAt)}\n`;
  return out;
}

export function postgresTarget(
  config: PostgresConfig,
  allowPrivateNetwork: boolean,
  context: PushContext,
): Target<string> {
  const table = `${quoteIdent(config.schema ?? 'public')}.${quoteIdent(config.table)}`;
  const columns = LEAD_COLUMNS.map(([c]) => c);
  const list = columns.join(', ');
  const updates = [...columns.filter((c) => c !== 'id' && c !== 'email'), 'id']
    .map((c) => `${c} = excluded.${c}`)
    .concat('updated_at = now()')
    .join(', ');
  const move =
    context.mode === 'append'
      ? [`INSERT INTO ${table} (${list}) SELECT ${list} FROM ${STAGE} ON CONFLICT (id) DO NOTHING`]
      : [
          // A lead whose email changed leaves its old row first (its id moves to the row of the new email).
          `DELETE FROM ${table} t USING ${STAGE} s WHERE t.id = s.id AND t.email IS DISTINCT FROM s.email`,
          `INSERT INTO ${table} AS t (${list}) SELECT DISTINCT ON (email) ${list} FROM ${STAGE} ` +
            `WHERE email IS NOT NULL ORDER BY email, id DESC ` +
            `ON CONFLICT (email) DO UPDATE SET ${updates} WHERE t.id <= excluded.id`,
          `INSERT INTO ${table} AS t (${list}) SELECT ${list} FROM ${STAGE} WHERE email IS NULL ` +
            `ON CONFLICT (id) DO UPDATE SET ${updates}`,
        ];
  let client: pg.Client | undefined;
  let staging = false;

  /** A COPY of a batch into `into`, from `feed`; answers the rows COPY stored. */
  async function copy(c: pg.Client, into: string, feed: Feed): Promise<number> {
    const input = await feed.open().catch((error) => Promise.reject(new SourceFailure(error)));
    const sink = c.query(copyFrom(`COPY ${into} (${list}) FROM STDIN (FORMAT ${feed.format})`));
    // Whichever side fails first is the cause; the other is then destroyed with its error.
    let first: 'source' | 'sink' | undefined;
    input.once('error', () => (first ??= 'source'));
    sink.once('error', () => (first ??= 'sink'));
    try {
      await pipeline(input, sink);
    } catch (error) {
      throw first === 'source' ? new SourceFailure(error) : error;
    }
    return sink.rowCount;
  }

  /**
   * Binary COPY (no text to parse at either end) when the table's columns have exactly the source's types and both
   * databases the same encoding; CSV otherwise (a table made by hand with other types: the server converts).
   */
  async function formatFor(c: pg.Client, source: CopySource): Promise<CopyFormat> {
    const { rows } = await c.query<{ encoding: string; types: Record<string, string> | null }>(
      `SELECT current_setting('server_encoding') AS encoding, json_object_agg(attname, atttypid::regtype::text) AS types
       FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`,
      [table],
    );
    const { encoding, types } = rows[0]!;
    const same = encoding === source.encoding && source.columns.every(([name, type]) => types?.[name] === type);
    return same ? 'binary' : 'csv';
  }
  let format: Promise<CopyFormat> | undefined;

  /**
   * Append's fast path: the batch COPYed straight into the table, one statement (atomic by itself: no BEGIN and
   * COMMIT round trips). A lead the table holds already (a batch repeated after a crash, leads pushed before)
   * breaks the primary key and the COPY stores nothing: undefined sends the batch the staging way, which skips them.
   */
  async function copyStraight(c: pg.Client, feed: Feed): Promise<number | undefined> {
    try {
      return await copy(c, table, feed);
    } catch (error) {
      if ((error as { code?: string }).code === '23505') return undefined;
      throw error;
    }
  }

  async function send(feed: Feed): Promise<number> {
    const c = client!;
    try {
      if (context.mode === 'append') {
        const rows = await copyStraight(c, feed);
        if (rows !== undefined) return rows;
      }
      if (!staging) {
        await c.query(
          `CREATE TEMP TABLE IF NOT EXISTS ${STAGE} (id uuid, first_name text, last_name text, email text, ` +
            'phone text, company text, job_title text, status text, tags text[], source_url text, ' +
            'created_at timestamptz) ON COMMIT DELETE ROWS',
        );
        staging = true;
      }
      await c.query('BEGIN');
      const rows = await copy(c, STAGE, feed);
      for (const statement of move) await c.query(statement);
      await c.query('COMMIT');
      return rows;
    } catch (error) {
      await c.query('ROLLBACK').catch(() => {});
      // Quarry's own database failing is no fault of the destination's: an internal error, not the user's to fix.
      if (error instanceof SourceFailure) throw error.cause;
      throw new TargetError(`PostgreSQL table ${config.table}: ${(error as Error).message}`);
    }
  }

  return {
    batchSize: 10_000,
    async open() {
      client = await connect(config, allowPrivateNetwork);
      try {
        if (config.schema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(config.schema)}`);
        await client.query(
          `CREATE TABLE IF NOT EXISTS ${table} (id uuid PRIMARY KEY, first_name text, last_name text, email text, ` +
            'phone text, company text, job_title text, status text, tags text[], source_url text, ' +
            'created_at timestamptz, pushed_at timestamptz NOT NULL DEFAULT now(), ' +
            'updated_at timestamptz NOT NULL DEFAULT now())',
        );
        if (context.mode === 'upsert') {
          const index = quoteIdent(`${config.table.slice(0, 50)}_email_key`);
          await client.query(`CREATE UNIQUE INDEX IF NOT EXISTS ${index} ON ${table} (email)`);
        }
      } catch (error) {
        throw new TargetError(`PostgreSQL table ${config.table}: ${(error as Error).message}`);
      }
    },
    encode: copyCsv,
    async write(body) {
      await send({ format: 'csv', open: async () => Readable.from([body]) });
    },
    async writeCopy(source) {
      format ??= formatFor(client!, source).catch((error) => {
        throw new TargetError(`PostgreSQL table ${config.table}: ${(error as Error).message}`);
      });
      const f = await format;
      return send({ format: f, open: () => source.open(f) });
    },
    async close() {
      await client?.end().catch(() => {});
      client = undefined;
    },
  };
}
