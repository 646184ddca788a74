import type { Db } from '../../src/db/client.ts';
import {
  type EmailValidationResult,
  type LeadStatus,
  leads,
  type ProfileFieldDefinition,
  profiles,
  profileTypes,
} from '../../src/db/schema/index.ts';
import { newId } from '../../src/shared/ids.ts';

/**
 * Direct inserts for tests that need many leads and profiles in place (the scraping path that
 * normally writes them has its own tests). Rows are inserted in chunks, in the order given, so ids
 * (UUIDv7) follow that order.
 */
export interface SeedLead {
  firstName?: string | null;
  lastName?: string | null;
  email?: string | null;
  phone?: string | null;
  company?: string | null;
  jobTitle?: string | null;
  status?: LeadStatus;
  tags?: string[];
  customFields?: Record<string, unknown>;
  sourceId?: string | null;
  jobId?: string | null;
  emailValidation?: EmailValidationResult | null;
  validatedAt?: Date | null;
  createdAt?: Date;
  updatedAt?: Date;
}

export async function seedLeads(db: Db, userId: string, rows: readonly SeedLead[]): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < rows.length; i += 1000) {
    const chunk = rows.slice(i, i + 1000).map((r) => {
      const id = newId();
      ids.push(id);
      return { id, userId, ...r, tags: r.tags ?? [], customFields: r.customFields ?? {} };
    });
    await db.insert(leads).values(chunk);
  }
  return ids;
}

export async function seedProfileType(
  db: Db,
  userId: string,
  fields: ProfileFieldDefinition[],
  name = `Type ${newId().slice(-8)}`,
): Promise<string> {
  const id = newId();
  await db
    .insert(profileTypes)
    .values({ id, userId, name, slug: name.toLowerCase().replace(/[^a-z0-9]+/g, '-'), fields });
  return id;
}

export interface SeedProfile {
  data: Record<string, unknown>;
  /** A lead to create with the profile (linked through profiles.lead_id). */
  lead?: SeedLead;
  status?: 'NEW' | 'REVIEWED' | 'QUALIFIED' | 'DISQUALIFIED' | 'ARCHIVED';
}

/** Profiles of one type (and their leads when given); returns the profile ids in order. */
export async function seedProfiles(
  db: Db,
  userId: string,
  profileTypeId: string,
  rows: readonly SeedProfile[],
): Promise<string[]> {
  const leadRows = rows.filter((r) => r.lead);
  const leadIds = leadRows.length
    ? await seedLeads(
        db,
        userId,
        leadRows.map((r) => r.lead!),
      )
    : [];
  let nextLead = 0;
  const ids: string[] = [];
  for (let i = 0; i < rows.length; i += 1000) {
    const chunk = rows.slice(i, i + 1000).map((r) => {
      const id = newId();
      ids.push(id);
      return {
        id,
        userId,
        profileTypeId,
        data: r.data,
        status: r.status ?? 'NEW',
        leadId: r.lead ? leadIds[nextLead++]! : null,
      };
    });
    await db.insert(profiles).values(chunk);
  }
  return ids;
}
