import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { SmtpProbeError, type SmtpReply, SmtpSession } from '../../shared/mail/smtp-client.ts';

/**
 * SMTP mailbox probing (docs/outreach.md "SMTP probing"): asks the domain's best mail exchanger whether it would take
 * mail for the address (`RCPT TO`) and for a random address at the same domain (catch-all), then QUITs.
 * Never DATA. At most `perDomain` connections to one domain at once in this process; a domain's catch-all
 * answer is cached, so a known catch-all domain is not asked again.
 */

export type ProbeVerdict =
  /** The exchanger accepted the address and rejected (or was not asked about) a random one. */
  | { kind: 'mailbox' }
  /** The exchanger said the user does not exist (5.1.1 or a user-unknown 550/551/553). */
  | { kind: 'mailbox_not_found'; reply: SmtpReply }
  /** The exchanger accepts any address at the domain: acceptance says nothing of this one. */
  | { kind: 'catch_all' }
  /** No conclusive answer: greylisting, other 4xx, a policy 5xx, timeout, refused connection. */
  | { kind: 'unverified'; reason: string };

export interface SmtpProbeSettings {
  port: number;
  helo: string;
  from: string;
  timeoutMs: number;
  perDomain: number;
  allowPrivate: boolean;
  /** How long a domain's catch-all answer is reused. */
  catchAllTtlMs?: number;
  now?: () => number;
}

export interface MailHostSource {
  mailHosts(asciiDomain: string): Promise<{ status: string; hosts: string[] }>;
  addresses(host: string): Promise<string[]>;
}

/** Exchangers tried in preference order when the connection fails, and connection attempts in all. */
const MAX_HOSTS = 5;
const MAX_CONNECT_ATTEMPTS = 4;
const DEFAULT_CATCH_ALL_TTL_MS = 6 * 60 * 60_000;
const MAX_CACHE = 10_000;

/** RFC 3463 X.1.1 "bad destination mailbox address"; the texts older servers send with a bare 550. */
const USER_UNKNOWN_TEXT =
  /\b(user|mailbox|recipient|address|account)\b.{0,40}\b(unknown|not found|does not exist|doesn't exist|no such|invalid|not exist)|no such (user|mailbox|recipient)|unknown (user|recipient|mailbox)|user ?unknown/i;

type RcptAnswer = 'accepted' | 'unknown_user' | 'refused' | 'deferred';

export function classifyRcpt(reply: SmtpReply): RcptAnswer {
  if (reply.code >= 200 && reply.code < 300) return 'accepted';
  if (reply.code >= 400 && reply.code < 500) return 'deferred';
  if (reply.enhanced === '5.1.1') return 'unknown_user';
  const plain = !reply.enhanced || reply.enhanced === '5.0.0' || reply.enhanced.startsWith('5.1.');
  if ([550, 551, 553].includes(reply.code) && plain && USER_UNKNOWN_TEXT.test(reply.text)) return 'unknown_user';
  return 'refused';
}

// Per process: the connection slots and catch-all answers of each domain (keyed with the port, so a test
// server on another port does not inherit them).
const slots = new Map<string, { active: number; waiters: Array<() => void> }>();
const catchAll = new Map<string, { expires: number; value: boolean }>();

async function withSlot<T>(key: string, limit: number, run: () => Promise<T>): Promise<T> {
  let slot = slots.get(key);
  if (!slot) slots.set(key, (slot = { active: 0, waiters: [] }));
  while (slot.active >= limit) await new Promise<void>((resolve) => slot!.waiters.push(resolve));
  slot.active++;
  try {
    return await run();
  } finally {
    slot.active--;
    const next = slot.waiters.shift();
    if (next) next();
    else if (slot.active === 0) slots.delete(key);
  }
}

const unverified = (reason: string): ProbeVerdict => ({ kind: 'unverified', reason });

/** A random local part no one has: 16 hex characters after a fixed prefix. */
const randomLocal = () => `qprobe-${randomBytes(8).toString('hex')}`;

export function createSmtpProber(settings: SmtpProbeSettings, dns: MailHostSource) {
  const now = settings.now ?? Date.now;
  const ttl = settings.catchAllTtlMs ?? DEFAULT_CATCH_ALL_TTL_MS;

  /** A session with the first exchanger (by preference) that answers with a 220 greeting. */
  async function connect(hosts: string[]): Promise<SmtpSession | string> {
    let lastFailure = 'no mail exchanger address';
    let attempts = 0;
    for (const host of hosts.slice(0, MAX_HOSTS)) {
      const addresses = net.isIP(host) ? [host] : await dns.addresses(host);
      if (!addresses.length) lastFailure = `${host} has no address`;
      for (const address of addresses) {
        if (attempts++ >= MAX_CONNECT_ATTEMPTS) return lastFailure;
        let session: SmtpSession | undefined;
        try {
          session = await SmtpSession.open(address, settings.port, settings);
          const greeting = await session.read();
          if (greeting.code === 220) return session;
          lastFailure = `${host} greeted with ${greeting.code}`;
          await session.quit();
        } catch (err) {
          session?.close();
          lastFailure = `${host}: ${(err as Error).message}`;
        }
      }
    }
    return lastFailure;
  }

  async function converse(session: SmtpSession, address: string, domain: string, askRandom: boolean) {
    let hello = await session.command(`EHLO ${settings.helo}`);
    if (hello.code !== 250) hello = await session.command(`HELO ${settings.helo}`);
    if (hello.code !== 250) return unverified(`EHLO answered ${hello.code}`);
    const utf8 = /[^\x20-\x7e]/.test(address);
    if (utf8 && !/^SMTPUTF8$/im.test(hello.text)) return unverified('the server does not take SMTPUTF8 addresses');
    const mail = await session.command(`MAIL FROM:<${settings.from}>${utf8 ? ' SMTPUTF8' : ''}`);
    if (mail.code !== 250) return unverified(`MAIL FROM answered ${mail.code} ${mail.text}`);
    const rcpt = await session.command(`RCPT TO:<${address}>`);
    const answer = classifyRcpt(rcpt);
    if (answer === 'unknown_user') {
      remember(domain, false);
      return { kind: 'mailbox_not_found', reply: rcpt } as const;
    }
    if (answer !== 'accepted') return unverified(`RCPT TO answered ${rcpt.code} ${rcpt.text}`);
    if (!askRandom) return { kind: 'mailbox' } as const;
    const random = await session.command(`RCPT TO:<${randomLocal()}@${domain}>`);
    const randomAnswer = classifyRcpt(random);
    if (randomAnswer === 'accepted') {
      remember(domain, true);
      return { kind: 'catch_all' } as const;
    }
    // A deferred random address (greylisting it separately) says nothing about catch-all: not cached.
    if (randomAnswer !== 'deferred') remember(domain, false);
    return { kind: 'mailbox' } as const;
  }

  function remember(domain: string, value: boolean) {
    if (catchAll.size >= MAX_CACHE) catchAll.delete(catchAll.keys().next().value!);
    catchAll.set(`${settings.port}|${domain}`, { expires: now() + ttl, value });
  }

  return {
    /** Probes `local@asciiDomain` (the domain's DNS check has already answered `ok`). */
    async probe(local: string, asciiDomain: string): Promise<ProbeVerdict> {
      const domain = asciiDomain.toLowerCase();
      const key = `${settings.port}|${domain}`;
      const cachedCatchAll = () => {
        const known = catchAll.get(key);
        return known && known.expires > now() ? known.value : undefined;
      };
      // Every address of a known catch-all domain is accepted: no connection is needed to say so.
      if (cachedCatchAll() === true) return { kind: 'catch_all' };
      const { status, hosts } = await dns.mailHosts(domain);
      if (status !== 'ok' || !hosts.length) return unverified(`the domain's DNS answered ${status}`);
      return withSlot(key, settings.perDomain, async () => {
        // A probe that held the slot before may have learnt the answer meanwhile.
        const cached = cachedCatchAll();
        if (cached === true) return { kind: 'catch_all' } as const;
        const session = await connect(hosts);
        if (typeof session === 'string') return unverified(session);
        try {
          return await converse(session, `${local}@${domain}`, domain, cached === undefined);
        } catch (err) {
          return unverified(err instanceof SmtpProbeError ? err.message : String(err));
        } finally {
          await session.quit();
        }
      });
    },
  };
}
