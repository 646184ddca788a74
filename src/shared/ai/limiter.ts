/**
 * A counting semaphore: at most `max` tasks run at once, the rest wait in arrival order. A waiter
 * whose signal aborts leaves the queue without taking a slot.
 */
export interface Limiter {
  run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Tasks running now. */
  readonly active: number;
  /** Tasks waiting for a slot. */
  readonly pending: number;
}

export function createLimiter(max: number): Limiter {
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`limiter size must be a positive integer, got ${max}`);
  let active = 0;
  const waiters: Array<() => void> = [];

  const acquire = (signal?: AbortSignal): Promise<void> => {
    signal?.throwIfAborted();
    if (active < max) {
      active++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        active++;
        resolve();
      };
      const onAbort = () => {
        const i = waiters.indexOf(grant);
        if (i >= 0) waiters.splice(i, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      waiters.push(grant);
    });
  };

  const release = () => {
    active--;
    waiters.shift()?.();
  };

  return {
    async run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
      await acquire(signal);
      try {
        return await fn();
      } finally {
        release();
      }
    },
    get active() {
      return active;
    },
    get pending() {
      return waiters.length;
    },
  };
}
