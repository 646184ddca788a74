import type { AddressInfo } from 'node:net';
import PostalMime from 'postal-mime';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  raw: Buffer;
}

export interface TestSmtpServer {
  /** `smtp://127.0.0.1:<port>` for SMTP_URL. */
  url: string;
  port: number;
  messages: ReceivedMail[];
  /** Recipients (lower case) refused at RCPT TO with `550 5.1.1`, as a server refuses a mailbox it does not take. */
  refused: Set<string>;
  /** Waits for a message to `to` (the first one not yet taken) and returns it. */
  waitFor(to: string, timeoutMs?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

/** Starts `server` on a free loopback port and answers the port (later socket errors are the tests' to see). */
export async function listenOnLoopback(server: SMTPServer): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  server.on('error', () => {});
  return (server.server.address() as AddressInfo).port;
}

/** A real SMTP server on loopback that keeps every message it receives, parsed. */
export async function startSmtpServer(
  options: { auth?: { user: string; pass: string } } = {},
): Promise<TestSmtpServer> {
  const messages: ReceivedMail[] = [];
  const taken = new Set<ReceivedMail>();
  const waiters: Array<() => void> = [];
  const refused = new Set<string>();
  const server = new SMTPServer({
    // With `auth`: AUTH PLAIN/LOGIN over the plain connection (loopback), refused for other credentials.
    authOptional: !options.auth,
    allowInsecureAuth: true,
    disabledCommands: options.auth ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
    onAuth(auth, _session, callback) {
      const good = options.auth && auth.username === options.auth.user && auth.password === options.auth.pass;
      callback(good ? null : new Error('Invalid username or password'), good ? { user: auth.username } : undefined);
    },
    logger: false,
    onRcptTo(address, _session, callback) {
      if (!refused.has(address.address.toLowerCase())) return callback();
      callback(Object.assign(new Error('5.1.1 Mailbox unavailable'), { responseCode: 550 }));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('error', callback);
      stream.on('end', () => {
        const raw = Buffer.concat(chunks);
        PostalMime.parse(raw).then(
          (email) => {
            messages.push({
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
              subject: email.subject ?? '',
              text: email.text ?? '',
              raw,
            });
            for (const wake of waiters.splice(0)) wake();
            callback();
          },
          (err: Error) => callback(err),
        );
      });
    },
  });
  const port = await listenOnLoopback(server);

  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    messages,
    refused,
    async waitFor(to, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = messages.find((m) => !taken.has(m) && m.to.includes(to.toLowerCase()));
        if (found) {
          taken.add(found);
          return found;
        }
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no mail to ${to} within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A header of a raw message (the first with that name, unfolded), without its name. */
export function headerOf(raw: Buffer, name: string): string | undefined {
  return raw
    .toString('utf8')
    .split(/\r?\n\r?\n/)[0]!
    .replace(/\r?\n[ \t]+/g, ' ')
    .split(/\r?\n/)
    .find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`))
    ?.slice(name.length + 1)
    .trim();
}

export interface ScriptedSmtpServer {
  port: number;
  /** The recipient of every message whose data arrived (lower case), in order. */
  received: string[];
  /** Connections accepted so far. */
  readonly connections: number;
  close(): Promise<void>;
}

/**
 * A bare SMTP server on loopback for what a well-behaved server never does: per recipient, `refuse` answers
 * RCPT TO with `550 5.1.1`, and `drop` takes the whole message, then closes the connection before answering the
 * final dot (the answer is lost: the mail may have arrived). Everything else is accepted.
 */
export async function startScriptedSmtp(
  script: { refuse?: (rcpt: string) => boolean; drop?: (rcpt: string) => boolean } = {},
): Promise<ScriptedSmtpServer> {
  const net = await import('node:net');
  const received: string[] = [];
  let connections = 0;
  const server = net.createServer((s) => {
    connections++;
    s.write('220 scripted.test ESMTP\r\n');
    let inData = false;
    let buf = '';
    let rcpt = '';
    s.on('data', (d) => {
      buf += d.toString();
      for (let i = buf.indexOf('\r\n'); i >= 0; i = buf.indexOf('\r\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (inData) {
          if (line !== '.') continue;
          inData = false;
          received.push(rcpt);
          if (script.drop?.(rcpt)) return void s.destroy();
          s.write('250 queued\r\n');
        } else if (/^RCPT TO:/i.test(line)) {
          rcpt = line.replace(/^RCPT TO:\s*<?([^>\s]*)>?.*$/i, '$1').toLowerCase();
          s.write(script.refuse?.(rcpt) ? '550 5.1.1 no such user\r\n' : '250 ok\r\n');
        } else if (/^DATA/i.test(line)) {
          inData = true;
          s.write('354 go ahead\r\n');
        } else if (/^QUIT/i.test(line)) {
          return void s.end('221 bye\r\n');
        } else s.write('250 ok\r\n');
      }
    });
    s.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    received,
    get connections() {
      return connections;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
