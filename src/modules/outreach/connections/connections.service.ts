import type { AppDeps } from '../../../deps.ts';
import { createSecretBox, secretKeyMaterial } from '../../../shared/crypto.ts';
import { AppError, type ErrorDetail, notFound } from '../../../shared/errors.ts';
import { findOwned, newId } from '../../../shared/ids.ts';
import {
  type MailboxEndpoint,
  openImapClient,
  openSmtpTransport,
  parseMailboxUrl,
} from '../../../shared/mail/mailbox.ts';
import { decodeCursor, pageOf } from '../../../shared/pagination.ts';
import { platformClient } from '../providers/index.ts';
import { type PlatformProvider, platformFailure, platformWebhookAddress } from '../providers/platforms.ts';
import { dnsVitals } from './accounts.dns.ts';
import { type ConnectionRow, connectionsRepository, type MailboxRow } from './connections.repository.ts';
import type { ConnectionView, CreateConnectionInput, MailboxView } from './connections.schemas.ts';

type Deps = Pick<AppDeps, 'db' | 'clock' | 'config' | 'logger'>;

/** A credential check that has not answered by then fails (a host that accepts and never speaks). */
const VERIFY_TIMEOUT_MS = 20_000;

const startOfUtcDay = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));

function withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} did not answer within ${VERIFY_TIMEOUT_MS / 1000} s`)),
      VERIFY_TIMEOUT_MS,
    );
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** The server's own words for a failed login or connection, without the password (never in them). */
function reasonOf(err: unknown): string {
  const e = err as { message?: string; responseText?: string; response?: string; code?: string };
  const text = e.responseText ?? e.response ?? e.message ?? String(err);
  return [e.code && !text.includes(e.code) ? e.code : '', text].filter(Boolean).join(': ').slice(0, 500);
}

/** SMTP: EHLO and AUTH (nodemailer `verify`); the reason when refused. */
export async function verifySmtp(deps: Pick<AppDeps, 'config'>, endpoint: MailboxEndpoint): Promise<string | null> {
  let transport: Awaited<ReturnType<typeof openSmtpTransport>> | undefined;
  try {
    transport = await openSmtpTransport(deps, endpoint, { timeoutMs: VERIFY_TIMEOUT_MS });
    await withTimeout(transport.verify(), 'the SMTP server');
    return null;
  } catch (err) {
    return reasonOf(err);
  } finally {
    transport?.close();
  }
}

/** IMAP: LOGIN (imapflow with `verifyOnly`); the reason when refused. */
export async function verifyImap(deps: Pick<AppDeps, 'config'>, endpoint: MailboxEndpoint): Promise<string | null> {
  try {
    const client = await openImapClient(deps, endpoint, { verifyOnly: true });
    client.on('error', () => {});
    await withTimeout(client.connect(), 'the IMAP server');
    await client.logout().catch(() => {});
    return null;
  } catch (err) {
    return reasonOf(err);
  }
}

export function toMailboxView(row: MailboxRow, provider: ConnectionRow['provider'], sentToday: number): MailboxView {
  return {
    id: row.id,
    connectionId: row.connectionId,
    provider,
    email: row.email,
    fromName: row.fromName,
    dailyLimit: row.dailyLimit,
    sentToday,
    smtp: row.smtpHost ? { host: row.smtpHost, port: row.smtpPort ?? 0 } : null,
    imap: row.imapHost
      ? {
          host: row.imapHost,
          port: row.imapPort ?? 0,
          lastCheckedAt: row.imapCheckedAt?.toISOString() ?? null,
          error: row.imapError,
        }
      : null,
    username: row.username,
    externalId: row.externalId,
    createdAt: row.createdAt.toISOString(),
  };
}

/** Outreach connections and their mailboxes (docs/outreach.md "Outreach"): verified on create, credentials sealed. */
export function createConnectionService(deps: Deps) {
  const repo = connectionsRepository(deps.db);
  const box = createSecretBox(secretKeyMaterial(deps.config));

  async function viewsOf(rows: ConnectionRow[]): Promise<ConnectionView[]> {
    const mailboxes = await repo.mailboxesOf(rows.map((r) => r.id));
    const sent = await repo.sentSince(
      mailboxes.map((m) => m.id),
      startOfUtcDay(deps.clock.now()),
    );
    return rows.map((r) => ({
      webhook: null,
      id: r.id,
      provider: r.provider,
      name: r.name,
      apiKey: r.apiKeyHint ? `••••${r.apiKeyHint}` : null,
      accountLabel: r.accountLabel,
      verifiedAt: r.verifiedAt.toISOString(),
      mailboxes: mailboxes
        .filter((m) => m.connectionId === r.id)
        .map((m) => toMailboxView(m, r.provider, sent.get(m.id) ?? 0)),
      createdAt: r.createdAt.toISOString(),
    }));
  }

  const owned = (userId: string, id: string) => findOwned(id, 'Connection', (key) => repo.find(userId, key));

  /**
   * A platform (docs/outreach.md "Outreach", Platforms): its auth check and its sending accounts are read before anything is
   * stored; with PUBLIC_URL set, its webhooks are pointed at this connection's inbound address (Smartlead's belong to
   * campaigns: registered as each campaign is created). The address, which carries a secret, is shown once.
   */
  async function connectPlatform(
    userId: string,
    provider: PlatformProvider,
    name: string,
    apiKey: string,
  ): Promise<ConnectionView> {
    const client = platformClient(provider, apiKey, deps);
    const id = newId();
    const address = platformWebhookAddress(deps, provider, id);
    let label: string | null;
    let accounts: Awaited<ReturnType<typeof client.listAccounts>>;
    let webhookRegistered = false;
    try {
      label = (await client.verify()).accountLabel;
      accounts = await client.listAccounts();
      if (address.url && provider === 'instantly') {
        await client.registerWebhook({ url: address.url });
        webhookRegistered = true;
      }
    } catch (err) {
      platformFailure(err, provider, 'apiKey', true);
    }
    const now = deps.clock.now();
    const { connection } = await deps.db.transaction((tx) =>
      connectionsRepository(tx).insert(
        {
          id,
          userId,
          provider,
          name,
          apiKeyEncrypted: box.seal(apiKey),
          apiKeyHint: apiKey.slice(-4),
          accountLabel: label,
          verifiedAt: now,
          createdAt: now,
          updatedAt: now,
        },
        // An account without an address cannot send (the platform lists what it has, complete or not).
        [
          ...new Map(
            accounts
              .filter((a) => typeof a.email === 'string' && a.email.includes('@'))
              .map((a) => [a.email.toLowerCase(), a]),
          ).values(),
        ].map((a) => ({
          userId,
          email: a.email.toLowerCase(),
          fromName: a.fromName,
          dailyLimit: a.dailyLimit ?? 50,
          externalId: a.externalId,
          createdAt: now,
          updatedAt: now,
        })),
      ),
    );
    const [view] = await viewsOf([connection]);
    return {
      ...view!,
      webhook: { url: address.url ?? address.path, registered: webhookRegistered, shownOnce: true },
    };
  }

  return {
    async create(userId: string, input: CreateConnectionInput): Promise<ConnectionView> {
      if (input.provider !== 'smtp') return connectPlatform(userId, input.provider, input.name, input.apiKey!);
      const mailboxes = input.mailboxes!;
      // Every mailbox is checked before anything is stored; all failures are named at once.
      const failures = (
        await Promise.all(
          mailboxes.map(async (m, i): Promise<ErrorDetail[]> => {
            const smtp = parseMailboxUrl(m.smtpUrl, 'smtp')!;
            const imap = parseMailboxUrl(m.imapUrl, 'imap')!;
            const [smtpFailure, imapFailure] = await Promise.all([verifySmtp(deps, smtp), verifyImap(deps, imap)]);
            return [
              ...(smtpFailure ? [{ field: `mailboxes.${i}.smtpUrl`, message: `SMTP: ${smtpFailure}` }] : []),
              ...(imapFailure ? [{ field: `mailboxes.${i}.imapUrl`, message: `IMAP: ${imapFailure}` }] : []),
            ];
          }),
        )
      ).flat();
      if (failures.length)
        throw new AppError('CONNECTION_FAILED', failures.map((f) => `${f.field}: ${f.message}`).join('; '), {
          details: failures,
        });
      const now = deps.clock.now();
      const { connection } = await deps.db.transaction((tx) =>
        connectionsRepository(tx).insert(
          { userId, provider: 'smtp', name: input.name, verifiedAt: now, createdAt: now, updatedAt: now },
          mailboxes.map((m) => {
            const smtp = parseMailboxUrl(m.smtpUrl, 'smtp')!;
            const imap = parseMailboxUrl(m.imapUrl, 'imap')!;
            return {
              userId,
              email: m.email,
              fromName: m.fromName ?? null,
              dailyLimit: m.dailyLimit,
              smtpUrlEncrypted: box.seal(m.smtpUrl),
              imapUrlEncrypted: box.seal(m.imapUrl),
              smtpHost: smtp.host,
              smtpPort: smtp.port,
              imapHost: imap.host,
              imapPort: imap.port,
              username: smtp.user,
              createdAt: now,
              updatedAt: now,
            };
          }),
        ),
      );
      return (await viewsOf([connection]))[0]!;
    },

    async list(userId: string, query: { limit: number; cursor?: string }) {
      const rows = await repo.list(userId, decodeCursor(query.cursor), query.limit);
      const page = pageOf(rows, query.limit);
      return { connections: await viewsOf(page.items), nextCursor: page.nextCursor };
    },

    async remove(userId: string, id: string): Promise<void> {
      const row = await owned(userId, id);
      if (!(await repo.remove(userId, row.id))) throw notFound('Connection');
    },

    /** DNS vitals of the mailbox's domain: MX, SPF, DKIM, DMARC, each with what was read. */
    async testAccount(userId: string, id: string, dkimSelector?: string) {
      const mailbox = await findOwned(id, 'Account', (key) => repo.findMailbox(userId, key));
      return dnsVitals({
        email: mailbox.email,
        smtpHost: mailbox.smtpHost,
        dkimSelector,
        servers: deps.config.DNS_SERVERS,
      });
    },

    async listAccounts(userId: string, query: { limit: number; cursor?: string; connectionId?: string }) {
      const connection = query.connectionId
        ? await findOwned(query.connectionId, 'Connection', (key) => repo.find(userId, key), 'connectionId')
        : undefined;
      const rows = await repo.listMailboxes(userId, connection?.id, decodeCursor(query.cursor), query.limit);
      const page = pageOf(rows, query.limit);
      const connections = new Map<string, ConnectionRow>();
      for (const m of page.items) {
        if (!connections.has(m.connectionId))
          connections.set(m.connectionId, (await repo.find(userId, m.connectionId))!);
      }
      const sent = await repo.sentSince(
        page.items.map((m) => m.id),
        startOfUtcDay(deps.clock.now()),
      );
      return {
        accounts: page.items.map((m) =>
          toMailboxView(m, connections.get(m.connectionId)!.provider, sent.get(m.id) ?? 0),
        ),
        nextCursor: page.nextCursor,
      };
    },
  };
}
