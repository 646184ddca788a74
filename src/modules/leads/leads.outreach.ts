import { and, eq, inArray, type SQL, sql } from 'drizzle-orm';
import { inUuids } from '../../db/array-literal.ts';
import type { Db, Tx } from '../../db/client.ts';
import { type LeadStatus, leads } from '../../db/schema/index.ts';

/**
 * What outreach asks of leads (README "Outreach"): a sent mail makes a lead CONTACTED, a reply REPLIED, an
 * unsubscribe UNSUBSCRIBED. A move never takes a lead back: a lead a person already qualified, disqualified or
 * converted keeps that status, and a reply is not undone by a later mail. One statement per batch.
 */
const MOVES_FROM: Record<'CONTACTED' | 'REPLIED' | 'UNSUBSCRIBED', readonly LeadStatus[]> = {
  CONTACTED: ['NEW', 'VALID', 'RISKY'],
  REPLIED: ['NEW', 'VALID', 'RISKY', 'CONTACTED'],
  UNSUBSCRIBED: ['NEW', 'VALID', 'RISKY', 'CONTACTED', 'REPLIED', 'QUALIFIED'],
};

export async function moveLeadsForOutreach(
  tx: Db | Tx,
  userId: string,
  leadIds: string[],
  status: keyof typeof MOVES_FROM,
  now: Date,
): Promise<void> {
  if (!leadIds.length) return;
  const where: SQL | undefined = and(
    eq(leads.userId, userId),
    inUuids(leads.id, leadIds),
    inArray(leads.status, [...MOVES_FROM[status]]),
  );
  await tx.update(leads).set({ status, updatedAt: now }).where(where);
}

/** What templates read of a lead (and the address a mail goes to). */
const TEMPLATE_COLUMNS = {
  id: leads.id,
  email: leads.email,
  firstName: leads.firstName,
  lastName: leads.lastName,
  company: leads.company,
  jobTitle: leads.jobTitle,
  phone: leads.phone,
  customFields: leads.customFields,
};

/** The user's leads among `ids` with what templates and the enrollment gates read. */
export function leadsForOutreach(db: Db | Tx, userId: string, ids: string[]) {
  if (!ids.length) return Promise.resolve([]);
  return db
    .select({ ...TEMPLATE_COLUMNS, status: leads.status, emailValidation: leads.emailValidation })
    .from(leads)
    .where(and(eq(leads.userId, userId), inUuids(leads.id, ids)));
}
export type OutreachLead = Awaited<ReturnType<typeof leadsForOutreach>>[number];

/** The user's leads among `ids` with what templates read: the sequencer's read, a thousand at a time. */
export function leadsForSending(db: Db | Tx, userId: string, ids: string[]) {
  if (!ids.length) return Promise.resolve([]);
  return db
    .select(TEMPLATE_COLUMNS)
    .from(leads)
    .where(and(eq(leads.userId, userId), inUuids(leads.id, ids)));
}
export type LeadToSend = Awaited<ReturnType<typeof leadsForSending>>[number];

/** Stores personalization results as custom fields (merged into what the lead has), one statement per lead. */
export async function mergeLeadCustomFields(
  tx: Db | Tx,
  userId: string,
  updates: Array<{ id: string; fields: Record<string, string> }>,
  now: Date,
): Promise<void> {
  for (const u of updates) {
    await tx
      .update(leads)
      .set({ customFields: sql`${leads.customFields} || ${JSON.stringify(u.fields)}::jsonb`, updatedAt: now })
      .where(and(eq(leads.userId, userId), eq(leads.id, u.id)));
  }
}
