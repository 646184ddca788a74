import { and, eq, inArray } from 'drizzle-orm';
import type { Db, Tx } from '../../db/client.ts';
import { profiles, profileTypes } from '../../db/schema/index.ts';

/** What outreach personalization reads of leads' profiles: each lead's profiles, their type's name and data. */
export async function profilesOfLeads(
  db: Db | Tx,
  userId: string,
  leadIds: string[],
): Promise<Map<string, Array<{ type: string; data: Record<string, unknown> }>>> {
  const found = new Map<string, Array<{ type: string; data: Record<string, unknown> }>>();
  if (!leadIds.length) return found;
  const rows = await db
    .select({ leadId: profiles.leadId, type: profileTypes.name, data: profiles.data })
    .from(profiles)
    .innerJoin(profileTypes, eq(profileTypes.id, profiles.profileTypeId))
    .where(and(eq(profiles.userId, userId), inArray(profiles.leadId, leadIds)));
  for (const r of rows) {
    if (!r.leadId) continue;
    found.set(r.leadId, [...(found.get(r.leadId) ?? []), { type: r.type, data: r.data }]);
  }
  return found;
}
