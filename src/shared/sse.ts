import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

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
