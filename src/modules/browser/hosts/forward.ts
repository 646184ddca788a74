/**
 * Forwarding a session's requests to the API process that holds it (scale-out on PostgreSQL): HTTP requests are
 * replayed on the host's listener and its answer relayed as it comes (binary bodies and the SSE stream included);
 * the CDP WebSocket is relayed frame by frame both ways.
 *
 * The target is always an internal URL a host recorded for itself in the browser_hosts table, never an address a
 * user supplied, so it does not go through the SSRF guard that user URLs do.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { request as undiciRequest } from 'undici';
import { type RawData, WebSocket } from 'ws';
import { AppError, type ErrorCode, errorStatus } from '../../../shared/errors.ts';
import { sessionKeyOf } from '../../../shared/session-cookie.ts';

/**
 * Marks a forwarded request: its receiver answers it itself (503 when it does not hold the session after all),
 * so a request crosses at most one hop and never loops between hosts.
 */
export const HOP_HEADER = 'x-quarry-forwarded';

/** The headers a session's request depends on; nothing else crosses (cookies, hop-by-hop headers). */
const REQUEST_HEADERS = ['authorization', 'x-client-ref', 'content-type', 'accept', 'idempotency-key', 'last-event-id'];
/** Response headers that describe the hop, not the answer. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'te', 'trailer']);
/** An action may wait for its own timeout (minutes at most); the SSE log stream has no end. */
const HEADERS_TIMEOUT_MS = 15 * 60_000;

/** Whether a request already crossed a hop (then it is never forwarded again). */
export const wasForwarded = (request: Pick<FastifyRequest, 'headers'>): boolean =>
  request.headers[HOP_HEADER] !== undefined;

/**
 * The headers sent to the host: the ones that matter, the hop mark, and the host and protocol the client used,
 * so that the cdpUrl the host answers points where the client came in (the host honours the protocol only with
 * TRUST_PROXY; PUBLIC_URL makes both the same anyway).
 */
export function forwardedHeaders(request: FastifyRequest): Record<string, string> {
  const headers: Record<string, string> = {
    [HOP_HEADER]: '1',
    host: request.host,
    'x-forwarded-host': request.host,
    'x-forwarded-proto': request.protocol,
  };
  for (const name of REQUEST_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  // A web console request is authenticated by its session cookie, checked here (origin, CSRF token); cookies do
  // not cross, so the host gets the same credential as a bearer key.
  if (!headers.authorization) {
    const sessionKey = sessionKeyOf(request);
    if (sessionKey) headers.authorization = `Bearer ${sessionKey}`;
  }
  return headers;
}

/**
 * The host's address of a request: `base` with the request's path and query only. A request line may be in
 * absolute form (`GET http://elsewhere/api/… HTTP/1.1`), which routes by its path but whose URL names another
 * server: resolved against `base` as it is, it would replace the host's address (an open proxy). Never that.
 */
export function onHost(requestUrl: string, base: string): URL {
  const parsed = URL.parse(requestUrl, 'http://request.invalid');
  const target = new URL(base);
  target.pathname = parsed?.pathname ?? '/';
  target.search = parsed?.search ?? '';
  return target;
}

const unreachable = () =>
  new AppError('SERVICE_UNAVAILABLE', 'The browser host holding this session cannot be reached', {
    headers: { 'retry-after': '5' },
  });

/** Replays a request on `base` (a host's internal URL) and relays its answer; the caller returns the reply. */
export async function forwardHttp(request: FastifyRequest, reply: FastifyReply, base: string): Promise<FastifyReply> {
  const headers = forwardedHeaders(request);
  // Called before validation: a JSON body is the client's JSON as parsed, sent again as JSON; a multipart upload is
  // not parsed before its handler reads it, so its raw stream is sent on as it comes.
  const streamed = request.headers['content-type']?.startsWith('multipart/') === true;
  const hasBody = !streamed && request.body !== undefined && request.method !== 'GET' && request.method !== 'HEAD';
  if (hasBody) headers['content-type'] ??= 'application/json';
  const aborted = new AbortController();
  reply.raw.once('close', () => aborted.abort());
  let answer: Awaited<ReturnType<typeof undiciRequest>>;
  try {
    answer = await undiciRequest(onHost(request.url, base), {
      method: request.method as 'GET',
      headers,
      body: streamed ? request.raw : hasBody ? JSON.stringify(request.body) : undefined,
      signal: aborted.signal,
      headersTimeout: HEADERS_TIMEOUT_MS,
      bodyTimeout: 0,
    });
  } catch (err) {
    if (aborted.signal.aborted) return reply;
    request.log.warn({ err, reqId: request.id, host: base }, 'forwarding a browser request failed');
    throw unreachable();
  }
  reply.code(answer.statusCode);
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) reply.header(name, value);
  }
  return reply.send(answer.body);
}

const sendable = (code: number) =>
  (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);

/** What a forwarded CDP connection may receive from its host in one message (screenshots run to tens of MB). */
const UPSTREAM_MAX_PAYLOAD = 1024 * 1024 * 1024;
const UPGRADE_TIMEOUT_MS = 15_000;
/** What one side may leave unsent before the relay drops it (the multiplexer's bound for a direct client). */
const MAX_BUFFERED_BYTES = 256 * 1024 * 1024;

/** A host's CDP WebSocket, open, with what it sent before the client's side was attached. */
export interface Upstream {
  socket: WebSocket;
  early: Array<[RawData, boolean]>;
  /** Closes the host's side when the client's upgrade never completes. */
  abandon: NodeJS.Timeout;
}

/** The host's refusal of an upgrade, as its JSON error said it (404 for another user's session, 401, 503…). */
async function refusalOf(response: NodeJS.ReadableStream & { statusCode?: number }): Promise<AppError> {
  let text = '';
  for await (const chunk of response) text += chunk;
  try {
    const { error } = JSON.parse(text) as { error: { code: ErrorCode; message: string } };
    if (error.code in errorStatus) return new AppError(error.code, error.message);
  } catch {
    /* not the service's JSON error */
  }
  return unreachable();
}

/**
 * Opens the session's CDP WebSocket on its host before the client's upgrade is accepted, so that a refusal there
 * (token, tenancy, ended) is the client's refusal too, with the same status.
 */
export function openUpstream(base: string, path: string, headers: Record<string, string>): Promise<Upstream> {
  const url = onHost(path, base);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const socket = new WebSocket(url, {
    headers,
    perMessageDeflate: false,
    maxPayload: UPSTREAM_MAX_PAYLOAD,
    handshakeTimeout: UPGRADE_TIMEOUT_MS,
  });
  const early: Upstream['early'] = [];
  socket.on('message', (data, isBinary) => early.push([data, isBinary]));
  // Errors after the open are the relay's to handle; none may go unheard meanwhile.
  socket.on('error', () => {});
  return new Promise((resolve, reject) => {
    socket.once('open', () => {
      const abandon = setTimeout(() => socket.terminate(), UPGRADE_TIMEOUT_MS);
      abandon.unref();
      resolve({ socket, early, abandon });
    });
    // The refusal is read before the handshake is dropped (dropping it first would end in a bare error).
    socket.once('unexpected-response', (_request, response) => {
      // A refusal whose body breaks off (the host died meanwhile) is the host being unreachable.
      void refusalOf(response)
        .catch(() => unreachable())
        .then((refusal) => {
          reject(refusal);
          socket.terminate();
        });
    });
    socket.once('error', () => reject(unreachable()));
  });
}

/** Relays a client's CDP WebSocket and its host's, frame by frame and in order both ways, closing each with the other. */
export function relayWebSocket(client: WebSocket, { socket: upstream, early, abandon }: Upstream): void {
  clearTimeout(abandon);
  upstream.removeAllListeners('message');
  // The host's multiplexer drops a client that stops reading, but it sees this relay, which reads at once: the same
  // bound applies here, in both directions, so a slow reader cannot grow this process's memory.
  const pass = (to: WebSocket, from: WebSocket, data: RawData, isBinary: boolean) => {
    if (to.readyState !== WebSocket.OPEN) return;
    if (to.bufferedAmount > MAX_BUFFERED_BYTES) {
      to.close(1013, 'the other side does not read fast enough');
      from.terminate();
      return;
    }
    to.send(data, { binary: isBinary });
  };
  upstream.on('message', (data, isBinary) => pass(client, upstream, data, isBinary));
  for (const [data, isBinary] of early.splice(0)) client.send(data, { binary: isBinary });
  client.on('message', (data, isBinary) => pass(upstream, client, data, isBinary));
  client.on('close', (code, reason) => {
    if (upstream.readyState === WebSocket.OPEN) upstream.close(sendable(code) ? code : 1000, reason);
  });
  upstream.on('close', (code, reason) => {
    if (client.readyState === WebSocket.OPEN) client.close(sendable(code) ? code : 1011, reason);
  });
  upstream.on('error', () => {
    if (client.readyState === WebSocket.OPEN) client.close(1011, 'the browser host is unreachable');
    upstream.terminate();
  });
  client.on('error', () => {
    client.terminate();
    upstream.terminate();
  });
  // One side left while the other's upgrade was under way.
  if (client.readyState !== WebSocket.OPEN) upstream.terminate();
  else if (upstream.readyState !== WebSocket.OPEN) client.close(1011, 'the browser host closed the connection');
}
