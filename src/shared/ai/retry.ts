import { APICallError } from 'ai';

/**
 * Retries with exponential backoff and full jitter (a random wait in [0, base·2^attempt], capped):
 * callers that failed together do not come back together. A `Retry-After` / `retry-after-ms`
 * header from the provider wins when it is reasonable (≤ 60 s).
 */
export interface RetryOptions {
  retries: number;
  /** First backoff ceiling, ms (doubles each attempt). */
  baseDelayMs: number;
  maxDelayMs: number;
  shouldRetry(error: unknown): boolean;
  signal?: AbortSignal;
  onRetry?(error: unknown, attempt: number, delayMs: number): void;
  /** Injected for tests; Math.random by default. */
  random?: () => number;
}

export async function withRetries<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const random = options.random ?? Math.random;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (error) {
      if (attempt >= options.retries || !options.shouldRetry(error) || options.signal?.aborted) throw error;
      const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** attempt);
      const delay = retryAfterMs(error) ?? Math.round(random() * ceiling);
      options.onRetry?.(error, attempt + 1, delay);
      await sleep(delay, options.signal);
    }
  }
}

/** The provider's requested wait, from `retry-after-ms` or `retry-after` (seconds or a date), if sane. */
export function retryAfterMs(error: unknown): number | undefined {
  const headers = APICallError.isInstance(error) ? error.responseHeaders : undefined;
  if (!headers) return undefined;
  let ms: number | undefined;
  const rawMs = headers['retry-after-ms'];
  if (rawMs && !Number.isNaN(Number(rawMs))) ms = Number(rawMs);
  const raw = headers['retry-after'];
  if (ms === undefined && raw) ms = Number.isNaN(Number(raw)) ? Date.parse(raw) - Date.now() : Number(raw) * 1000;
  return ms !== undefined && Number.isFinite(ms) && ms >= 0 && ms <= 60_000 ? Math.round(ms) : undefined;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
