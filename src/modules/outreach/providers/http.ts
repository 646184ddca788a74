import { type Dispatcher, request } from 'undici';
import { PlatformError } from './platform.ts';

/**
 * The JSON calls both platform clients make. A platform that answered with a non-2xx status is a PlatformError with
 * the reason its body gives (`message`, `error`, …) and the status; a network failure or timeout is a PlatformError
 * without a status. Messages never carry the URL: Smartlead's API key travels in the query string.
 */

const TIMEOUT_MS = 15_000;

/** Failures before any connection was made: the request never left (anything later may have reached the platform). */
const CONNECT_FAILURES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);
const unsent = (err: unknown) => {
  const e = err as { code?: string; cause?: { code?: string } };
  return CONNECT_FAILURES.has(e.code ?? e.cause?.code ?? '');
};

export interface JsonHttpOptions {
  baseUrl: string;
  /** Headers sent on every call (Instantly's `Authorization`). */
  headers?: Record<string, string>;
  /** Query parameters added to every call (Smartlead's `api_key`). */
  query?: Record<string, string>;
  /** The SSRF-guarded dispatcher (`sharedGuardedDispatcher`). */
  dispatcher?: Dispatcher;
  /** Names the platform in messages. */
  platform: string;
}

export type QueryValue = string | number | boolean | undefined;

export interface JsonHttp {
  call<T = unknown>(
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    path: string,
    options?: { body?: unknown; query?: Record<string, QueryValue> },
  ): Promise<T>;
}

/** The reason a platform's error body gives, whatever its shape. */
export function errorReason(body: unknown, fallback: string): string {
  if (typeof body === 'string') return body.trim().slice(0, 300) || fallback;
  if (body && typeof body === 'object') {
    const o = body as Record<string, unknown>;
    for (const key of ['message', 'error', 'detail', 'msg', 'errorMessage']) {
      const v = o[key];
      if (typeof v === 'string' && v.trim()) return v.trim().slice(0, 300);
      if (v && typeof v === 'object') {
        const nested = errorReason(v, '');
        if (nested) return nested;
      }
    }
  }
  return fallback;
}

export function createJsonHttp(options: JsonHttpOptions): JsonHttp {
  const base = options.baseUrl.replace(/\/+$/, '');
  // Raw and as a URL carries it (percent-encoded, `+` for a space).
  const secrets = Object.values(options.query ?? {})
    .filter((v) => v.length > 0)
    .flatMap((v) => [...new Set([v, encodeURIComponent(v), new URLSearchParams({ k: v }).toString().slice(2)])]);
  // A reason or a network message that happens to echo the key (a URL in an error) must not leak it.
  const scrub = (text: string) => secrets.reduce((t, s) => t.split(s).join('***'), text);

  return {
    async call<T>(
      method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
      path: string,
      opts: { body?: unknown; query?: Record<string, QueryValue> } = {},
    ): Promise<T> {
      const url = new URL(base + path);
      for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
      for (const [k, v] of Object.entries(options.query ?? {})) url.searchParams.set(k, v);
      const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
      let payload: string | undefined;
      if (opts.body !== undefined) {
        headers['content-type'] = 'application/json';
        payload = JSON.stringify(opts.body);
      }
      let res: Dispatcher.ResponseData;
      try {
        res = await request(url, {
          method,
          headers,
          body: payload,
          dispatcher: options.dispatcher,
          headersTimeout: TIMEOUT_MS,
          bodyTimeout: TIMEOUT_MS,
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        throw new PlatformError(scrub(`${options.platform} could not be reached: ${message}`), undefined, unsent(err));
      }
      let text: string;
      try {
        text = await res.body.text();
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        throw new PlatformError(scrub(`${options.platform} did not finish its answer: ${message}`));
      }
      let body: unknown = text;
      if (text.length > 0) {
        try {
          body = JSON.parse(text);
        } catch {
          // A non-JSON answer stays text: an error page's reason, or a malformed success below.
        }
      } else body = null;
      if (res.statusCode < 200 || res.statusCode >= 300) {
        const reason = errorReason(body, `${options.platform} answered HTTP ${res.statusCode}`);
        throw new PlatformError(scrub(reason), res.statusCode);
      }
      if (typeof body === 'string')
        throw new PlatformError(`${options.platform} answered something that is not JSON`, res.statusCode);
      return body as T;
    },
  };
}

/** A number from a platform's figure, which may arrive as a string ("12") or be missing. */
export const num = (v: unknown): number => {
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : Number.NaN;
  return Number.isFinite(n) ? n : 0;
};

export const str = (v: unknown): string | null =>
  typeof v === 'string' && v.length > 0 ? v : typeof v === 'number' ? String(v) : null;

/** An hour of a sending window as both platforms write it (`HH:MM`; the end of the day is 23:59). */
export const hhmm = (hour: number) => (hour >= 24 ? '23:59' : `${String(hour).padStart(2, '0')}:00`);
