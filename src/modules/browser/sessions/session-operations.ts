/**
 * The operations of each live session of this host (tab ids, the log buffer), one set per Playwright connection:
 * made on first use, disposed when that connection closes with the session. The operation routes and a wake (which
 * marks the restored active tab) share them.
 */
import type { Browser } from 'playwright-core';
import { createSessionOperations, type SessionOperations } from '../tabs/session-browser.ts';
import type { LiveSession } from './host.ts';

const operationsOf = new WeakMap<Browser, SessionOperations>();

/** The operations on `browser` (the service's own connection to `live`), made once. */
export function operationsFor(browser: Browser, live: LiveSession, now: () => Date): SessionOperations {
  let operations = operationsOf.get(browser);
  if (!operations) {
    const created = createSessionOperations(browser, {
      now,
      onActivity: () => {
        live.lastActivity = now().getTime();
      },
    });
    operationsOf.set(browser, created);
    browser.once('disconnected', () => created.dispose());
    operations = created;
  }
  return operations;
}

/** The operations on `browser` if any operation made them already. */
export const existingOperations = (browser: Browser): SessionOperations | undefined => operationsOf.get(browser);
