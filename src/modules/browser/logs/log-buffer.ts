import type { ConsoleMessage, Page, Request } from 'playwright-core';

export const LOG_TYPES = ['console', 'pageerror', 'network', 'live'] as const;
export type LogType = (typeof LOG_TYPES)[number];

/**
 * One entry of a session's log: a console message, an uncaught page error, a finished or failed request, or a live
 * viewer taking or handing back control (`live`).
 */
export interface LogEntry {
  /** Increasing within the session: the SSE event id and the `after` cursor. */
  seq: number;
  type: LogType;
  at: string;
  tabId: string;
  /** console: log, warning, error…; pageerror: error; network: info, or error when the request failed; live: info. */
  level: string;
  /** console text, error message, or `METHOD URL`. */
  text: string;
  method?: string;
  url?: string;
  status?: number;
  /** Request start to response end, from Chromium's timing. */
  durationMs?: number;
  failure?: string;
}

export interface LogBuffer {
  /** Entries in order, filtered by type and by seq (`after`) or time (`since`). */
  entries(filter?: { types?: LogType[]; after?: number; since?: Date }): LogEntry[];
  /** How many entries the ring buffer has dropped (oldest first) since the session started. */
  readonly dropped: number;
  readonly capacity: number;
  /** Calls `listener` with each new entry, and `onEnd` at dispose; returns the function that stops it. */
  subscribe(listener: (entry: LogEntry) => void, onEnd?: () => void): () => void;
  /** Adds an entry the service itself observed (a live viewer's control hand-off). */
  add(entry: Omit<LogEntry, 'seq' | 'at'>): void;
  /** Starts collecting a tab's console messages, page errors and requests. */
  watch(page: Page, tabId: string): void;
  dispose(): void;
}

export const DEFAULT_LOG_CAPACITY = 1000;
const MAX_TEXT = 4000;

/** A bounded ring buffer: memory per session stays flat however chatty its pages are. */
export function createLogBuffer(options: { capacity?: number; now?: () => Date } = {}): LogBuffer {
  const capacity = options.capacity ?? DEFAULT_LOG_CAPACITY;
  const now = options.now ?? (() => new Date());
  const ring: LogEntry[] = [];
  let start = 0;
  let seq = 0;
  let dropped = 0;
  const listeners = new Set<(entry: LogEntry) => void>();
  const enders = new Map<(entry: LogEntry) => void, () => void>();
  const unwatch = new Set<() => void>();

  const push = (entry: Omit<LogEntry, 'seq' | 'at'>) => {
    const full: LogEntry = { seq: ++seq, at: now().toISOString(), ...entry, text: entry.text.slice(0, MAX_TEXT) };
    if (ring.length < capacity) ring.push(full);
    else {
      ring[start] = full;
      start = (start + 1) % capacity;
      dropped++;
    }
    for (const listener of listeners) listener(full);
  };
  const network = (tabId: string, request: Request, status: number | undefined, failure?: string) => {
    const timing = request.timing();
    const durationMs = timing.responseEnd >= 0 ? Math.round(timing.responseEnd) : undefined;
    push({
      type: 'network',
      tabId,
      level: failure ? 'error' : 'info',
      text: `${request.method()} ${request.url()}`,
      method: request.method(),
      url: request.url(),
      ...(status === undefined ? {} : { status }),
      ...(durationMs === undefined ? {} : { durationMs }),
      ...(failure ? { failure } : {}),
    });
  };

  return {
    entries(filter = {}) {
      const all = [...ring.slice(start), ...ring.slice(0, start)];
      const since = filter.since?.toISOString();
      return all.filter(
        (e) =>
          (!filter.types || filter.types.includes(e.type)) &&
          (filter.after === undefined || e.seq > filter.after) &&
          (since === undefined || e.at >= since),
      );
    },
    get dropped() {
      return dropped;
    },
    capacity,
    add: push,
    subscribe(listener, onEnd) {
      listeners.add(listener);
      if (onEnd) enders.set(listener, onEnd);
      return () => {
        listeners.delete(listener);
        enders.delete(listener);
      };
    },
    watch(page, tabId) {
      const onConsole = (message: ConsoleMessage) =>
        push({ type: 'console', tabId, level: message.type(), text: message.text() });
      const onError = (error: Error) => push({ type: 'pageerror', tabId, level: 'error', text: error.message });
      const onFinished = (request: Request) =>
        void request.response().then(
          (response) => network(tabId, request, response?.status()),
          () => network(tabId, request, undefined),
        );
      const onFailed = (request: Request) =>
        network(tabId, request, undefined, request.failure()?.errorText ?? 'failed');
      page.on('console', onConsole);
      page.on('pageerror', onError);
      page.on('requestfinished', onFinished);
      page.on('requestfailed', onFailed);
      // A closed tab's listeners go with it: a long session opening many tabs keeps none of them alive.
      const stop = () => {
        page.off('console', onConsole);
        page.off('pageerror', onError);
        page.off('requestfinished', onFinished);
        page.off('requestfailed', onFailed);
        unwatch.delete(stop);
      };
      unwatch.add(stop);
      page.once('close', stop);
    },
    dispose() {
      for (const stop of [...unwatch]) stop();
      const ends = [...enders.values()];
      listeners.clear();
      enders.clear();
      for (const end of ends) end();
    },
  };
}
