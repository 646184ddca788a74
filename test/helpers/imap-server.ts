import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ImapFlow } from 'imapflow';
import { freePort } from './process.ts';

/**
 * A real IMAP server for tests: Debian's Dovecot (`dovecot-imapd`, installed by .ci/run) started with its own
 * configuration in a temporary directory, listening on a free loopback port, plain IMAP with cleartext logins
 * (loopback only), users from a passwd-file, mail in Maildirs under the directory.
 */
export interface TestImapServer {
  port: number;
  /** `imap://user:pass@127.0.0.1:<port>` for a user of the server. */
  url(user: string): string;
  /** Stores a raw RFC 5322 message in the user's folder (IMAP APPEND), as delivery would. */
  append(user: string, raw: string | Buffer, folder?: string): Promise<void>;
  close(): Promise<void>;
}

const DOVECOT = process.env.DOVECOT_PATH ?? '/usr/sbin/dovecot';

export const dovecotAvailable = (): boolean => fs.existsSync(DOVECOT);

async function waitListening(port: number, child: ChildProcess, log: () => string, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`dovecot exited (${child.exitCode}): ${log()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`dovecot did not listen on ${port}: ${log()}`);
}

export async function startImapServer(options: {
  users: Array<{ user: string; pass: string }>;
}): Promise<TestImapServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-imap-'));
  fs.chmodSync(dir, 0o755);
  const mail = path.join(dir, 'mail');
  for (const sub of ['run', 'state', 'mail']) fs.mkdirSync(path.join(dir, sub));
  // Dovecot refuses to keep mail as root: as root, mail belongs to `nobody`; otherwise to the current user.
  const root = process.getuid?.() === 0;
  const uid = root ? 65534 : process.getuid!();
  const gid = root ? 65534 : process.getgid!();
  if (root) fs.chownSync(mail, uid, gid);
  const passwords = new Map(options.users.map((u) => [u.user, u.pass]));
  fs.writeFileSync(
    path.join(dir, 'users'),
    options.users.map((u) => `${u.user}:{PLAIN.b64}${Buffer.from(u.pass).toString('base64')}::::::\n`).join(''),
  );
  const port = await freePort();
  const conf = `
protocols = imap
listen = 127.0.0.1
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
first_valid_uid = 1
# IDLE sessions hear of new mail at once (inotify), or within a second where inotify is not available.
mailbox_idle_check_interval = 1 secs
mail_location = maildir:${mail}/%u
passdb {
  driver = passwd-file
  args = ${dir}/users
}
userdb {
  driver = static
  args = uid=${uid} gid=${gid} home=${mail}/%u
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
}
`;
  fs.writeFileSync(path.join(dir, 'dovecot.conf'), conf);
  const child = spawn(DOVECOT, ['-F', '-c', path.join(dir, 'dovecot.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (d) => (output += d));
  child.stderr?.on('data', (d) => (output += d));
  const log = () => {
    const file = path.join(dir, 'dovecot.log');
    return `${output}${fs.existsSync(file) ? fs.readFileSync(file, 'utf8').slice(-2000) : ''}`;
  };
  try {
    await waitListening(port, child, log);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const url = (user: string) => {
    const pass = passwords.get(user) ?? '';
    return `imap://${encodeURIComponent(user)}:${encodeURIComponent(pass)}@127.0.0.1:${port}`;
  };
  return {
    port,
    url,
    async append(user, raw, folder = 'INBOX') {
      const client = new ImapFlow({
        host: '127.0.0.1',
        port,
        secure: false,
        auth: { user, pass: passwords.get(user) ?? '' },
        logger: false,
      });
      await client.connect();
      try {
        await client.append(folder, raw);
      } finally {
        await client.logout().catch(() => {});
      }
    },
    async close() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
