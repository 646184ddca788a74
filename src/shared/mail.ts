import fs from 'node:fs/promises';
import path from 'node:path';
import type { Transporter } from 'nodemailer';
import type { Logger } from 'pino';
import { buildTransport } from './mail/transport.ts';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
  close(): void;
}

/**
 * Mail goes over SMTP when SMTP_URL is set; otherwise each message is written as an .eml file
 * to DATA_DIR/outbox/ (and logged without its body), so a fresh install needs no mail server.
 */
export function createMailer(options: { smtpUrl?: string; from: string; dataDir: string; logger?: Logger }): Mailer {
  // Built with the first message, not at every start (docs/scaling-out.md "Start-up").
  let transport: Promise<Transporter> | undefined;
  const transportOf = (settings: string | Record<string, unknown>) =>
    (transport ??= buildTransport(settings).catch((error: unknown) => {
      transport = undefined; // the next message tries again
      throw error;
    }));
  if (options.smtpUrl) {
    const smtpUrl = options.smtpUrl;
    return {
      async send(message) {
        await (await transportOf(smtpUrl)).sendMail({ from: options.from, ...message });
      },
      close: () =>
        void transport?.then(
          (t) => t.close(),
          () => {},
        ),
    };
  }
  const outbox = path.join(options.dataDir, 'outbox');
  return {
    async send(message) {
      const stream = await transportOf({ streamTransport: true, buffer: true, newline: 'unix' });
      const info = await stream.sendMail({ from: options.from, ...message });
      await fs.mkdir(outbox, { recursive: true });
      const file = path.join(
        outbox,
        `${new Date().toISOString().replace(/[:.]/g, '-')}-${info.messageId.replace(/[^\w.-]/g, '')}.eml`,
      );
      await fs.writeFile(file, info.message as Buffer);
      options.logger?.info(
        { to: message.to, subject: message.subject, file },
        'mail written to outbox (SMTP_URL not set)',
      );
    },
    close: () => {},
  };
}
