/**
 * Per-host politeness for one crawl: at most `concurrency` requests in flight to a host, and request
 * starts to one host spaced by its delay. Crawlee's own `sameDomainDelaySecs` keys on the registrable
 * domain (none for an IP address, so it never delays there) and has no per-host concurrency, hence this.
 */

interface HostState {
  active: number;
  waiters: Array<() => void>;
  /** Earliest start time of the next request (ms, performance.now()). */
  nextStartAt: number;
  delayMs: number;
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export class HostLimiter {
  readonly #concurrency: number;
  readonly #defaultDelayMs: number;
  readonly #hosts = new Map<string, HostState>();

  constructor(concurrency: number, delayMs: number) {
    this.#concurrency = Math.max(1, concurrency);
    this.#defaultDelayMs = Math.max(0, delayMs);
  }

  #state(host: string): HostState {
    let s = this.#hosts.get(host);
    if (!s) this.#hosts.set(host, (s = { active: 0, waiters: [], nextStartAt: 0, delayMs: this.#defaultDelayMs }));
    return s;
  }

  /** Raises one host's delay (robots.txt Crawl-delay); never lowers it below the crawl's setting. */
  raiseDelay(host: string, delayMs: number): void {
    const s = this.#state(host);
    s.delayMs = Math.max(s.delayMs, delayMs);
  }

  delayOf(host: string): number {
    return this.#hosts.get(host)?.delayMs ?? this.#defaultDelayMs;
  }

  /** Waits for a slot on `host` and for its delay; returns the release function (idempotent). */
  async acquire(host: string, signal: AbortSignal): Promise<() => void> {
    const s = this.#state(host);
    if (s.active >= this.#concurrency) {
      await new Promise<void>((resolve, reject) => {
        const waiter = () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = () => {
          const i = s.waiters.indexOf(waiter);
          if (i >= 0) s.waiters.splice(i, 1);
          reject(signal.reason);
        };
        if (signal.aborted) return reject(signal.reason);
        s.waiters.push(waiter);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    } else {
      s.active++;
    }
    // The slot is ours from here (a releasing holder hands it over without decrementing).
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const next = s.waiters.shift();
      if (next) next();
      else s.active--;
    };
    // The next start is reckoned from when this one really starts, not when it was scheduled: a timer
    // that fires late (a busy process) must not let the following request start closer than the delay.
    while (s.delayMs > 0) {
      const now = performance.now();
      if (now >= s.nextStartAt) {
        s.nextStartAt = now + s.delayMs;
        break;
      }
      try {
        await abortableSleep(s.nextStartAt - now, signal);
      } catch (error) {
        release();
        throw error;
      }
    }
    return release;
  }
}
