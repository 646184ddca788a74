/**
 * The client of every outbound request to a URL a user gave (analyze's documents, webhooks;
 * exports use it too): the settings crawls use (SCRAPER_PROXY_URL, the SSRF guard of
 * ALLOW_PRIVATE_NETWORK, SCRAPER_USER_AGENT), a timeout over the whole exchange, a limit on the
 * (decompressed) response body, and redirects followed by hand so each hop is checked.
 *
 * Direct connections go through the guarded dispatcher, which checks the address it connects to.
 * Through a proxy the connection goes to the proxy, so each hop's host is resolved and checked first
 * (as the crawler's client does); the proxy itself is the operator's and may be on a private network.
 */
import { type Dispatcher, ProxyAgent, fetch as undiciFetch } from 'undici';
import type { Config } from '../config.ts';
import { assertPublicHost, sharedGuardedDispatcher, ssrfCause } from './ssrf.ts';

export interface OutboundSettings {
  allowPrivateNetwork: boolean;
  /** http(s)://user:pass@host:port: every request goes out through it. */
  proxyUrl?: string;
  userAgent: string;
}

export const outboundSettings = (
  config: Pick<Config, 'ALLOW_PRIVATE_NETWORK' | 'SCRAPER_PROXY_URL' | 'SCRAPER_USER_AGENT'>,
): OutboundSettings => ({
  allowPrivateNetwork: config.ALLOW_PRIVATE_NETWORK,
  proxyUrl: config.SCRAPER_PROXY_URL,
  userAgent: config.SCRAPER_USER_AGENT,
});

export interface OutboundRequest {
  url: string | URL;
  /** Default GET. */
  method?: string;
  /** `user-agent` defaults to the configured one. */
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** The whole exchange, body included; default 30 s. */
  timeoutMs?: number;
  /** Response body bytes (after decompression); default 10 MB. */
  maxBytes?: number;
  /** true (default): up to 5 hops; a number: up to that many; false or 0: a 3xx is answered as it is. */
  followRedirects?: boolean | number;
  /** The caller's own signal (a client that went away): aborting rejects with its reason. */
  signal?: AbortSignal;
}

export interface OutboundResponse {
  /** After redirects. */
  url: string;
  status: number;
  /** Lower-case names. */
  headers: Record<string, string>;
  body: Buffer;
}

export type OutboundFailure = 'unsupported_url' | 'blocked' | 'timeout' | 'too_large' | 'network' | 'redirect';

/**
 * A request that got no usable answer; `message` is a short reason safe to show the user (no secrets, no bare codes).
 */
export class OutboundError extends Error {
  readonly reason: OutboundFailure;
  /** The hop that failed. */
  readonly url: string;
  constructor(reason: OutboundFailure, message: string, url: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'OutboundError';
    this.reason = reason;
    this.url = url;
  }
}

/** A request sent exactly as given: webhooks send the event and their own headers, nothing else. */
export interface ExactRequest {
  url: string;
  method: 'POST' | 'PUT';
  /** Every header sent besides `host`, `content-length` and `connection` (no defaults are added). */
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** Bytes of the answer kept (the rest is read, up to 64 KB, and dropped). */
  keepBytes: number;
}

export interface ExactResponse {
  status: number;
  /** The first `keepBytes` of the answer. */
  body: Buffer;
}

export interface OutboundClient {
  request(request: OutboundRequest): Promise<OutboundResponse>;
  /** One hop, never a redirect followed (a 3xx is answered as it is). */
  send(request: ExactRequest): Promise<ExactResponse>;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_BYTES = 10 * 1024 * 1024;
const DEFAULT_MAX_REDIRECTS = 5;
/** Headers that must not follow a redirect to another origin. */
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];

const NETWORK_REASONS: Record<string, string> = {
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved',
  ECONNREFUSED: 'the connection was refused',
  ECONNRESET: 'the connection was reset',
  ETIMEDOUT: 'the connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'the connection timed out',
  EHOSTUNREACH: 'the host is unreachable',
  ENETUNREACH: 'the network is unreachable',
  UND_ERR_SOCKET: 'the connection was closed by the server',
};

/** A short reason for a network failure (undici puts the system error in `cause`). */
function networkReason(error: unknown): string {
  for (
    let e = error as { code?: string; cause?: unknown; message?: string } | undefined, i = 0;
    e && i < 5;
    e = e.cause as typeof e, i++
  ) {
    const known = e.code ? NETWORK_REASONS[e.code] : undefined;
    if (known) return known;
    // fetch refuses the ports browsers block (SMTP, IRC, …).
    if (e.message === 'bad port') return 'the port is one HTTP clients refuse to use';
  }
  return 'network error';
}

const proxyAgents = new Map<string, Dispatcher>();

/** One keep-alive pool per proxy for the process (the guarded pools are shared by ssrf.ts). */
function dispatcherFor(settings: OutboundSettings): Dispatcher {
  if (!settings.proxyUrl) return sharedGuardedDispatcher(settings.allowPrivateNetwork);
  let agent = proxyAgents.get(settings.proxyUrl);
  if (!agent) {
    agent = new ProxyAgent({ uri: settings.proxyUrl, keepAliveTimeout: 10_000 });
    proxyAgents.set(settings.proxyUrl, agent);
  }
  return agent;
}

async function readLimited(body: ReadableStream<Uint8Array> | null, maxBytes: number, url: string): Promise<Buffer> {
  if (!body) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      await body.cancel().catch(() => {});
      throw new OutboundError('too_large', `the answer is larger than ${maxBytes} bytes`, url);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export function createOutboundClient(settings: OutboundSettings): OutboundClient {
  const dispatcher = dispatcherFor(settings);
  /** Parsed once per URL (a webhook endpoint's is sent to thousands of times). */
  const exactUrls = new Map<string, URL>();
  const checkTarget = (url: URL) =>
    settings.proxyUrl && !settings.allowPrivateNetwork
      ? assertPublicHost(url.hostname, false, url.href)
      : Promise.resolve();

  return {
    async request(req) {
      const timeoutMs = req.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      const maxBytes = req.maxBytes ?? DEFAULT_MAX_BYTES;
      const follow = req.followRedirects ?? true;
      const maxRedirects = follow === true ? DEFAULT_MAX_REDIRECTS : follow === false ? 0 : follow;
      const timeout = deadline(timeoutMs);
      const signal = req.signal ? AbortSignal.any([req.signal, timeout.signal]) : timeout.signal;
      const headers: Record<string, string> = { 'user-agent': settings.userAgent };
      for (const [name, value] of Object.entries(req.headers ?? {})) headers[name.toLowerCase()] = value;
      let method = (req.method ?? 'GET').toUpperCase();
      let body = req.body;
      let current = new URL(req.url);
      try {
        for (let hop = 0; ; hop++) {
          if (current.protocol !== 'http:' && current.protocol !== 'https:') {
            const why = `only http(s) URLs, not ${current.protocol}`;
            throw new OutboundError(hop ? 'redirect' : 'unsupported_url', why, current.href);
          }
          await checkTarget(current);
          const response = await undiciFetch(current, {
            method,
            headers,
            body,
            signal,
            dispatcher,
            redirect: 'manual',
          });
          const location = response.headers.get('location');
          if (maxRedirects > 0 && response.status >= 300 && response.status < 400 && location) {
            await response.body?.cancel().catch(() => {});
            if (hop >= maxRedirects)
              throw new OutboundError('redirect', `more than ${maxRedirects} redirects`, current.href);
            const next = URL.parse(location, current.href);
            if (!next) throw new OutboundError('redirect', 'redirected to an invalid URL', current.href);
            if (next.origin !== current.origin) for (const name of CREDENTIAL_HEADERS) delete headers[name];
            // 303, and 301/302 after a POST, continue as a GET without a body (what browsers do).
            if (
              response.status === 303 ||
              ((response.status === 301 || response.status === 302) && method === 'POST')
            ) {
              method = method === 'HEAD' ? 'HEAD' : 'GET';
              body = undefined;
              delete headers['content-type'];
            }
            current = next;
            continue;
          }
          const declared = Number(response.headers.get('content-length') ?? NaN);
          if (declared > maxBytes) {
            await response.body?.cancel().catch(() => {});
            throw new OutboundError('too_large', `the answer is larger than ${maxBytes} bytes`, current.href);
          }
          const bytes = await readLimited(response.body as ReadableStream<Uint8Array> | null, maxBytes, current.href);
          return {
            url: current.href,
            status: response.status,
            headers: Object.fromEntries(response.headers),
            body: bytes,
          };
        }
      } catch (error) {
        if (req.signal?.aborted && !(error instanceof OutboundError) && !ssrfCause(error)) throw req.signal.reason;
        throw failureOf(error, current.href, timeout.signal.aborted, timeoutMs);
      } finally {
        timeout.clear();
      }
    },

    async send(req) {
      let url = exactUrls.get(req.url);
      if (!url) {
        url = new URL(req.url);
        if (exactUrls.size >= 10_000) exactUrls.delete(exactUrls.keys().next().value!);
        exactUrls.set(req.url, url);
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        throw new OutboundError('unsupported_url', `only http(s) URLs, not ${url.protocol}`, url.href);
      try {
        if (settings.proxyUrl && !settings.allowPrivateNetwork) await checkTarget(url);
      } catch (error) {
        throw failureOf(error, url.href, false, req.timeoutMs);
      }
      return exchange(dispatcher, url, req);
    },
  };
}

/**
 * A signal that aborts after `ms` unless cleared. Not AbortSignal.timeout: its timer cannot be cancelled, so every
 * request that ended long ago still fires one at its timeout, building a DOMException and an abort event (about 6 %
 * of a webhook dispatcher's CPU at thousands of deliveries a second).
 */
function deadline(ms: number): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException('The operation timed out.', 'TimeoutError')), ms);
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

/** Bytes of an exact request's answer read before the connection is dropped instead. */
const EXACT_READ_LIMIT = 64 * 1024;

/**
 * One exact request on undici's dispatch API: the answer's status and first `keepBytes` are collected as they
 * arrive, with no response stream, no AbortSignal and no timer of its own (see expireAt). At thousands of webhook
 * deliveries a second, the stream, the signal's listeners and a timer per request were a tenth of the CPU.
 */
function exchange(dispatcher: Dispatcher, url: URL, req: ExactRequest): Promise<ExactResponse> {
  return new Promise((resolve, reject) => {
    const kept: Buffer[] = [];
    let size = 0;
    let status = 0;
    let controller: Dispatcher.DispatchController | undefined;
    let settled = false;
    const finish = (error?: Error, timedOut = false) => {
      if (settled) return;
      settled = true;
      deadlines.delete(due);
      if (error) reject(failureOf(error, url.href, timedOut, req.timeoutMs));
      else resolve({ status, body: kept.length === 1 ? kept[0]! : Buffer.concat(kept) });
    };
    const timeout = () => new DOMException('The operation timed out.', 'TimeoutError');
    const due = expireAt(performance.now() + req.timeoutMs, () => {
      // Before the connection exists there is nothing to abort yet: onRequestStart does it when it comes.
      finish(timeout(), true);
      controller?.abort(timeout());
    });
    try {
      dispatcher.dispatch(
        {
          origin: url.origin,
          path: url.pathname + url.search,
          method: req.method,
          headers: req.headers,
          body: req.body,
        },
        {
          onRequestStart(c) {
            controller = c;
            if (settled) c.abort(timeout());
          },
          onResponseStart(_c, statusCode) {
            status = statusCode;
          },
          onResponseData(c, chunk) {
            if (size < req.keepBytes)
              kept.push(size + chunk.byteLength <= req.keepBytes ? chunk : chunk.subarray(0, req.keepBytes - size));
            size += chunk.byteLength;
            // A large answer is not read to its end (the connection is dropped instead of reused).
            if (size > EXACT_READ_LIMIT && !settled) {
              finish();
              c.abort(new Error('answer read far enough'));
            }
          },
          onResponseEnd() {
            finish();
          },
          onResponseError(_c, error) {
            finish(error);
          },
        },
      );
    } catch (error) {
      finish(error as Error);
    }
  });
}

/**
 * The deadlines of exact requests under way, and one timer for all of them: at its time every expired one is
 * called and the timer is set for the earliest left. Most requests end long before theirs and just leave the set.
 */
const deadlines = new Set<{ at: number; expire(): void }>();
let deadlineTimer: NodeJS.Timeout | undefined;
let deadlineTimerAt = Number.POSITIVE_INFINITY;

function expireAt(at: number, expire: () => void): { at: number; expire(): void } {
  const entry = { at, expire };
  deadlines.add(entry);
  if (at < deadlineTimerAt) armDeadlines(at);
  return entry;
}

function armDeadlines(at: number): void {
  clearTimeout(deadlineTimer);
  deadlineTimerAt = at;
  deadlineTimer = setTimeout(expireDeadlines, Math.max(0, Math.ceil(at - performance.now())));
  deadlineTimer.unref();
}

function expireDeadlines(): void {
  deadlineTimer = undefined;
  deadlineTimerAt = Number.POSITIVE_INFINITY;
  const now = performance.now();
  let next = Number.POSITIVE_INFINITY;
  for (const entry of deadlines) {
    if (entry.at <= now) {
      deadlines.delete(entry);
      entry.expire();
    } else if (entry.at < next) next = entry.at;
  }
  if (next < Number.POSITIVE_INFINITY) armDeadlines(next);
}

function failureOf(error: unknown, url: string, timedOut: boolean, timeoutMs: number): OutboundError {
  if (error instanceof OutboundError) return error;
  const blocked = ssrfCause(error);
  if (blocked) return new OutboundError('blocked', blocked.message, url, { cause: blocked });
  if (timedOut) return new OutboundError('timeout', `no answer within ${timeoutMs / 1000} s`, url, { cause: error });
  return new OutboundError('network', networkReason(error), url, { cause: error });
}
