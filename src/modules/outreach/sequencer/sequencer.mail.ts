import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import type { SendMailOptions } from 'nodemailer';
import type { Config } from '../../../config.ts';
import { safeEqual, secretKeyMaterial } from '../../../shared/crypto.ts';
import { isUuid } from '../../../shared/ids.ts';
import { escapeHtml } from '../../../shared/text.ts';

/**
 * The mails of outreach (docs/outreach.md "Outreach", Mails): a Message-ID recorded for threading, RFC 8058 one-click
 * unsubscribe headers and a visible link, optional open tracking. Links are built from PUBLIC_URL.
 */
export const publicUrlOf = (config: Pick<Config, 'PUBLIC_URL' | 'HOST' | 'PORT'>): string =>
  (config.PUBLIC_URL ?? `http://${config.HOST}:${config.PORT}`).replace(/\/+$/, '');

type KeyConfig = Pick<Config, 'SECRET_KEY' | 'dataDir'>;

/** The HMAC key of each configuration, imported once (every sent mail signs one or two links). */
const hmacKeys = new WeakMap<KeyConfig, KeyObject>();
function hmacKey(config: KeyConfig): KeyObject {
  let key = hmacKeys.get(config);
  if (!key) hmacKeys.set(config, (key = createSecretKey(Buffer.from(secretKeyMaterial(config)))));
  return key;
}

const signature = (config: KeyConfig, purpose: string, id: string) =>
  createHmac('sha256', hmacKey(config)).update(`${purpose}:${id}`).digest('base64url').slice(0, 32);

/** The MAC of a link token: 32 base64url characters (no padding). */
const MAC_SHAPE = /^[A-Za-z0-9_-]{32}$/;

/** A link token: the sent mail's id and a MAC under the secret key, so ids cannot be guessed or forged. */
export const linkToken = (config: KeyConfig, purpose: 'unsubscribe' | 'open', messageRowId: string): string =>
  `${messageRowId}.${signature(config, purpose, messageRowId)}`;

/** The mail id a token stands for, or undefined when it was not made here. */
export function tokenMessageId(config: KeyConfig, purpose: 'unsubscribe' | 'open', token: string): string | undefined {
  // Exactly `<uuid>.<mac>`: a trailing segment, padding or a short or long MAC names nothing.
  const parts = token.split('.');
  if (parts.length !== 2) return undefined;
  const [id, mac] = parts as [string, string];
  if (!isUuid(id) || !MAC_SHAPE.test(mac)) return undefined;
  return safeEqual(mac, signature(config, purpose, id)) ? id.toLowerCase() : undefined;
}

export interface OutgoingMail {
  from: string;
  fromName: string | null;
  to: string;
  subject: string;
  text: string;
  /** Without angle brackets. */
  messageId: string;
  inReplyTo: string | null;
  references: string[];
  unsubscribeUrl: string;
  /** The open-tracking image's URL when the campaign tracks opens. */
  openPixelUrl: string | null;
}

/** nodemailer's message options: exactly these headers, the text part, and an HTML part only for tracking. */
export function mailOptions(mail: OutgoingMail): SendMailOptions {
  const footer = `\n\n--\nTo stop receiving these emails: ${mail.unsubscribeUrl}\n`;
  const text = `${mail.text.replace(/\s+$/, '')}${footer}`;
  const options: SendMailOptions = {
    from: mail.fromName ? { name: mail.fromName, address: mail.from } : mail.from,
    to: mail.to,
    subject: mail.subject,
    text,
    messageId: `<${mail.messageId}>`,
    headers: {
      // RFC 8058: mail clients offer a one-click unsubscribe that POSTs `List-Unsubscribe=One-Click` to the URL.
      'List-Unsubscribe': `<${mail.unsubscribeUrl}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    },
  };
  if (mail.inReplyTo) {
    options.inReplyTo = `<${mail.inReplyTo}>`;
    options.references = mail.references.map((r) => `<${r}>`);
  }
  if (mail.openPixelUrl) {
    const paragraphs = mail.text
      .replace(/\s+$/, '')
      .split(/\n{2,}/)
      .map((p) => `<p>${escapeHtml(p).replace(/\n/g, '<br>')}</p>`)
      .join('\n');
    options.html =
      `<!doctype html><html><body>${paragraphs}\n<p style="font-size:12px;color:#666">` +
      `<a href="${escapeHtml(mail.unsubscribeUrl)}">Unsubscribe</a></p>` +
      `<img src="${escapeHtml(mail.openPixelUrl)}" width="1" height="1" alt="" style="display:none"></body></html>`;
  }
  return options;
}

/** What an SMTP failure means for the mail (docs/outreach.md "Outreach", Exactly once). */
export type SendFailure = 'rejected' | 'retry' | 'unknown';

/** Commands answered before any of the message is handed over: a refusal there is the mailbox's, not the lead's. */
const SESSION_COMMANDS = ['EHLO', 'HELO', 'LHLO', 'STARTTLS', 'AUTH', 'MAIL FROM', 'RSET', 'CONN'];
/** System errors of a connection that was never made. */
const NEVER_CONNECTED = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
]);
/** nodemailer's timeouts before the session could carry a message. */
const SETUP_TIMEOUTS = new Set(['CONNECT_TIMEOUT', 'GREETING_TIMEOUT', 'UPGRADE_TIMEOUT']);

/**
 * `rejected`: the server refused this recipient or message for good (a 5xx to RCPT TO or DATA): the lead's sequence
 * stops. `retry`: nothing was handed over: a 4xx, a refusal of the session itself (greeting, AUTH, MAIL FROM: the
 * mailbox's problem, never the lead's), a local check, or a connection that was never made. `unknown`: the
 * connection broke without an answer once it was up (nodemailer names every socket failure `CONN`, even one after
 * the message data went out), so the mail may have been delivered: it is never sent again.
 */
export function classifySendError(err: unknown): SendFailure {
  const e = err as {
    responseCode?: number;
    command?: string;
    code?: string;
    originalCode?: string;
    timeoutType?: string;
  };
  const command = (e.command ?? '').toUpperCase();
  if (typeof e.responseCode === 'number') {
    const recipientOrMessage = command.startsWith('RCPT TO') || command.startsWith('DATA');
    return recipientOrMessage && e.responseCode >= 500 && e.responseCode !== 503 ? 'rejected' : 'retry';
  }
  if (command === 'API' || e.code === 'EDNS' || e.code === 'EAUTH' || e.code === 'ENOAUTH' || e.code === 'ETLS')
    return 'retry';
  if (NEVER_CONNECTED.has(e.originalCode ?? '') || SETUP_TIMEOUTS.has(e.timeoutType ?? '')) return 'retry';
  if (command && SESSION_COMMANDS.some((c) => command.startsWith(c)) && command !== 'CONN') return 'retry';
  return 'unknown';
}

/** A failure of the session rather than of this recipient: the mailbox (its login, its server) is the problem. */
export function sessionFailure(err: unknown): boolean {
  const e = err as { responseCode?: number; command?: string };
  const command = (e.command ?? '').toUpperCase();
  return typeof e.responseCode !== 'number' || !(command.startsWith('RCPT TO') || command.startsWith('DATA'));
}
