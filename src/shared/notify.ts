import pg from 'pg';
import type { Logger } from 'pino';
import type { Database } from '../db/client.ts';

/** Cross-process notifications over PostgreSQL LISTEN/NOTIFY (cache invalidation and the like). */
export interface Notifier {
  publish(channel: string, payload: string): Promise<void>;
  /**
   * Resolves, once listening, to a function that removes this handler. While the database cannot be
   * reached it resolves after the first failed attempt: the listener keeps retrying, and `onReconnect`
   * handlers run once it listens again.
   */
  subscribe(channel: string, handler: (payload: string) => void): Promise<() => void>;
  /**
   * `handler` runs each time the listener is back after losing its connection (or after a first
   * attempt failed): notifications sent meanwhile are lost, so whatever they would have refreshed
   * (caches, watched rows) must be re-read. Returns the function that removes it.
   */
  onReconnect(handler: () => void): () => void;
  close(): Promise<void>;
}

export interface NotifierOptions {
  logger?: Pick<Logger, 'info' | 'warn'>;
  /** Pause before the first reconnect attempt; it doubles per failed attempt up to `retryMaxMs`. */
  retryMinMs?: number;
  retryMaxMs?: number;
}

/** application_name of the listener connection (one per process), as seen in pg_stat_activity. */
export const LISTENER_APPLICATION_NAME = 'quarry-listen';

export function createNotifier(database: Database, databaseUrl?: string, options: NotifierOptions = {}): Notifier {
  const handlers = new Map<string, Array<(payload: string) => void>>();
  const reconnectHandlers = new Set<() => void>();
  const dispatch = (channel: string, payload: string) => {
    for (const handler of handlers.get(channel) ?? []) handler(payload);
  };
  const addHandler = (channel: string, handler: (payload: string) => void) => {
    handlers.set(channel, [...(handlers.get(channel) ?? []), handler]);
    // The LISTEN stays for the process's life; only the handler goes (channels are few and fixed).
    return () =>
      void handlers.set(
        channel,
        (handlers.get(channel) ?? []).filter((h) => h !== handler),
      );
  };
  const onReconnect = (handler: () => void) => {
    reconnectHandlers.add(handler);
    return () => void reconnectHandlers.delete(handler);
  };
  const publish = async (channel: string, payload: string) => {
    await database.query('SELECT pg_notify($1, $2)', [channel, payload]);
  };

  if (database.pglite) {
    // Embedded: one process, notifications are in-process and never lost.
    const pglite = database.pglite;
    const unlistens: Array<() => Promise<void>> = [];
    return {
      publish,
      onReconnect,
      async subscribe(channel, handler) {
        const isNew = !handlers.has(channel);
        const unsubscribe = addHandler(channel, handler);
        if (isNew) unlistens.push(await pglite.listen(channel, (payload) => dispatch(channel, payload)));
        return unsubscribe;
      },
      async close() {
        for (const u of unlistens) await u().catch(() => {});
      },
    };
  }
  if (!databaseUrl) {
    return {
      publish,
      onReconnect,
      subscribe: async (channel, handler) => addHandler(channel, handler),
      close: async () => {},
    };
  }
  const listener = createListener(databaseUrl, {
    channels: () => handlers.keys(),
    dispatch,
    reconnected: () => {
      for (const handler of reconnectHandlers) {
        try {
          handler();
        } catch (err) {
          options.logger?.warn({ err }, 'a notification reconnect handler failed');
        }
      }
    },
    ...options,
  });
  return {
    publish,
    onReconnect,
    async subscribe(channel, handler) {
      const unsubscribe = addHandler(channel, handler);
      await listener.listen(channel);
      return unsubscribe;
    },
    close: () => listener.close(),
  };
}

interface ListenerOptions extends NotifierOptions {
  channels(): Iterable<string>;
  dispatch(channel: string, payload: string): void;
  reconnected(): void;
}

/**
 * One LISTEN connection per process. Every operation on it runs one at a time (pg refuses concurrent
 * queries on one client); a lost connection is retried with exponential backoff for as long as the
 * process lives, and once it listens again `reconnected` tells subscribers to re-read what they cache.
 */
function createListener(connectionString: string, options: ListenerOptions) {
  const { logger, retryMinMs = 250, retryMaxMs = 10_000 } = options;
  let client: pg.Client | undefined;
  const listening = new Set<string>();
  let closed = false;
  let missed = false; // notifications may have been lost since the last connection listened
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  const dead = new WeakSet<pg.Client>();

  const serially = (op: () => Promise<void>): Promise<void> => {
    const run = queue.then(op);
    queue = run.catch(() => {});
    return run;
  };

  const listenSql = (channel: string) => `LISTEN ${pg.escapeIdentifier(channel)}`;

  function lost(c: pg.Client, err?: unknown): void {
    if (dead.has(c)) return;
    dead.add(c);
    c.end().catch(() => {});
    if (client === c) {
      client = undefined;
      listening.clear();
    }
    missed = true;
    if (closed || retryTimer) return;
    // Jittered, so that many processes do not all come back at the same instant.
    const ceiling = Math.min(retryMaxMs, retryMinMs * 2 ** Math.min(failures, 20));
    const delay = Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
    failures++;
    logger?.warn(
      { err, attempt: failures, retryInMs: delay },
      'notification listener lost its database connection; reconnecting',
    );
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void serially(connect);
    }, delay);
    retryTimer.unref();
  }

  async function connect(): Promise<void> {
    if (closed || client) return;
    // Bounded connect and LISTEN: a hung attempt would hold up every subscribe queued behind it.
    const c = new pg.Client({
      connectionString,
      application_name: LISTENER_APPLICATION_NAME,
      keepAlive: true,
      connectionTimeoutMillis: 10_000,
      query_timeout: 10_000,
    });
    c.on('notification', (msg) => options.dispatch(msg.channel, msg.payload ?? ''));
    c.on('error', (err) => lost(c, err));
    // Before it listens, a failed connection rejects the attempt below, which reports it with its cause.
    c.on('end', () => client === c && lost(c));
    const channels = [...options.channels()];
    try {
      await c.connect();
      for (const channel of channels) await c.query(listenSql(channel));
    } catch (err) {
      return lost(c, err);
    }
    if (closed || dead.has(c)) return void c.end().catch(() => {});
    client = c;
    for (const channel of channels) listening.add(channel);
    if (failures > 0) logger?.info({ attempts: failures }, 'notification listener reconnected');
    failures = 0;
    if (missed) {
      missed = false;
      options.reconnected();
    }
  }

  return {
    /** Resolves once `channel` is listened to, or once an attempt failed (a retry is then scheduled). */
    listen: (channel: string) =>
      serially(async () => {
        // While a retry waits, that retry will listen to every channel: no attempt of our own.
        if (!client && !retryTimer) await connect();
        const c = client;
        if (!c || listening.has(channel)) return;
        try {
          await c.query(listenSql(channel));
          listening.add(channel);
        } catch (err) {
          lost(c, err);
        }
      }),
    async close(): Promise<void> {
      closed = true;
      clearTimeout(retryTimer);
      await queue;
      const c = client;
      client = undefined;
      if (c) {
        dead.add(c);
        await c.end().catch(() => {});
      }
    },
  };
}
