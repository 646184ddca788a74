import type { ImapFlow } from 'imapflow';
import type { Transporter } from 'nodemailer';
import type { Config } from '../../config.ts';
import type { SecretBox } from '../crypto.ts';
import { AppError } from '../errors.ts';
import { privateAddressReason } from '../ssrf.ts';
import { addressesOf, dnsResolverOf } from './dns.ts';
import { buildTransport } from './transport.ts';

/**
 * Connections to a sending mailbox (SMTP and IMAP): outreach's built-in `smtp` provider (docs/outreach.md "Outreach")
 * and warmup. The URLs are sealed at rest; each connection goes to the address the SSRF guard checked (resolved
 * through DNS_SERVERS), never to a name resolved again later, and is built from explicit fields only (a URL's query
 * would become nodemailer transport options).
 */
export interface MailboxEndpoint {
  host: string;
  port: number;
  /** Implicit TLS (`smtps:`, `imaps:`); otherwise STARTTLS when the server offers it. */
  secure: boolean;
  user: string;
  pass: string;
}

const DEFAULT_PORTS = { smtp: 587, smtps: 465, imap: 143, imaps: 993 } as const;

/** The parts of an `smtp(s)://` or `imap(s)://` URL with credentials; undefined when it is not one. */
export function parseMailboxUrl(url: string, kind: 'smtp' | 'imap'): MailboxEndpoint | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  const scheme = parsed.protocol.slice(0, -1);
  if (scheme !== kind && scheme !== `${kind}s`) return undefined;
  if (!parsed.hostname || !parsed.username) return undefined;
  if ((parsed.pathname && parsed.pathname !== '/') || parsed.search || parsed.hash) return undefined;
  let user: string;
  let pass: string;
  try {
    // A stray `%` (a password not percent-encoded) is a malformed URL, not a crash.
    user = decodeURIComponent(parsed.username);
    pass = decodeURIComponent(parsed.password);
  } catch {
    return undefined;
  }
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: parsed.port ? Number(parsed.port) : DEFAULT_PORTS[scheme as keyof typeof DEFAULT_PORTS],
    secure: scheme.endsWith('s'),
    user,
    pass,
  };
}

type Deps = { config: Pick<Config, 'DNS_SERVERS' | 'ALLOW_PRIVATE_NETWORK'> };

/**
 * The address the mailbox is reached at: its host resolved through DNS_SERVERS (as the SPF check saw it) and
 * checked by the SSRF guard unless ALLOW_PRIVATE_NETWORK; the connection goes to that address, so DNS cannot
 * change between the check and the connection. A string says why there is none.
 */
export async function mailboxAddress(
  host: string,
  settings: { servers: string[] | undefined; allowPrivate: boolean },
): Promise<{ address: string } | { refused: string }> {
  const addresses = await addressesOf(host, dnsResolverOf(settings.servers));
  if (!addresses.length) return { refused: `the mailbox host ${host} does not resolve` };
  if (!settings.allowPrivate) {
    for (const address of addresses) {
      const reason = privateAddressReason(address);
      if (reason)
        return { refused: `the mailbox host ${host} is ${reason} (${address}); set ALLOW_PRIVATE_NETWORK to allow it` };
    }
  }
  return { address: addresses[0]! };
}

/** The checked address of the mailbox host, or 400 CONNECTION_FAILED saying why it is refused. */
export async function reachableAddress(deps: Deps, host: string, field: string): Promise<string> {
  const reach = await mailboxAddress(host, {
    servers: deps.config.DNS_SERVERS,
    allowPrivate: deps.config.ALLOW_PRIVATE_NETWORK,
  });
  if ('refused' in reach)
    throw new AppError('CONNECTION_FAILED', reach.refused, { details: [{ field, message: reach.refused }] });
  return reach.address;
}

export interface SmtpTransportOptions {
  /** Pooled connections (the sequencer); default one connection per message. */
  pool?: boolean;
  maxConnections?: number;
  /** Milliseconds for the connection, the greeting and each reply; null: nodemailer's own (warmup). */
  timeoutMs?: number | null;
}

/** A nodemailer transport to the mailbox's SMTP server (loaded on first use, docs/scaling-out.md "Start-up"). */
export async function openSmtpTransport(
  deps: Deps,
  endpoint: MailboxEndpoint,
  options: SmtpTransportOptions = {},
): Promise<Transporter> {
  const address = await reachableAddress(deps, endpoint.host, 'smtpUrl');
  const timeout = options.timeoutMs === undefined ? 30_000 : options.timeoutMs;
  return buildTransport({
    host: address,
    port: endpoint.port,
    secure: endpoint.secure,
    auth: { user: endpoint.user, pass: endpoint.pass },
    tls: { servername: endpoint.host },
    pool: options.pool ?? false,
    maxConnections: options.maxConnections ?? 1,
    ...(timeout === null ? {} : { connectionTimeout: timeout, greetingTimeout: timeout, socketTimeout: timeout }),
  });
}

/**
 * A mailbox row's SMTP transport in one call, the way the sequencer's mail reaches the wire (docs/architecture-mail-path.md;
 * outreach's one-off emails still call `mailboxEndpoints` and `openSmtpTransport` themselves):
 * its sealed URL opened, the host resolved and checked, the transport built, and with `verify` a connection and AUTH
 * tried (nodemailer `verify`) so a wrong password or a server that is down fails here, before anything is recorded.
 * Rejects when the row has no SMTP URL.
 */
export async function openMailboxSmtp(
  deps: Deps,
  box: SecretBox,
  row: { smtpUrlEncrypted: string | null; imapUrlEncrypted: string | null },
  options: SmtpTransportOptions & { verify?: boolean } = {},
): Promise<Transporter> {
  const { smtp } = mailboxEndpoints(box, row);
  if (!smtp) throw new Error('The mailbox has no SMTP URL');
  const transport = await openSmtpTransport(deps, smtp, options);
  if (options.verify) {
    try {
      await transport.verify();
    } catch (err) {
      transport.close();
      throw err;
    }
  }
  return transport;
}

/** An ImapFlow client (not yet connected) for the mailbox's IMAP server. */
export async function openImapClient(
  deps: Deps,
  endpoint: MailboxEndpoint,
  options: {
    verifyOnly?: boolean;
    /** A watching connection: IDLE from a second after the last command. */
    watch?: boolean;
  } = {},
): Promise<ImapFlow> {
  const address = await reachableAddress(deps, endpoint.host, 'imapUrl');
  const { ImapFlow } = await import('imapflow');
  return new ImapFlow({
    host: address,
    port: endpoint.port,
    secure: endpoint.secure,
    servername: endpoint.host,
    auth: { user: endpoint.user, pass: endpoint.pass },
    logger: false,
    verifyOnly: options.verifyOnly ?? false,
    // RFC 2177 §3: IDLE re-issued at least every 29 minutes (some servers drop it after ten).
    ...(options.watch ? { autoIdleDelay: 1000, maxIdleTime: 9 * 60_000 } : {}),
    tls: { servername: endpoint.host },
  });
}

/** The sealed URLs of a mailbox row, opened. */
export function mailboxEndpoints(
  box: SecretBox,
  row: { smtpUrlEncrypted: string | null; imapUrlEncrypted: string | null },
): { smtp?: MailboxEndpoint; imap?: MailboxEndpoint } {
  return {
    smtp: row.smtpUrlEncrypted ? parseMailboxUrl(box.open(row.smtpUrlEncrypted), 'smtp') : undefined,
    imap: row.imapUrlEncrypted ? parseMailboxUrl(box.open(row.imapUrlEncrypted), 'imap') : undefined,
  };
}
