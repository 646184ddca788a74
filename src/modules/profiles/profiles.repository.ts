import { and, desc, eq, lt, type SQL, sql } from 'drizzle-orm';
import { type Db, queryRows } from '../../db/client.ts';
import { matchingResults, type ProfileStatus, profiles, profileTypes } from '../../db/schema/index.ts';

export type ProfileRow = typeof profiles.$inferSelect;
export interface ProfileWithType {
  profile: ProfileRow;
  type: { id: string; name: string; slug: string };
}

export interface ProfileFilter {
  profileTypeId?: string;
  status?: ProfileStatus;
  sourceId?: string;
  jobId?: string;
  q?: string;
}

const INSERT_CHUNK = 500;

/** `%text%` for ILIKE with the wildcard characters of `text` taken literally. */
const containsPattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

function filterWhere(userId: string, f: ProfileFilter, before?: string): SQL | undefined {
  const pattern = f.q ? containsPattern(f.q) : undefined;
  return and(
    eq(profiles.userId, userId),
    f.profileTypeId ? eq(profiles.profileTypeId, f.profileTypeId) : undefined,
    f.status ? eq(profiles.status, f.status) : undefined,
    f.sourceId ? eq(profiles.sourceId, f.sourceId) : undefined,
    f.jobId ? eq(profiles.jobId, f.jobId) : undefined,
    before ? lt(profiles.id, before) : undefined,
    // Values only (not keys); array elements one by one.
    pattern
      ? sql`EXISTS (SELECT 1 FROM jsonb_each(${profiles.data}) AS e(key, value)
          WHERE CASE WHEN jsonb_typeof(e.value) = 'array'
            THEN EXISTS (SELECT 1 FROM jsonb_array_elements_text(e.value) AS a(v) WHERE a.v ILIKE ${pattern})
            ELSE (e.value #>> '{}') ILIKE ${pattern} END)`
      : undefined,
  );
}

/** A jsonb value that counts as filled in: not null, "", [] or {}. */
const filled = (v: SQL) => sql`(jsonb_typeof(${v}) <> 'null' AND ${v} NOT IN ('""'::jsonb, '[]'::jsonb, '{}'::jsonb))`;

export function profileRepository(db: Db) {
  const withType = () =>
    db
      .select({ profile: profiles, type: { id: profileTypes.id, name: profileTypes.name, slug: profileTypes.slug } })
      .from(profiles)
      .innerJoin(profileTypes, eq(profileTypes.id, profiles.profileTypeId));

  return {
    /** Inserts in chunks inside one transaction: all or nothing. */
    async insertMany(rows: Array<typeof profiles.$inferInsert>): Promise<ProfileRow[]> {
      if (!rows.length) return [];
      return db.transaction(async (tx) => {
        const out: ProfileRow[] = [];
        for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
          out.push(
            ...(await tx
              .insert(profiles)
              .values(rows.slice(i, i + INSERT_CHUNK))
              .returning()),
          );
        }
        return out;
      });
    },

    /**
     * Profiles of scraped leads, at most one per (profile type, lead): one a lead already has is
     * skipped. Chunked under PostgreSQL's parameter limit; run it in the caller's transaction.
     */
    async insertForLeads(rows: Array<typeof profiles.$inferInsert>): Promise<number> {
      let inserted = 0;
      for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
        const chunk = rows.slice(i, i + INSERT_CHUNK);
        const stored = await db.insert(profiles).values(chunk).onConflictDoNothing().returning({ id: profiles.id });
        inserted += stored.length;
      }
      return inserted;
    },

    /** Newest first (id DESC); `limit + 1` rows so the caller can tell whether another page exists. */
    list(userId: string, filter: ProfileFilter, limit: number, before?: string): Promise<ProfileWithType[]> {
      return withType()
        .where(filterWhere(userId, filter, before))
        .orderBy(desc(profiles.id))
        .limit(limit + 1);
    },

    async find(userId: string, id: string): Promise<ProfileWithType | undefined> {
      const [row] = await withType()
        .where(and(eq(profiles.userId, userId), eq(profiles.id, id)))
        .limit(1);
      return row;
    },

    /** Merges `set` into data and removes `remove` keys in one statement (no lost concurrent edits). */
    async patch(
      userId: string,
      id: string,
      change: { set: Record<string, unknown>; remove: string[]; status?: ProfileStatus; updatedAt: Date },
    ): Promise<ProfileRow | undefined> {
      let data = sql`(${profiles.data} || ${JSON.stringify(change.set)}::jsonb)`;
      for (const key of change.remove) data = sql`(${data} - ${key}::text)`;
      const [row] = await db
        .update(profiles)
        .set({ data, ...(change.status ? { status: change.status } : {}), updatedAt: change.updatedAt })
        .where(and(eq(profiles.userId, userId), eq(profiles.id, id)))
        .returning();
      return row;
    },

    /** One page of an export, keyset on id DESC. */
    exportPage(userId: string, filter: ProfileFilter, limit: number, before?: string): Promise<ProfileRow[]> {
      return db
        .select()
        .from(profiles)
        .where(filterWhere(userId, filter, before))
        .orderBy(desc(profiles.id))
        .limit(limit);
    },

    /**
     * One page of an export through a matching rule's stored results (matched ones only unless
     * `includeUnmatched`), keyset on id DESC; each row carries its result.
     */
    exportPageWithResults(
      userId: string,
      filter: ProfileFilter,
      rule: { id: string; includeUnmatched: boolean },
      limit: number,
      before?: string,
    ) {
      return db
        .select({
          profile: profiles,
          matched: matchingResults.matched,
          matchScore: matchingResults.matchScore,
          aiReasoning: matchingResults.aiReasoning,
        })
        .from(profiles)
        .innerJoin(
          matchingResults,
          and(eq(matchingResults.profileId, profiles.id), eq(matchingResults.ruleId, rule.id)),
        )
        .where(
          and(
            filterWhere(userId, filter, before),
            rule.includeUnmatched ? undefined : eq(matchingResults.matched, true),
          ),
        )
        .orderBy(desc(profiles.id))
        .limit(limit);
    },

    async countByStatus(userId: string): Promise<Array<{ status: ProfileStatus; count: number }>> {
      const rows = await queryRows<{ status: ProfileStatus; count: number }>(
        db,
        sql`
        SELECT status, count(*)::int AS count FROM ${profiles} WHERE user_id = ${userId} GROUP BY status`,
      );
      return rows.map((r) => ({ status: r.status, count: Number(r.count) }));
    },

    /**
     * One row per (profile type, field) of the user, in type then field order: the type's profile
     * count and how many of them have a non-empty value for the field. Aggregated in SQL: each
     * profile is read once and its filled keys are counted.
     */
    async completeness(userId: string) {
      const rows = await queryRows<{
        id: string;
        name: string;
        slug: string;
        total: number;
        field: string | null;
        filled: number;
      }>(
        db,
        sql`
        WITH totals AS (
          SELECT profile_type_id, count(*)::int AS total FROM ${profiles} WHERE user_id = ${userId}
          GROUP BY profile_type_id
        ), filled AS (
          SELECT p.profile_type_id, e.key, count(*)::int AS filled
          FROM ${profiles} p CROSS JOIN LATERAL jsonb_each(p.data) AS e(key, value)
          WHERE p.user_id = ${userId} AND ${filled(sql`e.value`)}
          GROUP BY p.profile_type_id, e.key
        )
        SELECT pt.id, pt.name, pt.slug, coalesce(t.total, 0)::int AS total, f.def ->> 'name' AS field,
          coalesce(c.filled, 0)::int AS filled
        FROM ${profileTypes} pt
        LEFT JOIN totals t ON t.profile_type_id = pt.id
        LEFT JOIN LATERAL jsonb_array_elements(pt.fields) WITH ORDINALITY AS f(def, ord) ON true
        LEFT JOIN filled c ON c.profile_type_id = pt.id AND c.key = f.def ->> 'name'
        WHERE pt.user_id = ${userId}
        ORDER BY pt.id, f.ord`,
      );
      return rows.map((r) => ({ ...r, total: Number(r.total), filled: Number(r.filled) }));
    },
  };
}
