import type { ImapFlow } from 'imapflow';
import type { AppDeps } from '../../deps.ts';
import { createSecretBox, secretKeyMaterial } from '../../shared/crypto.ts';
import { connectionsRepository, type MailboxRow } from './connections.repository.ts';
import { mailboxEndpoints, openImapClient } from './mailbox.transport.ts';

type Deps = Pick<AppDeps, 'db' | 'config' | 'logger'>;

/** A connection that closed or could not open is tried again this much later. */
const RECONNECT_MS = 30_000;

interface Watch {
  /** What the connection was opened with: a mailbox whose credentials change is watched anew. */
  version: string;
  client?: ImapFlow;
  retry?: NodeJS.Timeout;
  stopped: boolean;
}

/**
 * IMAP IDLE for outreach mailboxes (README "Outreach", Replies and bounces): each worker process keeps one
 * connection per mailbox with INBOX selected, and imapflow keeps IDLE running on it (RFC 2177), or polls with NOOP
 * where the server does not offer IDLE. When the server reports new messages, `onNewMail` asks for that mailbox to be
 * read at once; the scheduled reads (OUTREACH_IMAP_INTERVAL_SECONDS) stay as the safety net for anything missed while
 * a connection was down. `sync` follows the mailboxes as they are added, changed and removed.
 */
export function createInboxWatcher(deps: Deps, onNewMail: (mailboxId: string) => Promise<void>) {
  const box = createSecretBox(secretKeyMaterial(deps.config));
  const watches = new Map<string, Watch>();

  function stop(watch: Watch) {
    watch.stopped = true;
    clearTimeout(watch.retry);
    const client = watch.client;
    watch.client = undefined;
    if (client) void client.logout().catch(() => client.close());
  }

  async function open(mailbox: MailboxRow, watch: Watch): Promise<void> {
    watch.retry = undefined;
    if (watch.stopped) return;
    const again = () => {
      if (watch.stopped || watch.retry) return;
      watch.client = undefined;
      watch.retry = setTimeout(() => void open(mailbox, watch), RECONNECT_MS);
      watch.retry.unref();
    };
    let client: ImapFlow | undefined;
    try {
      const { imap } = mailboxEndpoints(box, mailbox);
      if (!imap) return;
      client = await openImapClient(deps, imap, { watch: true });
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
      await client.mailboxOpen('INBOX', { readOnly: true });
      if (watch.stopped) stop(watch);
    } catch (err) {
      // The reader reports why a mailbox cannot be read (GET /api/outreach/accounts); here it is only retried.
      deps.logger.debug({ err, mailboxId: mailbox.id }, 'IMAP watch could not open');
      client?.close();
      again();
    }
  }

  return {
    /** Opens watches for mailboxes with IMAP not watched yet (or changed), and closes those of removed ones. */
    async sync(): Promise<void> {
      const mailboxes = await connectionsRepository(deps.db).imapMailboxes();
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
        const watch: Watch = { version: mailbox.imapUrlEncrypted ?? '', stopped: false };
        watches.set(mailbox.id, watch);
        void open(mailbox, watch);
      }
    },
    /** Mailboxes with an open, selected connection now (for tests and logs). */
    watching(): string[] {
      return [...watches].filter(([, w]) => w.client?.usable).map(([id]) => id);
    },
    close(): void {
      for (const watch of watches.values()) stop(watch);
      watches.clear();
    },
  };
}
