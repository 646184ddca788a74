import { domainToUnicode } from 'node:url';
import { and, eq, inArray, min, sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/client.ts';
import { type LeadProvenance, leads } from '../../db/schema/index.ts';

/**
 * What deliverability asks of leads (README, Email verification): hard bounces mark leads INVALID, and the
 * spam-trap check reads where and how addresses were found. Addresses are compared lower-cased.
 */
const lowerEmail = sql`lower(${leads.email})`;
const emailDomain = sql<string>`split_part(lower(${leads.email}), '@', 2)`;

/**
 * Every lead of the user with one of `emails` becomes INVALID, whatever its status, and its stored
 * validation gains the error `hard_bounced` (status `invalid`, tier `mailbox`: a bounce is the mailbox's
 * own answer). One statement for the batch. Answers the leads changed.
 */
export async function markLeadsHardBounced(
  tx: Db | Tx,
  userId: string,
  emails: string[],
  now: Date,
): Promise<Array<{ id: string; email: string }>> {
  if (!emails.length) return [];
  // Bounces name the address with its domain in punycode; a lead may hold the same address in Unicode.
  const spellings = new Map<string, string>();
  for (const email of emails) {
    spellings.set(email, email);
    const at = email.lastIndexOf('@');
    const unicode = `${email.slice(0, at)}@${domainToUnicode(email.slice(at + 1)).toLowerCase()}`;
    if (at > 0 && unicode !== email && !unicode.endsWith('@')) spellings.set(unicode, email);
  }
  const ev = sql`coalesce(${leads.emailValidation}, '{}'::jsonb)`;
  const rows = await tx
    .update(leads)
    .set({
      status: 'INVALID',
      emailValidation: sql`${ev} || jsonb_build_object(
        'status', 'invalid',
        'tier', 'mailbox',
        'errors', (coalesce(${ev}->'errors', '[]'::jsonb) - 'hard_bounced') || '["hard_bounced"]'::jsonb,
        'flags', coalesce(${ev}->'flags', '[]'::jsonb),
        'email', ${leads.email},
        'checkedAt', ${now.toISOString()}::text)`,
      validatedAt: now,
      updatedAt: now,
    })
    .where(and(eq(leads.userId, userId), inArray(lowerEmail, [...spellings.keys()])))
    .returning({ id: leads.id, email: leads.email });
  return rows.map((r) => {
    const lower = (r.email ?? '').toLowerCase();
    return { id: r.id, email: spellings.get(lower) ?? lower };
  });
}

/** The user's leads among `ids`, with their email and provenance. */
export async function leadsForTrapCheck(db: Db | Tx, userId: string, ids: string[]) {
  if (!ids.length) return [];
  return db
    .select({ id: leads.id, email: leads.email })
    .from(leads)
    .where(and(eq(leads.userId, userId), inArray(leads.id, ids)));
}

/**
 * Per address: whether any of the user's leads with it was found in a visible element, and whether any
 * was found in an invisible one (provenance `visible: false`).
 */
export async function visibilityOfEmails(db: Db | Tx, userId: string, emails: string[]) {
  const out = new Map<string, { visible: boolean; invisible: boolean }>();
  if (!emails.length) return out;
  const rows = await db
    .select({ email: lowerEmail.mapWith(String), provenance: leads.provenance })
    .from(leads)
    .where(and(eq(leads.userId, userId), inArray(lowerEmail, emails)));
  for (const r of rows) {
    const seen = out.get(r.email) ?? { visible: false, invisible: false };
    if ((r.provenance as LeadProvenance | null)?.visible === false) seen.invisible = true;
    else seen.visible = true;
    out.set(r.email, seen);
  }
  return out;
}

/** When the user's leads first showed each domain, and the user's oldest lead (for "first seen recently"). */
export async function domainsFirstSeen(db: Db | Tx, userId: string, domains: string[]) {
  const firstSeen = new Map<string, Date>();
  if (!domains.length) return { firstSeen, oldest: undefined };
  const [rows, [oldest]] = await Promise.all([
    db
      .select({ domain: emailDomain, at: min(leads.createdAt) })
      .from(leads)
      .where(and(eq(leads.userId, userId), inArray(emailDomain, domains)))
      .groupBy(emailDomain),
    db
      .select({ at: min(leads.createdAt) })
      .from(leads)
      .where(eq(leads.userId, userId)),
  ]);
  for (const r of rows) if (r.at) firstSeen.set(r.domain, r.at);
  return { firstSeen, oldest: oldest?.at ?? undefined };
}
