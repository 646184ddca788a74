/**
 * The demo's mail side (docs/outreach.md, "Try it offline"): one sending mailbox, `you@quarry-demo.example`, whose
 * SMTP server takes mail for the demo members and keeps it in their made-up inboxes, readable on the demo site at
 * `/mail`; a member's reply (`POST /mail/<id>/reply`) lands in the sending mailbox's INBOX, which the demo IMAP
 * server serves, so Quarry's inbox reader sees it as a real reply. Everything is kept in memory; the SMTP and IMAP
 * servers and the `/mail` pages take the mailbox's login (HTTP Basic on the pages).
 */
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import type net from 'node:net';
import PostalMime from 'postal-mime';
import { SMTPServer } from 'smtp-server';
import { safeEqual } from '../src/shared/crypto.ts';
import { escapeHtml } from '../src/shared/text.ts';
import { layout } from './html.ts';
import { createDemoImapServer, DemoInbox } from './imap.ts';

/** A message the demo SMTP server took for a demo member. */
export interface DeliveredMail {
  id: number;
  to: string;
  from: string;
  subject: string;
  date: string;
  messageId: string | null;
  text: string;
  raw: Buffer;
  /** Message-IDs of the replies sent from here. */
  replies: string[];
}

export interface DemoMailOptions {
  /** The sending mailbox's address, also its SMTP and IMAP user name. */
  user: string;
  password: string;
  /** Who the demo SMTP server delivers to (the directory's members). */
  recipients: Array<{ email: string; name: string }>;
}

/** Delivered mail kept at most (oldest dropped): the demo holds everything in memory. */
const MAX_DELIVERED = 1000;
const MAX_MESSAGE = 1024 * 1024;

export function createDemoMail(options: DemoMailOptions) {
  const user = options.user.toLowerCase();
  const inbox = new DemoInbox();
  const delivered: DeliveredMail[] = [];
  let nextId = 1;
  const members = new Map(options.recipients.map((r) => [r.email.toLowerCase(), r.name]));
  const loginOk = (name: string | undefined, password: string | undefined) =>
    name?.toLowerCase() === user && password !== undefined && safeEqual(password, options.password);

  async function deliver(raw: Buffer, recipients: string[]): Promise<void> {
    const email = await PostalMime.parse(raw);
    for (const to of recipients) {
      if (to === user) {
        inbox.append(raw);
        continue;
      }
      delivered.push({
        id: nextId++,
        to,
        from: email.from?.address ?? '',
        subject: email.subject ?? '',
        date: new Date().toISOString(),
        messageId: email.messageId ?? null,
        text: email.text ?? '',
        raw,
        replies: [],
      });
      if (delivered.length > MAX_DELIVERED) delivered.shift();
    }
  }

  const smtp = new SMTPServer({
    // Plain SMTP with AUTH on loopback: a TLS certificate would be one more thing for a newcomer to trust.
    authOptional: false,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    size: MAX_MESSAGE,
    banner: 'Quarry demo SMTP',
    logger: false,
    onAuth(auth, _session, callback) {
      if (loginOk(auth.username, auth.password ?? undefined)) callback(null, { user: auth.username });
      else callback(Object.assign(new Error('5.7.8 invalid user name or password'), { responseCode: 535 }));
    },
    onRcptTo(address, _session, callback) {
      const to = address.address.toLowerCase();
      if (to === user || members.has(to)) return callback();
      callback(
        Object.assign(new Error(`5.1.1 <${to}>: the demo delivers only to the demo directory's members`), {
          responseCode: 550,
        }),
      );
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('error', callback);
      stream.on('end', () => {
        if (stream.sizeExceeded)
          return callback(Object.assign(new Error('5.3.4 message too big'), { responseCode: 552 }));
        const recipients = session.envelope.rcptTo.map((r) => r.address.toLowerCase());
        deliver(Buffer.concat(chunks), recipients).then(() => callback(), callback);
      });
    },
  });
  smtp.on('error', () => {});

  const imap: net.Server = createDemoImapServer({ accounts: new Map([[user, { password: options.password, inbox }]]) });

  /** A member's reply to a delivered mail, put in the sending mailbox's INBOX as their mail server would. */
  function reply(mail: DeliveredMail, text: string): { messageId: string; from: string; to: string; subject: string } {
    const domain = mail.to.split('@')[1]!;
    const messageId = `${randomBytes(12).toString('hex')}@${domain}`;
    const subject = /^re:/i.test(mail.subject) ? mail.subject : `Re: ${mail.subject}`;
    const original = mail.messageId ? `<${mail.messageId.replace(/^<|>$/g, '')}>` : '';
    const name = members.get(mail.to) ?? '';
    const quoted = mail.text
      .split(/\r?\n/)
      .map((l) => `> ${l}`)
      .join('\r\n');
    const headers = [
      `From: ${name ? `"${name.replace(/["\\]/g, '')}" ` : ''}<${mail.to}>`,
      `To: <${mail.from}>`,
      `Subject: ${subject.replace(/[\r\n]+/g, ' ')}`,
      `Date: ${new Date().toUTCString().replace('GMT', '+0000')}`,
      `Message-ID: <${messageId}>`,
      ...(original ? [`In-Reply-To: ${original}`, `References: ${original}`] : []),
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
    ];
    const body = `${text.replace(/\r?\n/g, '\r\n')}\r\n\r\n${quoted}\r\n`;
    inbox.append(Buffer.from(`${headers.join('\r\n')}\r\n\r\n${body}`));
    mail.replies.push(messageId);
    return { messageId, from: mail.to, to: mail.from, subject };
  }

  const view = (m: DeliveredMail) => ({
    id: m.id,
    to: m.to,
    from: m.from,
    subject: m.subject,
    date: m.date,
    messageId: m.messageId,
    replies: m.replies,
  });

  function listPage(): string {
    const rows = [...delivered]
      .reverse()
      .map(
        (m) =>
          `<tr><td>${escapeHtml(m.date)}</td><td>${escapeHtml(m.to)}</td>` +
          `<td><a href="/mail/${m.id}">${escapeHtml(m.subject || '(no subject)')}</a></td>` +
          `<td>${m.replies.length ? 'replied' : ''}</td></tr>`,
      )
      .join('\n');
    return layout(
      'Demo mail',
      `<h1>Mail delivered to the members</h1>
<p>What the demo mail server received from <code>${escapeHtml(user)}</code>, newest first.</p>
<table><tr><th>received</th><th>to</th><th>subject</th><th></th></tr>
${rows || '<tr><td colspan="4">Nothing yet.</td></tr>'}
</table>`,
    );
  }

  function mailPage(m: DeliveredMail): string {
    const name = members.get(m.to) ?? m.to;
    return layout(
      m.subject,
      `<p><a href="/mail">All mail</a></p>
<h1>${escapeHtml(m.subject || '(no subject)')}</h1>
<p>From ${escapeHtml(m.from)} to ${escapeHtml(name)} &lt;${escapeHtml(m.to)}&gt;, ${escapeHtml(m.date)}</p>
<pre>${escapeHtml(m.text)}</pre>
${m.replies.length ? `<p>${escapeHtml(name)} replied ${m.replies.length} time(s).</p>` : ''}
<form method="post" action="/mail/${m.id}/reply">
<p><label>Reply as ${escapeHtml(name)}<br>
<textarea name="text" rows="4" cols="60">Thanks, tell me more.</textarea></label></p>
<p><button>Send the reply</button></p>
</form>`,
    );
  }

  /** `POST /mail/<id>/reply`: `text` from a form or JSON (a default when empty). */
  async function postReply(
    req: http.IncomingMessage,
    mail: DeliveredMail,
    wantsJson: boolean,
    json: (status: number, body: unknown) => void,
    res: http.ServerResponse,
  ): Promise<void> {
    if (req.method !== 'POST') return json(405, { error: 'POST a reply' });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req) {
      size += (c as Buffer).length;
      if (size > 64 * 1024) return json(413, { error: 'the reply is too long' });
      chunks.push(c as Buffer);
    }
    const raw = Buffer.concat(chunks).toString('utf8');
    let text: string | undefined;
    if ((req.headers['content-type'] ?? '').includes('application/json')) {
      try {
        text = raw ? (JSON.parse(raw) as { text?: unknown }).text?.toString() : undefined;
      } catch {
        return json(400, { error: 'the body is not JSON' });
      }
    } else text = new URLSearchParams(raw).get('text') ?? undefined;
    const sent = reply(mail, (text ?? '').trim() || 'Thanks, tell me more.');
    if (wantsJson) json(201, { reply: sent });
    else res.writeHead(303, { location: `/mail/${mail.id}` }).end();
  }

  /** Serves `/mail…`; answers false for any other path. */
  async function handle(req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<boolean> {
    if (url.pathname !== '/mail' && !url.pathname.startsWith('/mail/')) return false;
    const json = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    const html = (status: number, body: string) =>
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' }).end(body);
    const [scheme, token] = (req.headers.authorization ?? '').split(' ');
    const [name, ...rest] = Buffer.from(token ?? '', 'base64')
      .toString('utf8')
      .split(':');
    if (scheme?.toLowerCase() !== 'basic' || !loginOk(name, rest.join(':'))) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="Quarry demo mail", charset="UTF-8"' });
      res.end('The demo mailbox login is needed (npm run demo-site prints it).\n');
      return true;
    }
    const wantsJson = (req.headers.accept ?? '').includes('application/json');
    const match = /^\/mail(?:\/(\d+)(\/reply)?)?$/.exec(url.pathname);
    const mail = match?.[1] ? delivered.find((m) => m.id === Number(match[1])) : undefined;
    if (!match || (match[1] && !mail)) {
      if (wantsJson) json(404, { error: 'no such mail' });
      else html(404, layout('Not found', '<h1>No such mail</h1>'));
    } else if (match[2]) {
      await postReply(req, mail!, wantsJson, json, res);
    } else if (mail) {
      if (wantsJson) json(200, { mail: { ...view(mail), text: mail.text } });
      else html(200, mailPage(mail));
    } else if (wantsJson) json(200, { messages: [...delivered].reverse().map(view) });
    else html(200, listPage());
    return true;
  }

  return { inbox, delivered, smtp, imap, handle };
}

export type DemoMail = ReturnType<typeof createDemoMail>;
