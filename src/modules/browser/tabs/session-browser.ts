/**
 * The seam between a live session (the sessions room: its Chromium, tenancy, lifecycle) and the operations run on
 * it (actions, page, tabs, state, logs). The sessions side connects Playwright over CDP to the session's Chromium,
 * calls `createSessionOperations` once per live session, hands it to the operation routes through a
 * `SessionResolver`, and calls `dispose()` before it releases the Chromium.
 */
import type { FastifyRequest } from 'fastify';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createLogBuffer, type LogBuffer } from '../logs/log-buffer.ts';
import { createTabRegistry, type TabRegistry } from './tab-registry.ts';

export interface SessionOperations {
  /** Connected over CDP to the session's Chromium; never closed here (the sessions side owns it). */
  readonly browser: Browser;
  /** The browser's default context: the one CDP clients and actions share. */
  readonly context: BrowserContext;
  readonly tabs: TabRegistry;
  readonly logs: LogBuffer;
  /** The tab where actions run; a new blank one when the session has none left. */
  activePage(): Promise<Page>;
  /** Called on every operation, so the sessions side can count it as activity (idle timeout). */
  touch(): void;
  /** Stops listening to the browser; the sessions side closes or disconnects it afterwards. */
  dispose(): void;
}

export interface SessionOperationsOptions {
  /** Entries the log ring buffer keeps; older ones are dropped and counted. */
  logCapacity?: number;
  /** Timestamps of log entries (the service passes `deps.clock.now`). */
  now?: () => Date;
  /** Told on every operation (the sessions side resets the idle timer). */
  onActivity?: () => void;
}

/**
 * Finds the live session `sessionId` for the request's caller and returns its operations, or throws the AppError
 * the caller should see (404 for another user's or another clientRef's session, 409 when it is not live).
 */
export type SessionResolver = (request: FastifyRequest, sessionId: string) => Promise<SessionOperations>;

export function createSessionOperations(browser: Browser, options: SessionOperationsOptions = {}): SessionOperations {
  const context = browser.contexts()[0];
  if (!context) throw new Error('The browser has no default context (connect with connectOverCDP)');
  const now = options.now ?? (() => new Date());
  const logs = createLogBuffer({ capacity: options.logCapacity, now });
  const tabs = createTabRegistry(context, { onPage: (page, tabId) => logs.watch(page, tabId) });
  return {
    browser,
    context,
    tabs,
    logs,
    activePage: () => tabs.activePage(),
    touch: () => options.onActivity?.(),
    dispose() {
      tabs.dispose();
      logs.dispose();
    },
  };
}
