import type { ImapFlow } from 'imapflow';
import type { AppDeps } from '../../../deps.ts';
import { createSecretBox, secretKeyMaterial } from '../../../shared/crypto.ts';
import { mailboxEndpoints, openImapClient } from '../../../shared/mail/mailbox.ts';
import { connectionsRepository, type MailboxRow } from '../connections/connections.repository.ts';

type Deps = Pick<AppDeps, 'db' | 'config' | 'logger'>;

/** A connection that closed or could not open is tried again after this, doubling up to RECONNECT_MAX_MS. */
const RECONNECT_MS = 30_000;
const RECONNECT_MAX_MS = 30 * 60_000;

interface Watch {
  /** What the connection was opened with: a mailbox whose credentials change is watched anew. */
  version: string;
  client?: ImapFlow;
  retry?: NodeJS.Timeout;
  /** Failed openings in a row (the back-off). */
  failures: number;
  /** The server refused the login: not tried again until the mailbox changes. */
  refused?: boolean;
  stopped: boolean;
}

/**
 * IMAP IDLE for outreach mailboxes (docs/outreach.md "Outreach", Replies and bounces): each worker process keeps one
 * connection per mailbox with INBOX selected, and imapflow keeps IDLE running on it (RFC 2177), or polls with NOOP
 * where the server does not offer IDLE. When the server reports new messages, `onNewMail` asks for that mailbox to be
 * read at once; the scheduled reads (OUTREACH_IMAP_INTERVAL_SECONDS) stay as the safety net for anything missed while
 * a connection was down. `sync` follows the mailboxes as they are added, changed and removed.
 */
export function createInboxWatcher(deps: Deps, onNewMail: (mailboxId: string) => Promise<void>) {
  const box = createSecretBox(secretKeyMaterial(deps.config));
  const watches = new Map<string, Watch>();
  let closed = false;

  function stop(watch: Watch) {
    watch.stopped = true;
    clearTimeout(watch.retry);
    const client = watch.client;
    watch.client = undefined;
    if (client?.usable) void client.logout().catch(() => client.close());
    else client?.close();
  }

  async function open(mailbox: MailboxRow, watch: Watch): Promise<void> {
    watch.retry = undefined;
    if (watch.stopped) return;
    // Backs off (with jitter, so watches that fell together do not come back together) up to half an hour.
    const again = () => {
      if (watch.stopped || watch.retry) return;
      watch.client = undefined;
      const delay = Math.min(RECONNECT_MS * 2 ** watch.failures, RECONNECT_MAX_MS) * (0.5 + Math.random());
      watch.failures++;
      watch.retry = setTimeout(() => void open(mailbox, watch), delay);
      watch.retry.unref();
    };
    let client: ImapFlow | undefined;
    try {
      const { imap } = mailboxEndpoints(box, mailbox);
      if (!imap) return;
      client = await openImapClient(deps, imap, { watch: true });
      if (watch.stopped) return;
      watch.client = client;
      client.on('error', (err) => deps.logger.debug({ err, mailboxId: mailbox.id }, 'IMAP watch connection error'));
      client.on('close', again);
      client.on('exists', ({ count, prevCount }: { count: number; prevCount: number }) => {
        if (count > prevCount)
          onNewMail(mailbox.id).catch((err) =>
            deps.logger.warn({ err, mailboxId: mailbox.id }, 'inbox read not queued'),
          );
      });
      await client.connect();
      // Read-only: watching never changes flags; the reader opens its own connection to fetch.
      if (!watch.stopped) await client.mailboxOpen('INBOX', { readOnly: true });
      if (watch.stopped) stop(watch);
      else watch.failures = 0;
    } catch (err) {
      const refused = (err as { authenticationFailed?: boolean }).authenticationFailed === true;
      // The first failure of a run of them is told (a `close` may have counted it already).
      if (watch.failures <= 1 || refused)
        deps.logger.warn(
          { mailboxId: mailbox.id, error: String((err as Error).message ?? err).slice(0, 300) },
          refused ? 'IMAP watch login refused; not retried until the mailbox changes' : 'IMAP watch could not open',
        );
      // A refused login is not tried again and again (servers lock accounts and ban addresses for that): the
      // scheduled reader shows the error, and a new IMAP URL starts a new watch.
      if (refused) {
        watch.refused = true;
        watch.stopped = true;
        clearTimeout(watch.retry);
        watch.client = undefined;
        client?.close();
        return;
      }
      client?.close();
      again();
    }
  }

  return {
    /** Opens watches for mailboxes with IMAP not watched yet (or changed), and closes those of removed ones. */
    async sync(): Promise<void> {
      const mailboxes = await connectionsRepository(deps.db).imapMailboxes();
      // Closed while the mailboxes were read: open nothing more.
      if (closed) return;
      const wanted = new Map(mailboxes.map((m) => [m.id, m]));
      for (const [id, watch] of watches) {
        const now = wanted.get(id);
        if (!now || now.imapUrlEncrypted !== watch.version) {
          stop(watch);
          watches.delete(id);
        }
      }
      for (const mailbox of mailboxes) {
        if (watches.has(mailbox.id)) continue;
        const watch: Watch = { version: mailbox.imapUrlEncrypted ?? '', failures: 0, stopped: false };
        watches.set(mailbox.id, watch);
        void open(mailbox, watch);
      }
    },
    /** Mailboxes with an open, selected connection now (for tests and logs). */
    watching(): string[] {
      return [...watches].filter(([, w]) => w.client?.usable).map(([id]) => id);
    },
    /** Mailboxes whose server refused the login (left alone until their IMAP URL changes). */
    refused(): string[] {
      return [...watches].filter(([, w]) => w.refused).map(([id]) => id);
    },
    close(): void {
      closed = true;
      for (const watch of watches.values()) stop(watch);
      watches.clear();
    },
  };
}
