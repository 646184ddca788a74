import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { Notifier } from './notify.ts';

export interface EventStream {
  /** The response: listen for `close`, `end()` it when the stream is over. */
  raw: ServerResponse;
  /** `event: <event>` with `data` as JSON. */
  send(event: string, data: unknown): void;
  /** `event: <event>` with `data` already serialized (one line, e.g. a NOTIFY payload that is JSON text). */
  sendText(event: string, data: string): void;
  /** `: <text>`, a comment line clients ignore (keeps proxies from timing the connection out). */
  comment(text: string): void;
  /** `retry: <ms>`, how long a client waits before it reconnects. */
  retry(ms: number): void;
  /** A `: keep-alive` comment every `ms`; returns the function that stops it. */
  keepAlive(ms: number): () => void;
}

/**
 * Takes the response over from Fastify (`reply.hijack()`) and starts a Server-Sent Events stream:
 * status 200 with the event-stream headers (no caching or proxy buffering). Writes once the
 * response has ended or its socket is gone are dropped.
 */
export function openEventStream(reply: FastifyReply): EventStream {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  const write = (text: string) => {
    if (!raw.writableEnded && !raw.destroyed) raw.write(text);
  };
  const stream: EventStream = {
    raw,
    send: (event, data) => write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`),
    sendText: (event, data) => write(`event: ${event}\ndata: ${data}\n\n`),
    comment: (text) => write(`: ${text}\n\n`),
    retry: (ms) => write(`retry: ${ms}\n\n`),
    keepAlive(ms) {
      const timer = setInterval(() => stream.comment('keep-alive'), ms);
      return () => clearInterval(timer);
    },
  };
  return stream;
}

/** Fallback poll for a lost notification; NOTIFY carries every update itself. */
const POLL_MS = 5_000;
const KEEPALIVE_MS = 15_000;

/** What an update stream follows: one row, sent as `event` on every change published on `channel`. */
export interface UpdateStreamSource<Row extends { id: string; status: string }> {
  channel: string;
  /** The SSE event name (`job`, `markdown_export`). */
  event: string;
  /** States after which the stream ends. */
  terminal: ReadonlySet<string>;
  /** The row as it is now (undefined once deleted: `event: deleted`, then the end). */
  load(id: string): Promise<Row | undefined>;
  /** The event's data, as published on `channel` (JSON text with `id` and `status`). */
  payload(row: Row): string;
}

/**
 * Server-Sent Events of one row (a job, an export) until it is finished: the current state first, then every
 * update published on the channel (any process), with a poll for lost notifications; ended at shutdown.
 */
export function createUpdateStreams<Row extends { id: string; status: string }>(
  app: { addHook(name: 'preClose', hook: () => Promise<void>): unknown },
  notifier: Notifier,
  source: UpdateStreamSource<Row>,
) {
  const open = new Set<() => void>();
  // Streams never end by themselves while work runs: close them so shutdown is not held up.
  app.addHook('preClose', async () => {
    for (const end of [...open]) end();
  });

  return async function stream(reply: FastifyReply, first: Row): Promise<void> {
    const events = openEventStream(reply);
    const raw = events.raw;
    let last = '';
    let ended = false;
    const cleanups: Array<() => void> = [];
    const end = () => {
      if (ended) return;
      ended = true;
      for (const cleanup of cleanups) cleanup();
      open.delete(end);
      raw.end();
    };
    open.add(end);
    const send = (payload: string, status: string) => {
      if (ended || payload === last) return;
      last = payload;
      events.sendText(source.event, payload);
      if (source.terminal.has(status)) end();
    };
    const refresh = async () => {
      const row = await source.load(first.id).catch(() => undefined);
      if (ended) return;
      if (!row) {
        events.send('deleted', { id: first.id });
        return end();
      }
      send(source.payload(row), row.status);
    };

    raw.on('close', end);
    events.retry(2000);
    send(source.payload(first), first.status);
    if (ended) return;
    // The notification is the update: no read per event and subscriber.
    const unsubscribe = await notifier.subscribe(source.channel, (payload) => {
      const update = JSON.parse(payload) as { id: string; status: string };
      if (update.id === first.id) send(payload, update.status);
    });
    const poll = setInterval(() => void refresh(), POLL_MS);
    // Updates sent while the listener was down are lost: read the row again at once.
    const offReconnect = notifier.onReconnect(() => void refresh());
    cleanups.push(unsubscribe, offReconnect, () => clearInterval(poll), events.keepAlive(KEEPALIVE_MS));
    if (ended) for (const cleanup of cleanups) cleanup();
  };
}
