import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What the loopback stubs of the outreach platforms share (test/helpers/instantly-stub.ts, smartlead-stub.ts): the
 * request log, the JSON plumbing, the listening server and webhook deliveries. Each stub keeps its own wire format
 * (paths, auth, error bodies, validation).
 */
export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** A running platform stub: its base URL, its state, every request, and webhook deliveries in its shape. */
export interface PlatformStub<State> {
  /** The platform's API base URL (the setting that points Quarry at it). */
  url: string;
  state: State;
  requests: RecordedRequest[];
  /** POSTs one webhook delivery shaped as the platform's, its common fields filled in; answers the receiver's. */
  deliverWebhook(url: string, event: Record<string, unknown>): Promise<{ status: number; body: string }>;
  close(): Promise<void>;
}

/** A failure the stub answers with `status` in its platform's error shape. */
export class HttpFail extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export interface StubRequest {
  req: http.IncomingMessage;
  url: URL;
  raw: string;
  /** The parsed JSON body; the raw text when it is not JSON; undefined when empty. */
  body: any;
  send(status: number, value: unknown): void;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Listens on 127.0.0.1 and hands each request, its body read and parsed, to `handle`. */
export async function listenStub(handle: (request: StubRequest) => Promise<void> | void) {
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://stub');
    const raw = await readBody(req);
    let body: any;
    try {
      body = raw.length > 0 ? JSON.parse(raw) : undefined;
    } catch {
      body = raw;
    }
    const send = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(value));
    };
    await handle({ req, url, raw, body, send });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Records a request as the test reads it back. */
export const recordOf = (req: http.IncomingMessage, url: URL, path: string, body: unknown): RecordedRequest => ({
  method: req.method ?? 'GET',
  path,
  query: Object.fromEntries(url.searchParams),
  headers: req.headers,
  body,
});

/** POSTs one webhook delivery as the platform does (JSON, no signature); answers the receiver's status and body. */
export async function deliverJson(target: string, payload: unknown): Promise<{ status: number; body: string }> {
  const res = await fetch(target, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(payload),
  });
  return { status: res.status, body: await res.text() };
}
