import PostalMime from 'postal-mime';
import { validationError } from '../../shared/errors.ts';

/** One recipient block of a `message/delivery-status` part (RFC 3464 §2.3). */
export interface DsnRecipient {
  /** The address of `Final-Recipient` (`rfc822; a@b` → `a@b`), else of `Original-Recipient`. */
  recipient: string;
  action: string;
  /** `Status`: an RFC 3463 enhanced status code. */
  status: string;
  diagnostic: string | null;
  /** The SMTP reply code at the start of an `smtp;` Diagnostic-Code. */
  smtpCode: number | null;
  remoteMta: string | null;
}

export interface ParsedDsn {
  reportingMta: string | null;
  originalEnvelopeId: string | null;
  /** Message-ID of the message that bounced (from the returned message or its headers). */
  originalMessageId: string | null;
  /** Who sent the message that bounced: its From, else the report's To (a DSN goes back to the sender). */
  sender: string | null;
  recipients: DsnRecipient[];
}

const REPORT_TYPES = new Set(['message/delivery-status', 'message/global-delivery-status']);
const HEADER_TYPES = new Set(['message/rfc822', 'text/rfc822-headers', 'message/global', 'message/global-headers']);

/** Header groups separated by blank lines, folded lines unfolded, names lower-cased (RFC 3464 §2.1). */
export function parseFieldGroups(text: string): Array<Map<string, string>> {
  const groups: Array<Map<string, string>> = [];
  let current = new Map<string, string>();
  let last: string | undefined;
  for (const line of text.replace(/\r\n?/g, '\n').split('\n')) {
    if (line.trim() === '') {
      if (current.size) groups.push(current);
      current = new Map();
      last = undefined;
    } else if (/^[ \t]/.test(line) && last) {
      current.set(last, `${current.get(last)} ${line.trim()}`);
    } else {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      last = line.slice(0, colon).trim().toLowerCase();
      current.set(last, line.slice(colon + 1).trim());
    }
  }
  if (current.size) groups.push(current);
  return groups;
}

/** `rfc822; a@b` → `a@b`; `dns; mx.example` → `mx.example`. */
const typedValue = (value: string | undefined): string | null => {
  if (!value) return null;
  const semi = value.indexOf(';');
  // A decoded part may carry NUL (quoted-printable `=00`): PostgreSQL text cannot hold it.
  const v = (semi >= 0 ? value.slice(semi + 1) : value).replaceAll('\0', '').trim().replace(/^<|>$/g, '');
  return v || null;
};

const decode = (content: ArrayBuffer | Uint8Array | string): string =>
  typeof content === 'string' ? content : new TextDecoder().decode(content);

const addressOf = (a: unknown): string | null => {
  const first = Array.isArray(a) ? a[0] : a;
  return (first as { address?: string } | undefined)?.address ?? null;
};

/**
 * Parses a delivery status notification: `raw` is a whole message (`message/rfc822`) or the body of a
 * `multipart/report` whose Content-Type header (with its boundary) is `contentType`. Recipients whose
 * Action is `delivered`, `relayed` or `expanded` are left out. Anything else is a 400 naming `body`.
 */
export async function parseDsn(raw: Buffer, contentType: string): Promise<ParsedDsn> {
  const message = contentType.toLowerCase().startsWith('multipart/')
    ? Buffer.concat([Buffer.from(`Content-Type: ${contentType}\r\n\r\n`), raw])
    : raw;
  let email: Awaited<ReturnType<typeof PostalMime.parse>>;
  try {
    email = await PostalMime.parse(message, { attachmentEncoding: 'arraybuffer' });
  } catch (err) {
    throw validationError('body', `not a MIME message: ${(err as Error).message}`);
  }
  const report = email.attachments.find((a) => REPORT_TYPES.has(a.mimeType.toLowerCase()));
  if (!report) throw validationError('body', 'no message/delivery-status part (RFC 3464)');
  const [perMessage, ...perRecipient] = parseFieldGroups(decode(report.content));
  if (!perMessage || !perRecipient.length) throw validationError('body', 'the delivery-status part has no recipient');

  let originalMessageId: string | null = null;
  let sender: string | null = null;
  const returned = email.attachments.find((a) => HEADER_TYPES.has(a.mimeType.toLowerCase()));
  if (returned) {
    const original = await PostalMime.parse(decode(returned.content)).catch(() => undefined);
    originalMessageId = original?.messageId?.trim() || null;
    sender = addressOf(original?.from);
  }
  sender ??= addressOf(email.to);

  const recipients: DsnRecipient[] = [];
  perRecipient.forEach((fields, i) => {
    const recipient = typedValue(fields.get('final-recipient') ?? fields.get('original-recipient'));
    const action = fields.get('action')?.toLowerCase() ?? '';
    const status = fields.get('status')?.match(/^\s*(\d\.\d{1,3}\.\d{1,3})/)?.[1];
    if (!recipient) throw validationError(`body.recipients.${i}.finalRecipient`, 'Final-Recipient is missing');
    if (!status) throw validationError(`body.recipients.${i}.status`, 'Status is missing or not an RFC 3463 code');
    if (['delivered', 'relayed', 'expanded'].includes(action)) return;
    const diagnostic = typedValue(fields.get('diagnostic-code'));
    const code = diagnostic?.match(/^([245]\d\d)\b/)?.[1];
    recipients.push({
      recipient,
      action,
      status,
      diagnostic,
      smtpCode: code ? Number(code) : null,
      remoteMta: typedValue(fields.get('remote-mta')),
    });
  });
  return {
    reportingMta: typedValue(perMessage.get('reporting-mta')),
    originalEnvelopeId: perMessage.get('original-envelope-id')?.trim() || null,
    originalMessageId,
    sender,
    recipients,
  };
}
