import type { Transporter } from 'nodemailer';

/**
 * Every nodemailer transport of the service is built here: outreach and warmup mailboxes (through ./mailbox.ts, to
 * a checked address) and the service's own mail (SMTP_URL, or the outbox). nodemailer is loaded with the first
 * mail, not at every start (docs/scaling-out.md "Start-up").
 */
export async function buildTransport(settings: string | Record<string, unknown>): Promise<Transporter> {
  const { default: nodemailer } = await import('nodemailer');
  return nodemailer.createTransport(settings);
}
