/**
 * The demo's IMAP server: the smallest IMAP4rev1 (RFC 3501) that Quarry's inbox reader and IDLE watcher need
 * (docs/outreach.md, "Try it offline"), over one in-memory INBOX per demo mailbox, so a newcomer can try outreach
 * without a mail server of their own. Plain IMAP on loopback with LOGIN; what it does not implement is answered
 * `BAD`, never pretended.
 *
 *   CAPABILITY, LOGIN, LOGOUT, NOOP, LIST, SELECT/EXAMINE INBOX, CLOSE/UNSELECT, IDLE (RFC 2177),
 *   [UID] SEARCH (ALL, UID set, sequence set), [UID] FETCH (UID FLAGS RFC822.SIZE INTERNALDATE BODY[] BODY.PEEK[])
 */
import net from 'node:net';
import { safeEqual } from '../src/shared/crypto.ts';

export interface StoredMessage {
  uid: number;
  raw: Buffer;
  internalDate: Date;
  flags: Set<string>;
}

/** One mailbox's INBOX: messages in UID order, and who to tell when one arrives. */
export class DemoInbox {
  readonly uidValidity = Math.floor(Date.now() / 1000);
  readonly messages: StoredMessage[] = [];
  private uidNext = 1;
  private readonly listeners = new Set<() => void>();

  get nextUid(): number {
    return this.uidNext;
  }

  append(raw: Buffer, internalDate = new Date()): StoredMessage {
    const message = { uid: this.uidNext++, raw, internalDate, flags: new Set<string>() };
    this.messages.push(message);
    for (const listener of this.listeners) listener();
    return message;
  }

  watch(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

export interface DemoImapOptions {
  /** Login name → password and INBOX. */
  accounts: Map<string, { password: string; inbox: DemoInbox }>;
}

type Token = string | Token[];

/** Splits a command's arguments: atoms (with `[...]` sections kept whole), quoted strings, literals, lists. */
function tokenize(text: string, literals: Buffer[]): Token[] {
  const stack: Token[][] = [[]];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === ' ') i++;
    else if (c === '(') {
      const list: Token[] = [];
      stack.at(-1)!.push(list);
      stack.push(list);
      i++;
    } else if (c === ')') {
      if (stack.length === 1) throw new Error('unbalanced parenthesis');
      stack.pop();
      i++;
    } else if (c === '"') {
      let value = '';
      for (i++; i < text.length && text[i] !== '"'; i++) value += text[i] === '\\' ? text[++i] : text[i];
      if (i >= text.length) throw new Error('unterminated quoted string');
      stack.at(-1)!.push(value);
      i++;
    } else if (c === '\u0000') {
      const end = text.indexOf('\u0000', i + 1);
      stack.at(-1)!.push(literals[Number(text.slice(i + 1, end))]!.toString('utf8'));
      i = end + 1;
    } else {
      let atom = '';
      let depth = 0;
      while (i < text.length && (depth > 0 || !' ()"'.includes(text[i]!))) {
        if (text[i] === '[') depth++;
        if (text[i] === ']') depth--;
        atom += text[i++];
      }
      stack.at(-1)!.push(atom);
    }
  }
  if (stack.length !== 1) throw new Error('unbalanced parenthesis');
  return stack[0]!;
}

/** Whether `n` is in an IMAP set (`1,3:5,7:*`), `*` being `max` (RFC 3501 §9: `n:*` holds `max` even when n > max). */
function inSet(set: string, n: number, max: number): boolean {
  return set.split(',').some((part) => {
    const [a, b = a] = part.split(':').map((v) => (v === '*' ? max : Number(v)));
    if (!Number.isInteger(a) || !Number.isInteger(b)) throw new Error(`bad set ${set}`);
    return n >= Math.min(a!, b!) && n <= Math.max(a!, b!);
  });
}
const isSet = (token: Token): token is string => typeof token === 'string' && /^[\d*:,]+$/.test(token);

const imapDate = (d: Date) => {
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const pad = (n: number) => String(n).padStart(2, '0');
  return (
    `${pad(d.getUTCDate())}-${months[d.getUTCMonth()]}-${d.getUTCFullYear()} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000`
  );
};

const CAPABILITIES = 'IMAP4rev1 IDLE';
/**
 * The most one command may carry (its lines and literals): before LOGIN only enough for a user name and a
 * password, so an unauthenticated client cannot make the server hold much.
 */
const MAX_COMMAND = { loggedOut: 2 * 1024, loggedIn: 64 * 1024 } as const;

/** One client connection's state machine. */
function serve(socket: net.Socket, options: DemoImapOptions) {
  let inbox: DemoInbox | undefined;
  let selected: { readOnly: boolean; known: number } | undefined;
  let idleTag: string | undefined;
  let unwatch: (() => void) | undefined;
  let buffer = Buffer.alloc(0);
  let pending: { text: string; literals: Buffer[]; need: number } | undefined;
  let failedLogins = 0;

  const write = (line: string | Buffer) => {
    if (!socket.destroyed) socket.write(line);
  };
  const send = (line: string) => write(`${line}\r\n`);

  /** New messages since the client last heard, as `EXISTS` (outside a command only while idling). */
  const announce = () => {
    if (!inbox || !selected || selected.known === inbox.messages.length) return;
    selected.known = inbox.messages.length;
    send(`* ${selected.known} EXISTS`);
  };

  function fetchItems(message: StoredMessage, seq: number, items: string[], byUid: boolean): void {
    const parts: Array<string | Buffer> = [];
    const wanted = new Set(items.map((i) => i.toUpperCase()));
    if (byUid) wanted.add('UID');
    for (const item of wanted) {
      if (item === 'UID') parts.push(`UID ${message.uid}`);
      else if (item === 'FLAGS') parts.push(`FLAGS (${[...message.flags].join(' ')})`);
      else if (item === 'RFC822.SIZE') parts.push(`RFC822.SIZE ${message.raw.length}`);
      else if (item === 'INTERNALDATE') parts.push(`INTERNALDATE "${imapDate(message.internalDate)}"`);
      else if (item === 'BODY[]' || item === 'BODY.PEEK[]' || item === 'RFC822') {
        const name = item === 'RFC822' ? 'RFC822' : 'BODY[]';
        parts.push(Buffer.concat([Buffer.from(`${name} {${message.raw.length}}\r\n`), message.raw]));
        if (item !== 'BODY.PEEK[]' && selected && !selected.readOnly) message.flags.add('\\Seen');
      } else throw new Error(`the demo server does not fetch ${item}`);
    }
    const chunks: Buffer[] = [Buffer.from(`* ${seq} FETCH (`)];
    for (const [i, p] of parts.entries())
      chunks.push(Buffer.from(i ? ' ' : ''), Buffer.isBuffer(p) ? p : Buffer.from(p));
    chunks.push(Buffer.from(')\r\n'));
    write(Buffer.concat(chunks));
  }

  /** The messages a SEARCH key list selects (ALL, UID set, sequence set; keys are ANDed). */
  function search(keys: Token[]): StoredMessage[] {
    const messages = inbox!.messages;
    const maxUid = messages.at(-1)?.uid ?? 0;
    let matches = messages.map((m, i) => ({ m, seq: i + 1 }));
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k]!;
      if (typeof key === 'string' && key.toUpperCase() === 'ALL') continue;
      if (typeof key === 'string' && key.toUpperCase() === 'UID' && isSet(keys[k + 1]!)) {
        const set = keys[++k] as string;
        matches = matches.filter(({ m }) => inSet(set, m.uid, maxUid));
      } else if (isSet(key)) matches = matches.filter(({ seq }) => inSet(key, seq, messages.length));
      else throw new Error(`the demo server does not search by ${JSON.stringify(key)}`);
    }
    return matches.map(({ m }) => m);
  }

  function command(tag: string, name: string, args: Token[]) {
    const ok = (text = 'done') => send(`${tag} OK ${text}`);
    const bad = (text: string) => send(`${tag} BAD ${text}`);
    const authenticated = inbox !== undefined;
    let byUid = false;
    if (name === 'UID') {
      byUid = true;
      name = String(args.shift() ?? '').toUpperCase();
    }
    switch (name) {
      case 'CAPABILITY':
        send(`* CAPABILITY ${CAPABILITIES}`);
        return ok();
      case 'NOOP':
        announce();
        return ok();
      case 'LOGOUT':
        send('* BYE the demo mailbox says goodbye');
        ok();
        socket.end();
        return;
      case 'LOGIN': {
        // RFC 3501 §6.2.3: LOGIN is for the not-authenticated state (a second one would also leave a watcher).
        if (authenticated) return bad('already authenticated');
        const [user, password] = args;
        const account = typeof user === 'string' ? options.accounts.get(user.toLowerCase()) : undefined;
        if (!account || typeof password !== 'string' || !safeEqual(password, account.password)) {
          // Slow down guessing, as a real server would.
          if (++failedLogins >= 3) socket.end('* BYE too many failed logins\r\n');
          return send(`${tag} NO [AUTHENTICATIONFAILED] invalid user name or password`);
        }
        inbox = account.inbox;
        unwatch = inbox.watch(() => {
          if (idleTag) announce();
        });
        return ok(`[CAPABILITY ${CAPABILITIES}] logged in`);
      }
    }
    if (!authenticated) return bad('log in first');
    switch (name) {
      case 'LIST': {
        const pattern = String(args[1] ?? '');
        if (pattern === '') send('* LIST (\\Noselect) "/" ""');
        else if (/^(\*|%|inbox)$/i.test(pattern)) send('* LIST (\\HasNoChildren) "/" INBOX');
        return ok();
      }
      case 'SELECT':
      case 'EXAMINE': {
        if (String(args[0]).toUpperCase() !== 'INBOX') return send(`${tag} NO [NONEXISTENT] only INBOX exists here`);
        const readOnly = name === 'EXAMINE';
        selected = { readOnly, known: inbox!.messages.length };
        send('* FLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft)');
        send(`* ${selected.known} EXISTS`);
        send('* 0 RECENT');
        send(`* OK [UIDVALIDITY ${inbox!.uidValidity}] UIDs valid`);
        send(`* OK [UIDNEXT ${inbox!.nextUid}] predicted next UID`);
        send(`* OK [PERMANENTFLAGS (${readOnly ? '' : '\\Seen \\Flagged'})] flags`);
        return ok(`[${readOnly ? 'READ-ONLY' : 'READ-WRITE'}] ${name} completed`);
      }
      case 'CLOSE':
      case 'UNSELECT':
        selected = undefined;
        return ok();
      case 'IDLE':
        idleTag = tag;
        send('+ idling');
        return announce();
    }
    if (!selected) return bad('select INBOX first');
    switch (name) {
      case 'SEARCH': {
        const found = search(args);
        const ids = found.map((m) => (byUid ? m.uid : inbox!.messages.indexOf(m) + 1));
        send(`* SEARCH${ids.map((n) => ` ${n}`).join('')}`);
        return ok();
      }
      case 'FETCH': {
        const [set, items] = args;
        if (!isSet(set!)) return bad('FETCH needs a set');
        const list = (Array.isArray(items) ? items : [items]).map(String);
        const messages = inbox!.messages;
        const maxUid = messages.at(-1)?.uid ?? 0;
        messages.forEach((m, i) => {
          if (byUid ? inSet(set, m.uid, maxUid) : inSet(set, i + 1, messages.length)) fetchItems(m, i + 1, list, byUid);
        });
        return ok();
      }
    }
    bad(`the demo server does not implement ${name}`);
  }

  function line(text: string, literals: Buffer[]) {
    if (idleTag) {
      if (text.trim().toUpperCase() === 'DONE') send(`${idleTag} OK IDLE terminated`);
      else send(`${idleTag} BAD expected DONE`);
      idleTag = undefined;
      return;
    }
    const match = /^(\S+) (\S+)(?: (.*))?$/s.exec(text);
    if (!match) return send(`* BAD expected a tag and a command`);
    const [, tag, name, rest = ''] = match;
    try {
      command(tag!, name!.toUpperCase(), tokenize(rest, literals));
    } catch (err) {
      send(`${tag} BAD ${(err as Error).message}`);
    }
  }

  /** Stops a client that sends more than a command may carry (see MAX_COMMAND). */
  let refused = false;
  const tooLong = () => {
    refused = true;
    buffer = Buffer.alloc(0);
    socket.end('* BYE command too long\r\n', () => socket.destroy());
  };
  socket.on('data', (chunk: Buffer) => {
    if (refused || socket.destroyed) return;
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      const limit = inbox ? MAX_COMMAND.loggedIn : MAX_COMMAND.loggedOut;
      if (pending && pending.need > 0) {
        if (buffer.length < pending.need) return;
        pending.literals.push(buffer.subarray(0, pending.need));
        pending.text += `\u0000${pending.literals.length - 1}\u0000`;
        buffer = buffer.subarray(pending.need);
        pending.need = 0;
      }
      const held = pending ? pending.text.length + pending.literals.reduce((n, l) => n + l.length, 0) : 0;
      const end = buffer.indexOf('\r\n');
      if (end < 0) {
        if (held + buffer.length > limit) tooLong();
        return;
      }
      if (held + end > limit) return tooLong();
      const text = buffer.subarray(0, end).toString('utf8');
      buffer = buffer.subarray(end + 2);
      const current = pending ?? { text: '', literals: [], need: 0 };
      const literal = /\{(\d+)(\+?)\}$/.exec(text);
      if (literal) {
        // Refused before it is asked for (no `+ go ahead`), as RFC 3501 §7.5 allows.
        if (held + end + Number(literal[1]) > limit) return tooLong();
        current.text += text.slice(0, literal.index);
        current.need = Number(literal[1]);
        pending = current;
        if (!literal[2]) send('+ go ahead');
        continue;
      }
      pending = undefined;
      line(current.text + text, current.literals);
    }
  });
  socket.on('error', () => {});
  socket.on('close', () => unwatch?.());
  socket.setTimeout(30 * 60_000, () => socket.destroy());
  send(`* OK [CAPABILITY ${CAPABILITIES}] Quarry demo IMAP ready`);
}

/** The demo IMAP server (not yet listening). */
export function createDemoImapServer(options: DemoImapOptions): net.Server {
  return net.createServer((socket) => serve(socket, options));
}
