import type { Socket } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { listenOnLoopback } from './smtp.ts';

/**
 * A real SMTP server on loopback that answers RCPT TO per address, for mailbox probing:
 * - a domain in `catchAllDomains` accepts every address;
 * - a domain in `hangDomains` never answers RCPT TO (the prober's per-step timeout);
 * - an address whose local part starts with `grey` is greylisted (451 4.7.1);
 * - an address in `mailboxes`, or any address at a domain in `openDomains` whose local part does not start
 *   with `qprobe-` (the prober's random addresses), is accepted;
 * - anything else is refused with 550 5.1.1 (user unknown).
 * It records every connection's commands (EHLO, MAIL, RCPT, DATA, QUIT…) and the most connections it held
 * at once per domain (the domain of a connection's first RCPT TO; it counts until QUIT or the close).
 */
export interface ProbeConnection {
  commands: string[];
  rcpts: string[];
  domain?: string;
  closed: boolean;
}

export interface ProbeServerOptions {
  mailboxes?: string[];
  openDomains?: string[];
  catchAllDomains?: string[];
  hangDomains?: string[];
}

export interface TestProbeServer {
  port: number;
  connections: ProbeConnection[];
  /** The most connections open at once, per domain and over all domains. */
  maxConcurrent: Map<string, number>;
  maxConcurrentOverall: number;
  /** Connections (closed or not) whose RCPTs named `domain`. */
  connectionsTo(domain: string): ProbeConnection[];
  reset(): void;
  close(): Promise<void>;
}

const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1).toLowerCase();

function smtpError(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code });
}

export async function startProbeServer(options: ProbeServerOptions = {}): Promise<TestProbeServer> {
  const mailboxes = new Set((options.mailboxes ?? []).map((m) => m.toLowerCase()));
  const open = new Set(options.openDomains ?? []);
  const catchAll = new Set(options.catchAllDomains ?? []);
  const hang = new Set(options.hangDomains ?? []);
  let connections: ProbeConnection[] = [];
  const maxConcurrent = new Map<string, number>();
  let maxOverall = 0;

  const concurrent = (domain?: string) =>
    connections.filter((c) => !c.closed && (domain === undefined || c.domain === domain)).length;

  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    // No reverse lookup of 127.0.0.1 through the system resolver on every connection.
    disableReverseLookup: true,
    onRcptTo(address, _session, callback) {
      const email = address.address.toLowerCase();
      const domain = domainOf(email);
      const local = email.slice(0, email.lastIndexOf('@'));
      if (hang.has(domain)) return;
      if (catchAll.has(domain)) return callback();
      if (local.startsWith('grey')) return callback(smtpError(451, '4.7.1 Greylisted, please try again later'));
      if (mailboxes.has(email) || (open.has(domain) && !local.startsWith('qprobe-'))) return callback();
      return callback(smtpError(550, `5.1.1 <${email}>: Recipient address rejected: User unknown`));
    },
    onData(stream, _session, callback) {
      stream.resume();
      stream.on('end', () => callback());
    },
  });
  // Every connection's raw commands, tapped on the socket next to the SMTP parser.
  server.server.on('connection', (socket: Socket) => {
    const connection: ProbeConnection = { commands: [], rcpts: [], closed: false };
    connections.push(connection);
    maxOverall = Math.max(maxOverall, concurrent());
    let buffer = '';
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('latin1');
      for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n')) {
        const line = buffer.slice(0, end).replace(/\r$/, '');
        buffer = buffer.slice(end + 1);
        const command = line.split(/[ :]/)[0]!.toUpperCase();
        connection.commands.push(command);
        // The client lets go of its slot once QUIT is answered, maybe before this side sees the close.
        if (command === 'QUIT') connection.closed = true;
        const rcpt = /^RCPT TO:\s*<([^>]*)>/i.exec(line);
        if (rcpt) {
          connection.rcpts.push(rcpt[1]!.toLowerCase());
          if (!connection.domain) {
            connection.domain = domainOf(rcpt[1]!);
            const now = concurrent(connection.domain);
            maxConcurrent.set(connection.domain, Math.max(maxConcurrent.get(connection.domain) ?? 0, now));
          }
        }
      }
    });
    socket.on('close', () => {
      connection.closed = true;
    });
  });
  const port = await listenOnLoopback(server);
  return {
    port,
    get connections() {
      return connections;
    },
    maxConcurrent,
    get maxConcurrentOverall() {
      return maxOverall;
    },
    connectionsTo: (domain) => connections.filter((c) => c.domain === domain),
    reset() {
      connections = [];
      maxConcurrent.clear();
      maxOverall = 0;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
