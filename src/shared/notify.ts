import pg from 'pg';
import type { Database } from '../db/client.ts';

/** Cross-process notifications over PostgreSQL LISTEN/NOTIFY (cache invalidation and the like). */
export interface Notifier {
  publish(channel: string, payload: string): Promise<void>;
  /** Resolves, once listening, to a function that removes this handler. */
  subscribe(channel: string, handler: (payload: string) => void): Promise<() => void>;
  close(): Promise<void>;
}

export function createNotifier(database: Database, databaseUrl?: string): Notifier {
  const handlers = new Map<string, Array<(payload: string) => void>>();
  const dispatch = (channel: string, payload: string) => handlers.get(channel)?.forEach((h) => h(payload));
  let client: pg.Client | undefined;
  let closed = false;
  const unlistens: Array<() => Promise<void>> = [];

  async function connect(): Promise<void> {
    if (!databaseUrl || closed) return;
    const c = new pg.Client({ connectionString: databaseUrl, application_name: 'quarry-listen' });
    c.on('notification', (msg) => dispatch(msg.channel, msg.payload ?? ''));
    c.on('error', () => {
      // Reconnect after a dropped connection; the caches are short-lived anyway.
      client = undefined;
      c.end().catch(() => {});
      if (!closed) setTimeout(() => void connect().catch(() => {}), 1000).unref();
    });
    await c.connect();
    for (const channel of handlers.keys()) await c.query(`LISTEN "${channel}"`);
    client = c;
  }

  return {
    async publish(channel, payload) {
      await database.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    async subscribe(channel, handler) {
      const isNew = !handlers.has(channel);
      handlers.set(channel, [...(handlers.get(channel) ?? []), handler]);
      // The LISTEN stays for the process's life; only the handler goes (channels are few and fixed).
      const unsubscribe = () => handlers.set(channel, (handlers.get(channel) ?? []).filter((h) => h !== handler));
      if (!isNew) return unsubscribe;
      if (database.pglite) {
        unlistens.push(await database.pglite.listen(channel, (payload) => dispatch(channel, payload)));
      } else if (client) {
        await client.query(`LISTEN "${channel}"`);
      } else {
        await connect();
      }
      return unsubscribe;
    },
    async close() {
      closed = true;
      for (const u of unlistens) await u().catch(() => {});
      await client?.end().catch(() => {});
    },
  };
}
