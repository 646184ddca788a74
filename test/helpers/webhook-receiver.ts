/**
 * A webhook receiver on loopback, as a user would run one: it records every request (headers and raw
 * body) and answers what `respond` says. Tests verify the requests with the `standardwebhooks` package.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The raw header names and values, in the order they arrived. */
  rawHeaders: string[];
  body: string;
  /** Date.now() when the body had arrived. */
  at: number;
  /** Set once the answer was written completely (not when the sender went away first). */
  answered: boolean;
}

/** What to answer: a status and body, after `delayMs`; or `hang` (never answer; the sender times out). */
export type Answer = { status: number; body?: string; delayMs?: number } | 'hang';

export interface WebhookReceiver {
  url: string;
  requests: ReceivedRequest[];
  /** Changes the answer for the requests that follow. */
  respond(answer: Answer | ((request: ReceivedRequest, index: number) => Answer)): void;
  /** Resolves once `count` requests have arrived. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(initial: Answer = { status: 200, body: 'ok' }): Promise<WebhookReceiver> {
  let answer: Answer | ((request: ReceivedRequest, index: number) => Answer) = initial;
  const requests: ReceivedRequest[] = [];
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
        answered: false,
      };
      requests.push(received);
      const a = typeof answer === 'function' ? answer(received, requests.length - 1) : answer;
      if (a === 'hang') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      res.on('finish', () => (received.answered = true));
      const reply = () => {
        if (res.destroyed) return;
        res.writeHead(a.status, { 'content-type': 'text/plain' });
        res.end(a.body ?? '');
      };
      if (a.delayMs) setTimeout(reply, a.delayMs);
      else reply();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    requests,
    respond(next) {
      answer = next;
    },
    async waitFor(count, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (requests.length < count) {
        if (Date.now() > deadline) throw new Error(`${requests.length} of ${count} webhook requests arrived`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return requests.slice(0, count);
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Verifies a request as a receiver does (`Webhook.verify`); returns the parsed payload, or throws. */
export function verifyWith(secret: string, request: ReceivedRequest): { type: string; timestamp: string; data: any } {
  return new Webhook(secret).verify(request.body, request.headers as Record<string, string>) as never;
}
