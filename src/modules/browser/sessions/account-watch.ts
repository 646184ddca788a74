/**
 * A suspended or deleted user's sessions on this host are released, which closes their CDP clients: a cdpUrl must
 * not outlive the account (its token stays valid for minutes). Told by the API keys' per-user invalidation.
 */
import type { AppDeps } from '../../../deps.ts';
import { accountStatusOf } from '../../users/index.ts';
import type { BrowserHost } from './host.ts';
import type { SessionRow } from './sessions.repository.ts';
import type { SessionStatus } from './sessions.schemas.ts';

type End = (id: string, status: SessionStatus, reason: string) => Promise<SessionRow | undefined>;

/** Releases the user's sessions on this host when the account is no longer active; whether it did. */
export async function releaseIfAccountEnded(
  db: AppDeps['db'],
  host: BrowserHost | undefined,
  end: End,
  userId: string,
): Promise<boolean> {
  const mine = host?.sessions().filter((s) => s.userId === userId) ?? [];
  if (mine.length === 0) return false;
  const status = await accountStatusOf(db, userId);
  if (status === 'active') return false;
  const reason = status === 'suspended' ? 'the account was suspended' : 'the account was deleted';
  await Promise.all(mine.map((s) => end(s.id, 'RELEASED', reason).catch(() => {})));
  return true;
}

/** Watches the accounts of this host's sessions; returns the function that stops watching. */
export function watchAccounts(
  deps: Pick<AppDeps, 'db' | 'logger' | 'apiKeys' | 'notifier'>,
  host: BrowserHost,
  end: End,
): () => void {
  const recheck = (userId: string) =>
    releaseIfAccountEnded(deps.db, host, end, userId).catch((err) =>
      deps.logger.warn({ err, userId }, 'releasing sessions failed'),
    );
  const unwatch = deps.apiKeys.watchUsers(recheck);
  // Notifications sent while the listener was down are lost: every user with a session here is looked at again.
  const unreconnect = deps.notifier.onReconnect(() => {
    for (const userId of new Set(host.sessions().map((s) => s.userId))) void recheck(userId);
  });
  return () => {
    unwatch();
    unreconnect();
  };
}
