import { createHash } from 'node:crypto';
import type { AppDeps } from '../../../deps.ts';
import { createSecretBox, secretKeyMaterial } from '../../../shared/crypto.ts';
import { isConnectionError } from '../../../shared/db-errors.ts';
import { mailboxEndpoints, openImapClient } from '../../../shared/mail/mailbox.ts';
import { connectionsRepository, type MailboxRow } from '../connections/connections.repository.ts';
import { createInboxService, type InboundOutcome } from './inbox.service.ts';

type Deps = Pick<AppDeps, 'db' | 'clock' | 'config' | 'logger' | 'sentMail'>;

/** Messages fetched and processed between two saves of the mailbox's position. */
const FETCH_BATCH = 200;
/** How much earlier than its interval a mailbox may be read again. */
const CLAIM_SLACK_MS = 5_000;
/** A read that has not finished by then gives up (the next round continues from the saved position). */
const READ_TIMEOUT_MS = 5 * 60_000;

export type InboxRun = Record<InboundOutcome, number> & { mailboxes: number; failed: number };

const emptyRun = (): InboxRun => ({
  mailboxes: 0,
  failed: 0,
  reply: 0,
  auto_reply: 0,
  bounce: 0,
  duplicate: 0,
  unmatched: 0,
  unreadable: 0,
});

/**
 * Reads each outreach mailbox's INBOX over IMAP (docs/outreach.md "Outreach", Replies and bounces): the messages after the
 * last UID processed, in batches, the position saved after each batch (a new UIDVALIDITY starts over; what was
 * stored before is recognised by its Message-ID). A mailbox is read by one process at a time and at most every
 * OUTREACH_IMAP_INTERVAL_SECONDS: the read is claimed by moving its `imap_checked_at` first.
 */
export function createInboxReader(deps: Deps) {
  const box = createSecretBox(secretKeyMaterial(deps.config));
  const inbox = createInboxService(deps);
  const repo = connectionsRepository(deps.db);

  async function claim(mailboxId: string, force: boolean): Promise<MailboxRow | undefined> {
    const now = deps.clock.now();
    // A few seconds of slack, so a once-a-minute cron with a 60 s interval reads every minute, not every other.
    const since = new Date(now.getTime() - deps.config.OUTREACH_IMAP_INTERVAL_SECONDS * 1000 + CLAIM_SLACK_MS);
    return repo.claimImapCheck(mailboxId, now, force ? undefined : since);
  }

  async function read(mailbox: MailboxRow, run: InboxRun): Promise<void> {
    const { imap } = mailboxEndpoints(box, mailbox);
    if (!imap) return;
    const client = await openImapClient(deps, imap);
    client.on('error', (err) => deps.logger.warn({ err, mailboxId: mailbox.id }, 'IMAP connection error'));
    const deadline = Date.now() + READ_TIMEOUT_MS;
    await client.connect();
    try {
      const lock = await client.getMailboxLock('INBOX');
      try {
        const validity = client.mailbox ? String(client.mailbox.uidValidity) : '';
        let lastUid = mailbox.imapUidValidity === validity ? mailbox.imapLastUid : 0;
        // The UIDs first (`n:*` answers the last message even when its UID is below n, RFC 3501 §6.4.8), then
        // their messages in batches: each message is downloaded once, whatever the size of the backlog.
        const found = await client.search({ uid: `${lastUid + 1}:*` }, { uid: true });
        const uids = (found || []).filter((uid) => uid > lastUid).sort((a, b) => a - b);
        for (let i = 0; i < uids.length && Date.now() <= deadline; i += FETCH_BATCH) {
          const batch: Array<{ uid: number; source: Buffer }> = [];
          const wanted = uids.slice(i, i + FETCH_BATCH);
          for await (const m of client.fetch(wanted.join(','), { uid: true, source: true }, { uid: true }))
            if (m.source) batch.push({ uid: m.uid, source: m.source });
          batch.sort((a, b) => a.uid - b.uid);
          for (const m of batch) {
            let outcome: InboundOutcome;
            try {
              outcome = await inbox.process(
                mailbox,
                m.source,
                `imap-${mailbox.id}-${createHash('sha256').update(m.source).digest('hex').slice(0, 32)}@quarry`,
              );
            } catch (err) {
              // The database gone away: stop here, the position unsaved, and read it again next round.
              if (isConnectionError(err)) throw err;
              // One message that cannot be stored must not block the mailbox: it is logged and passed over.
              deps.logger.warn({ err, mailboxId: mailbox.id, uid: m.uid }, 'inbound mail could not be processed');
              outcome = 'unreadable';
            }
            run[outcome]++;
          }
          lastUid = wanted.at(-1)!;
          await repo.updateMailbox(mailbox.id, { imapUidValidity: validity, imapLastUid: lastUid, imapError: null });
        }
        await repo.updateMailbox(mailbox.id, { imapUidValidity: validity, imapError: null });
      } finally {
        lock.release();
      }
    } finally {
      await client.logout().catch(() => client.close());
    }
  }

  return {
    /**
     * Reads every mailbox whose turn it is (`force`: all of them now). A mailbox that cannot be read keeps its
     * position and shows the reason in `GET /api/outreach/accounts` (`imap.error`).
     */
    async runDue(options: { force?: boolean; mailboxIds?: string[] } = {}): Promise<InboxRun> {
      const run = emptyRun();
      const mailboxes = (await repo.imapMailboxes()).filter(
        (m) => !options.mailboxIds || options.mailboxIds.includes(m.id),
      );
      for (const candidate of mailboxes) {
        const mailbox = await claim(candidate.id, options.force ?? false);
        if (!mailbox) continue;
        run.mailboxes++;
        try {
          await read(mailbox, run);
        } catch (err) {
          run.failed++;
          const e = err as { responseText?: string; message?: string };
          const reason = (e.responseText ?? e.message ?? String(err)).slice(0, 500);
          deps.logger.warn({ mailboxId: mailbox.id, reason }, 'outreach inbox could not be read');
          await repo.updateMailbox(mailbox.id, { imapError: reason });
        }
      }
      return run;
    },
  };
}
