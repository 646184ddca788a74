/**
 * What a mail in an outreach mailbox's inbox is (docs/outreach.md "Outreach", Replies and bounces): a delivery status
 * notification (RFC 3464), an automatic reply (RFC 3834 and the common out-of-office markers), or a reply.
 */
export type InboundKind = 'bounce' | 'auto_reply' | 'reply';

export interface InboundHeaders {
  contentType: string;
  subject: string;
  from: string;
  /** Header names lower-cased, values as given (the first of repeated headers). */
  get(name: string): string | undefined;
}

const AUTO_SUBJECT =
  /^(auto(matic)?[ -]?(reply|response|antwort)|out of (the )?office|abwesenheitsnotiz|réponse automatique|autosvar|respuesta automática|risposta automatica|fuera de la oficina|vacation|on leave)\b/i;

/** RFC 3834 §5: `Auto-Submitted` other than `no`; plus what common auto-responders send instead. */
export function isAutoReply(h: InboundHeaders): boolean {
  const autoSubmitted = h.get('auto-submitted')?.trim().toLowerCase();
  if (autoSubmitted && autoSubmitted !== 'no') return true;
  if (h.get('x-autoreply') !== undefined || h.get('x-autorespond') !== undefined) return true;
  if (h.get('x-auto-response-suppress')?.toLowerCase().includes('oof')) return true;
  const precedence = h.get('precedence')?.trim().toLowerCase();
  if (precedence && ['auto_reply', 'bulk', 'junk'].includes(precedence)) return true;
  return AUTO_SUBJECT.test(h.subject.trim());
}

/** A multipart/report of report-type delivery-status (RFC 3462/6522), as MTAs send bounces. */
export function isDeliveryReport(h: InboundHeaders): boolean {
  const type = h.contentType.toLowerCase();
  return type.startsWith('multipart/report') && /report-type\s*=\s*"?(global-)?delivery-status/.test(type);
}

export function classifyInbound(h: InboundHeaders): InboundKind {
  if (isDeliveryReport(h)) return 'bounce';
  if (isAutoReply(h)) return 'auto_reply';
  return 'reply';
}

/** Message-IDs in a header (`<a@b> <c@d>`), without angle brackets. */
export function messageIdsOf(value: string | undefined): string[] {
  if (!value) return [];
  const ids = [...value.matchAll(/<([^<>\s]+)>/g)].map((m) => m[1]!);
  if (ids.length) return ids;
  const bare = value.trim();
  return bare && !/\s/.test(bare) ? [bare] : [];
}
