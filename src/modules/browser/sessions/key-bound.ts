/**
 * Connections opened with a credential an API key minted (a cdpUrl's socket, a live view's viewer) close when that
 * key stops standing: at once when it is revoked in any process (the keys' revocation event), and within
 * KEY_RECHECK_MS (and up to 2 s of jitter) when it expires (no event: a rotated key's grace ends, an expiry date
 * passes) or when a revocation's notification was lost while the listener was down.
 */
import type { AppDeps } from '../../../deps.ts';
import { sweepLoop } from '../../../shared/recovery-sweep.ts';

export const KEY_RECHECK_MS = 30_000;

export interface KeyBoundClients {
  /** Holds `close` while the connection is open; returns its removal (call it when the connection closes). */
  add(keyId: string | null, close: () => void): () => void;
  start(): void;
  stop(): void;
}

export function createKeyBoundClients(
  deps: Pick<AppDeps, 'apiKeys' | 'logger'>,
  recheckMs: number = KEY_RECHECK_MS,
): KeyBoundClients {
  const byKey = new Map<string, Set<() => void>>();
  const closeAll = (keyId: string) => {
    const closers = byKey.get(keyId);
    if (!closers) return;
    byKey.delete(keyId);
    // Each on its own: one that throws must not leave the others open (they are no longer held to be found again).
    for (const close of closers) {
      try {
        close();
      } catch (err) {
        deps.logger.warn({ err, keyId }, 'closing a connection of a revoked API key failed');
      }
    }
  };
  let unwatch: (() => void) | undefined;
  /** One query for every key with open connections. */
  const recheck = async () => {
    if (byKey.size === 0) return;
    const live = await deps.apiKeys.liveKeyIds([...byKey.keys()]);
    for (const keyId of [...byKey.keys()]) if (!live.has(keyId)) closeAll(keyId);
  };
  const rechecks = sweepLoop(deps.logger, 'rechecking API keys of open connections', recheck, recheckMs);
  return {
    add(keyId, close) {
      if (keyId === null) return () => {};
      let closers = byKey.get(keyId);
      if (!closers) byKey.set(keyId, (closers = new Set()));
      closers.add(close);
      return () => {
        closers.delete(close);
        if (closers.size === 0 && byKey.get(keyId) === closers) byKey.delete(keyId);
      };
    },
    start() {
      unwatch = deps.apiKeys.watchKeys(closeAll);
      rechecks.start();
    },
    stop() {
      unwatch?.();
      rechecks.stop();
    },
  };
}
