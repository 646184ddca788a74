import net from 'node:net';
import { privateAddressReason } from '../ssrf.ts';

/**
 * A minimal SMTP client for mailbox probing (RFC 5321): it can greet, say EHLO/HELO, MAIL FROM, RCPT TO
 * and QUIT, and nothing else: it has no DATA command, so a probe can never send a message. nodemailer's
 * SMTPConnection only exposes RCPT through `send` (which goes on to DATA), hence this one.
 */

export interface SmtpReply {
  code: number;
  /** The RFC 3463 enhanced status code of the first line (`5.1.1`), when the server sent one. */
  enhanced?: string;
  text: string;
}

export type SmtpFailureKind = 'connect' | 'timeout' | 'closed' | 'protocol' | 'blocked';

export class SmtpProbeError extends Error {
  readonly kind: SmtpFailureKind;
  constructor(kind: SmtpFailureKind, message: string) {
    super(message);
    this.name = 'SmtpProbeError';
    this.kind = kind;
  }
}

const REPLY_LINE = /^(\d{3})(?:([ -])(.*))?$/;
const ENHANCED = /^([245]\.\d{1,3}\.\d{1,3})\b/;
/** A reply longer than this (lines or bytes) is not SMTP. */
const MAX_REPLY_LINES = 100;
const MAX_BUFFER = 64 * 1024;

export class SmtpSession {
  private buffer = '';
  private lines: string[] = [];
  private readonly replies: SmtpReply[] = [];
  private failure: SmtpProbeError | undefined;
  private wake: (() => void) | undefined;

  private readonly socket: net.Socket;
  private readonly timeoutMs: number;

  private constructor(socket: net.Socket, timeoutMs: number) {
    this.socket = socket;
    this.timeoutMs = timeoutMs;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => this.onData(chunk));
    socket.on('error', (err) => this.fail(new SmtpProbeError('closed', `connection error: ${err.message}`)));
    socket.on('close', () => this.fail(new SmtpProbeError('closed', 'the server closed the connection')));
  }

  /**
   * Connects to `address` (an IP literal, already checked against the SSRF rules) and reads the greeting.
   * Private addresses are refused unless `allowPrivate`.
   */
  static async open(address: string, port: number, options: { timeoutMs: number; allowPrivate: boolean }) {
    const reason = options.allowPrivate ? undefined : privateAddressReason(address);
    if (reason) throw new SmtpProbeError('blocked', `refused to connect to ${address}: it is ${reason}`);
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect({ host: address, port });
      const timer = setTimeout(() => {
        s.destroy();
        reject(new SmtpProbeError('connect', `no connection to ${address}:${port} within ${options.timeoutMs} ms`));
      }, options.timeoutMs);
      s.once('connect', () => {
        clearTimeout(timer);
        s.removeAllListeners('error');
        resolve(s);
      });
      s.once('error', (err) => {
        clearTimeout(timer);
        s.destroy();
        reject(new SmtpProbeError('connect', `cannot connect to ${address}:${port}: ${err.message}`));
      });
    });
    return new SmtpSession(socket, options.timeoutMs);
  }

  private fail(error: SmtpProbeError) {
    this.failure ??= error;
    this.wake?.();
  }

  private onData(chunk: string) {
    this.buffer += chunk;
    for (let end = this.buffer.indexOf('\n'); end >= 0; end = this.buffer.indexOf('\n')) {
      const line = this.buffer.slice(0, end).replace(/\r$/, '');
      this.buffer = this.buffer.slice(end + 1);
      const match = REPLY_LINE.exec(line);
      if (!match || this.lines.length >= MAX_REPLY_LINES) {
        this.fail(new SmtpProbeError('protocol', `not an SMTP reply: ${JSON.stringify(line.slice(0, 80))}`));
        this.socket.destroy();
        return;
      }
      this.lines.push(match[3] ?? '');
      if (match[2] !== '-') {
        const text = this.lines.join('\n');
        const enhanced = ENHANCED.exec(this.lines[0]!)?.[1];
        this.replies.push({ code: Number(match[1]), text, ...(enhanced ? { enhanced } : {}) });
        this.lines = [];
      }
    }
    if (this.buffer.length > MAX_BUFFER) {
      this.fail(new SmtpProbeError('protocol', 'reply line too long'));
      this.socket.destroy();
    }
    this.wake?.();
  }

  /** The next complete (possibly multi-line) reply; fails after the per-step timeout. */
  async read(timeoutMs = this.timeoutMs): Promise<SmtpReply> {
    for (;;) {
      const reply = this.replies.shift();
      if (reply) return reply;
      if (this.failure) throw this.failure;
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          this.wake = undefined;
          reject(new SmtpProbeError('timeout', `no reply within ${timeoutMs} ms`));
        }, timeoutMs);
        this.wake = () => {
          clearTimeout(timer);
          this.wake = undefined;
          resolve();
        };
      });
    }
  }

  /** Sends one command line and reads its reply. */
  async command(line: string): Promise<SmtpReply> {
    if (/[\r\n]/.test(line)) throw new SmtpProbeError('protocol', 'a command cannot contain a line break');
    if (this.failure) throw this.failure;
    this.socket.write(`${line}\r\n`);
    return this.read();
  }

  /** QUIT, politely (a short wait for the 221), then the connection is closed whatever happened. */
  async quit(): Promise<void> {
    try {
      if (!this.failure) {
        this.socket.write('QUIT\r\n');
        await this.read(Math.min(this.timeoutMs, 2000));
      }
    } catch {
      // The server may hang up without answering QUIT.
    } finally {
      this.close();
    }
  }

  close(): void {
    this.socket.end();
    this.socket.destroy();
  }
}
