/**
 * The HTTP client of STATIC and API crawls (and of robots.txt): undici with keep-alive through the
 * SSRF guard, redirects followed by hand so every hop is checked, browser-like headers, gzip/br/deflate
 * decompression, a per-request timeout, per-host politeness, and the crawl's abort signal on every
 * request (once it aborts, nothing more leaves). `CrawleeHttpClient` adapts it to Crawlee's
 * `BaseHttpClient` (got-scraping, Crawlee's default, is the main cost of a CheerioCrawler).
 */
import { pipeline, type Readable, Transform } from 'node:stream';
import zlib from 'node:zlib';
import type { BaseHttpClient, HttpRequest, HttpResponse, ResponseTypes, StreamingHttpResponse } from '@crawlee/core';
import { type Dispatcher, request as undiciRequest } from 'undici';
import { createProxyAgent } from '../../shared/pinned-proxy.ts';
import { assertPublicHost, createGuardedDispatcher, ssrfCause } from '../../shared/ssrf.ts';
import type { HostLimiter } from './politeness.ts';

export const HTML_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
export const JSON_ACCEPT = 'application/json,text/plain;q=0.9,*/*;q=0.8';
const MAX_REDIRECTS = 10;
/** Decompressed bytes a page may have; beyond it the page fails (zip bombs, endless streams). */
const MAX_BODY_BYTES = 32 * 1024 * 1024;
const hasZstd = typeof (zlib as { createZstdDecompress?: unknown }).createZstdDecompress === 'function';
const ACCEPT_ENCODING = hasZstd ? 'gzip, deflate, br, zstd' : 'gzip, deflate, br';

/** A page request that failed: `retryable` says whether another attempt may succeed. */
export class FetchError extends Error {
  readonly status?: number;
  readonly retryable: boolean;
  /** From a 429/503 Retry-After header. */
  readonly retryAfterMs?: number;
  constructor(message: string, opts: { status?: number; retryable: boolean; retryAfterMs?: number }) {
    super(message);
    this.name = 'FetchError';
    this.status = opts.status;
    this.retryable = opts.retryable;
    this.retryAfterMs = opts.retryAfterMs;
  }
}

export interface PageFetcherOptions {
  userAgent: string;
  accept: string;
  allowPrivateNetwork: boolean;
  /**
   * http(s):// or socks5:// proxies (a proxy profile's endpoints, pinned to their checked addresses:
   * src/shared/pinned-proxy.ts), taken in turn per page request.
   */
  proxyUrls?: string[];
  timeoutMs: number;
  /** The crawl's signal: aborting it cancels every request and refuses new ones. */
  signal: AbortSignal;
  limiter: HostLimiter;
  /** Keep-alive connections per origin. */
  connections: number;
  /** Tests only: the dispatcher for direct connections instead of the guarded one. */
  dispatcher?: Dispatcher;
}

export interface FetchedResponse {
  url: string;
  redirectUrls: URL[];
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  /** The decompressed body; the host's politeness slot is released when it closes. */
  body: Readable;
}

const NETWORK_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset by the server',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'DNS lookup failed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_SOCKET: 'connection closed by the server',
  UND_ERR_HEADERS_TIMEOUT: 'no response headers in time',
  UND_ERR_BODY_TIMEOUT: 'response body stalled',
};

/** A human reason for a network error (never Node's bare codes: Crawlee reads those as proxy failures). */
function networkReason(error: unknown): string {
  for (
    let e = error as { code?: string; cause?: unknown; message?: string } | undefined, i = 0;
    e && i < 5;
    e = e.cause as typeof e, i++
  ) {
    if (e.code && NETWORK_REASONS[e.code]) return NETWORK_REASONS[e.code]!;
  }
  const message = (error as Error)?.message ?? String(error);
  return message.replace(
    /\b(ECONNRESET|ECONNREFUSED|ERR_PROXY_CONNECTION_FAILED|ERR_TUNNEL_CONNECTION_FAILED)\b/g,
    'network error',
  );
}

function retryAfterMs(value: string | string[] | undefined): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  const secs = Number(v);
  if (Number.isFinite(secs)) return Math.max(0, secs * 1000);
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

function decoderFor(encoding: string): Transform | undefined {
  switch (encoding.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip({ finishFlush: zlib.constants.Z_SYNC_FLUSH });
    case 'deflate':
      return zlib.createInflate({ finishFlush: zlib.constants.Z_SYNC_FLUSH });
    case 'br':
      return zlib.createBrotliDecompress();
    case 'zstd':
      return hasZstd ? (zlib as unknown as { createZstdDecompress(): Transform }).createZstdDecompress() : undefined;
    default:
      return undefined;
  }
}

/** Drops a body we will not read (a destroyed undici body emits an error nobody else listens to). */
export function discard(body: Readable): void {
  body.on('error', () => {});
  body.destroy();
}

function sizeLimit(url: string): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, callback) {
      seen += chunk.length;
      if (seen > MAX_BODY_BYTES)
        return callback(
          new FetchError(`GET ${url}: the page is larger than ${MAX_BODY_BYTES / 1024 / 1024} MB`, {
            retryable: false,
          }),
        );
      callback(null, chunk);
    },
  });
}

export class PageFetcher {
  readonly #options: PageFetcherOptions;
  readonly #dispatchers: Dispatcher[];
  #turn = 0;
  readonly #proxied: boolean;
  readonly #checkedHosts = new Map<string, Promise<void>>();

  constructor(options: PageFetcherOptions) {
    this.#options = options;
    const proxies = options.proxyUrls ?? [];
    this.#proxied = proxies.length > 0;
    this.#dispatchers = this.#proxied
      ? proxies.map((uri) => createProxyAgent(uri, { connections: options.connections, keepAliveTimeout: 10_000 }))
      : [
          options.dispatcher ??
            createGuardedDispatcher({ allowPrivate: options.allowPrivateNetwork, connections: options.connections }),
        ];
  }

  /** The next proxy in turn (per-request rotation); a page's redirects stay on the one it started with. */
  #nextDispatcher(): Dispatcher {
    return this.#dispatchers[this.#turn++ % this.#dispatchers.length]!;
  }

  /**
   * Through a proxy the connection goes to the proxy, so the guarded dispatcher cannot see the
   * target: check the target host (cached per crawl) before each hop instead.
   */
  #checkTarget(url: URL): Promise<void> {
    if (!this.#proxied || this.#options.allowPrivateNetwork) return Promise.resolve();
    let check = this.#checkedHosts.get(url.hostname);
    if (!check) {
      check = assertPublicHost(url.hostname, false, url.href);
      this.#checkedHosts.set(url.hostname, check);
    }
    return check;
  }

  /**
   * GET `url` following redirects; the status is not judged here. Throws FetchError / SsrfBlockedError / the abort
   * reason.
   */
  async open(url: string, init: { method?: string; headers?: Record<string, string> } = {}): Promise<FetchedResponse> {
    const { signal: crawlSignal, limiter, timeoutMs } = this.#options;
    const method = (init.method ?? 'GET').toUpperCase();
    let current = new URL(url);
    if (crawlSignal.aborted) throw crawlSignal.reason;
    const slot = await limiter.acquire(current.host, crawlSignal);
    // The timeout starts once the host slot is ours: waiting for politeness is not the server's fault.
    // Aborting with our own error makes undici fail the body stream with it, so readers see why.
    const controller = new AbortController();
    const signal = controller.signal;
    const timer = setTimeout(() => controller.abort(this.#timeoutError(method, current.href)), timeoutMs);
    const onCrawlAbort = () => controller.abort(crawlSignal.reason);
    crawlSignal.addEventListener('abort', onCrawlAbort, { once: true });
    const release = () => {
      clearTimeout(timer);
      crawlSignal.removeEventListener('abort', onCrawlAbort);
      slot();
    };
    const headers: Record<string, string> = {
      accept: this.#options.accept,
      'accept-language': 'en-US,en;q=0.9',
      'accept-encoding': ACCEPT_ENCODING,
      ...init.headers,
      'user-agent': this.#options.userAgent,
    };
    const redirectUrls: URL[] = [];
    const dispatcher = this.#nextDispatcher();
    try {
      for (let hop = 0; ; hop++) {
        if (current.protocol !== 'http:' && current.protocol !== 'https:') {
          throw new FetchError(`${method} ${url}: redirected to unsupported protocol ${current.protocol}`, {
            retryable: false,
          });
        }
        await this.#checkTarget(current);
        if (signal.aborted) throw signal.reason;
        const response = await undiciRequest(current, {
          method: method as Dispatcher.HttpMethod,
          headers,
          signal,
          dispatcher,
        });
        const location = response.headers.location;
        if (response.statusCode >= 300 && response.statusCode < 400 && location) {
          // Read the (small) redirect body to the end so the connection can be reused.
          await response.body.dump({ limit: 64 * 1024 }).catch(() => {});
          if (hop >= MAX_REDIRECTS)
            throw new FetchError(`${method} ${url}: more than ${MAX_REDIRECTS} redirects`, { retryable: false });
          current = new URL(String(location), current);
          redirectUrls.push(current);
          continue;
        }
        const responseHeaders = { ...response.headers } as FetchedResponse['headers'];
        let body: Readable = response.body;
        const encoding = String(responseHeaders['content-encoding'] ?? '');
        const decoder = encoding && encoding !== 'identity' ? decoderFor(encoding) : undefined;
        if (decoder) {
          delete responseHeaders['content-encoding'];
          delete responseHeaders['content-length'];
        }
        const declaredLength = Number(responseHeaders['content-length'] ?? NaN);
        if (declaredLength > MAX_BODY_BYTES) {
          discard(response.body);
          throw new FetchError(
            `${method} ${current.href}: the page is larger than ${MAX_BODY_BYTES / 1024 / 1024} MB`,
            { retryable: false },
          );
        }
        // A declared, acceptable length needs no counting (stream.pipeline costs an AbortController per page).
        if (decoder) body = pipeline(body, decoder, sizeLimit(current.href), () => {});
        else if (!Number.isFinite(declaredLength)) body = pipeline(body, sizeLimit(current.href), () => {});
        body.once('close', release);
        // An unread body that fails later (timeout, stop) must not crash the process for want of a listener.
        body.on('error', () => {});
        return { url: current.href, redirectUrls, statusCode: response.statusCode, headers: responseHeaders, body };
      }
    } catch (error) {
      release();
      throw this.#describe(error, method, current.href, signal);
    }
  }

  #timeoutError(method: string, url: string): FetchError {
    return new FetchError(`${method} ${url} timed out after ${this.#options.timeoutMs / 1000} s`, { retryable: true });
  }

  #describe(error: unknown, method: string, url: string, signal: AbortSignal): unknown {
    if (error instanceof FetchError) return error;
    const blocked = ssrfCause(error);
    if (blocked) return blocked;
    if (signal.aborted) return signal.reason;
    return new FetchError(`${method} ${url} failed: ${networkReason(error)}`, { retryable: true });
  }

  /** A small text document (robots.txt): status and body, at most `maxBytes`. */
  async text(url: string, maxBytes = 512 * 1024): Promise<{ status: number; body: string }> {
    const response = await this.open(url, { headers: { accept: 'text/plain,*/*;q=0.8' } });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) {
        discard(response.body);
        break;
      }
      chunks.push(chunk);
    }
    return { status: response.statusCode, body: Buffer.concat(chunks).toString('utf8') };
  }

  /** Closes every connection (in-flight requests included). */
  async close(): Promise<void> {
    await Promise.all(this.#dispatchers.map((d) => d.destroy().catch(() => {})));
  }
}

/** A status error for an answered request: 4xx other than 408/429 is final, the rest may be retried. */
export function statusError(
  method: string,
  url: string,
  status: number,
  headers: FetchedResponse['headers'],
): FetchError {
  const retryable = status >= 500 || status === 408 || status === 429;
  return new FetchError(`${method} ${url} answered ${status}`, {
    status,
    retryable,
    retryAfterMs: retryable ? retryAfterMs(headers['retry-after']) : undefined,
  });
}

/** Crawlee's `httpClient`: every request through `PageFetcher`; HTTP error statuses throw `FetchError`. */
export class CrawleeHttpClient implements BaseHttpClient {
  readonly #fetcher: PageFetcher;

  constructor(fetcher: PageFetcher) {
    this.#fetcher = fetcher;
  }

  async #open(request: HttpRequest<keyof ResponseTypes>): Promise<FetchedResponse> {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(request.headers ?? {}))
      if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
    const method = request.method ?? 'GET';
    const url = String(request.url);
    const response = await this.#fetcher.open(url, { method, headers });
    if (response.statusCode >= 400) {
      discard(response.body);
      throw statusError(method.toUpperCase(), response.url, response.statusCode, response.headers);
    }
    return response;
  }

  async stream(request: HttpRequest): Promise<StreamingHttpResponse> {
    const r = await this.#open(request);
    return {
      stream: r.body,
      request,
      redirectUrls: r.redirectUrls,
      url: r.url,
      statusCode: r.statusCode,
      headers: r.headers,
      trailers: {},
      complete: true,
      downloadProgress: { percent: 0, transferred: 0 },
      uploadProgress: { percent: 100, transferred: 0 },
    };
  }

  async sendRequest<T extends keyof ResponseTypes = 'text'>(request: HttpRequest<T>): Promise<HttpResponse<T>> {
    const r = await this.#open(request as HttpRequest<keyof ResponseTypes>);
    const chunks: Buffer[] = [];
    for await (const chunk of r.body as AsyncIterable<Buffer>) chunks.push(chunk);
    const buffer = Buffer.concat(chunks);
    const type = request.responseType ?? 'text';
    const body =
      type === 'buffer'
        ? buffer
        : type === 'json'
          ? JSON.parse(buffer.toString('utf8'))
          : buffer.toString((request.encoding as BufferEncoding) ?? 'utf8');
    return {
      body: body as ResponseTypes[T],
      request,
      redirectUrls: r.redirectUrls,
      url: r.url,
      statusCode: r.statusCode,
      headers: r.headers,
      trailers: {},
      complete: true,
    };
  }
}
