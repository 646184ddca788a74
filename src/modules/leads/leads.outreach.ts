import { and, eq, inArray, type SQL, sql } from 'drizzle-orm';
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
): Promise<string[]> {
  if (!leadIds.length) return [];
  const where: SQL | undefined = and(
    eq(leads.userId, userId),
    inArray(leads.id, leadIds),
    inArray(leads.status, [...MOVES_FROM[status]]),
  );
  const rows = await tx.update(leads).set({ status, updatedAt: now }).where(where).returning({ id: leads.id });
  return rows.map((r) => r.id);
}

/** The user's leads among `ids` with what templates and the enrollment gates read. */
export function leadsForOutreach(db: Db | Tx, userId: string, ids: string[]) {
  if (!ids.length) return Promise.resolve([]);
  return db
    .select({
      id: leads.id,
      email: leads.email,
      firstName: leads.firstName,
      lastName: leads.lastName,
      company: leads.company,
      jobTitle: leads.jobTitle,
      phone: leads.phone,
      status: leads.status,
      customFields: leads.customFields,
      emailValidation: leads.emailValidation,
    })
    .from(leads)
    .where(and(eq(leads.userId, userId), inArray(leads.id, ids)));
}
export type OutreachLead = Awaited<ReturnType<typeof leadsForOutreach>>[number];

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
