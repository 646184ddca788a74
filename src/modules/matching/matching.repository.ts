import { and, desc, eq, inArray, type SQL, sql } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import { type Db, queryRows, type Tx } from '../../db/client.ts';
import { newestFirstPage } from '../../db/keyset.ts';
import {
  type MatchingRuleType,
  matchingResults,
  matchingRules,
  matchingRuns,
  profiles,
} from '../../db/schema/index.ts';
import { newId } from '../../shared/ids.ts';
import type { MatchableLead, MatchableProfile } from './matching.conditions.ts';
import { evaluationSelect, type SetRule } from './matching.sql.ts';

export type RuleRow = typeof matchingRules.$inferSelect;
export type NewRule = typeof matchingRules.$inferInsert;
export type RunRow = typeof matchingRuns.$inferSelect;
export type ResultRow = typeof matchingResults.$inferSelect;
export type NewResult = typeof matchingResults.$inferInsert;

/** A UUIDv7 made in SQL (PostgreSQL 15 has no uuidv7()): time-ordered like the ids Node makes. */
const SQL_UUID_V7 = sql.raw(
  `encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing substring(int8send(floor(extract(epoch from ` +
    `clock_timestamp()) * 1000)::bigint) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid`,
);

/** The claim a worker holds on a run: its writes count only while the run is still its own. */
export interface RunLease {
  runId: string;
  owner: string;
}

/**
 * Locks the run row against deletion (FOR KEY SHARE: parallel chunks still update its counters) for
 * the rest of the transaction; false when it is gone or another worker has claimed it since. A rule
 * deleted meanwhile (its runs cascade) waits for this transaction, and its delete trigger then
 * removes what the transaction wrote, so no result outlives its rule (or its user).
 */
async function holdRun(tx: Tx, lease: RunLease): Promise<boolean> {
  const rows = await queryRows(
    tx,
    sql`SELECT 1 FROM matching_runs
        WHERE id = ${lease.runId} AND lease_owner = ${lease.owner} AND status = 'RUNNING' FOR KEY SHARE`,
  );
  return rows.length > 0;
}

/** A profile with its lead's matchable fields, for AI evaluation. */
export interface ProfileWithLead extends MatchableProfile {
  id: string;
  leadId: string | null;
  status: (typeof profiles.$inferSelect)['status'];
}

interface RawProfileLead {
  id: string;
  lead_id: string | null;
  data: Record<string, unknown>;
  status: ProfileWithLead['status'];
  l_id: string | null;
  first_name: string | null;
  last_name: string | null;
  email: string | null;
  phone: string | null;
  company: string | null;
  job_title: string | null;
  l_status: string | null;
  source_url: string | null;
  tags: string[] | null;
  created_at: Date | string | null;
  custom_fields: Record<string, unknown> | null;
}

const toProfileWithLead = (r: RawProfileLead): ProfileWithLead => ({
  id: r.id,
  leadId: r.lead_id,
  status: r.status,
  data: r.data ?? {},
  lead: r.l_id
    ? ({
        firstName: r.first_name,
        lastName: r.last_name,
        email: r.email,
        phone: r.phone,
        company: r.company,
        jobTitle: r.job_title,
        status: r.l_status,
        sourceUrl: r.source_url,
        tags: r.tags ?? [],
        createdAt: new Date(r.created_at!),
        customFields: r.custom_fields ?? {},
      } satisfies MatchableLead)
    : null,
});

export interface ProfileScope {
  userId: string;
  profileTypeId: string;
}

/** Inserts rules in the caller's transaction, answering their ids. */
export async function insertRuleRows(tx: Tx, values: NewRule[]): Promise<Array<{ id: string }>> {
  if (!values.length) return [];
  return tx.insert(matchingRules).values(values).returning({ id: matchingRules.id });
}

export function matchingRepository(db: Db) {
  return {
    async insertRule(values: NewRule): Promise<RuleRow> {
      const [row] = await db.insert(matchingRules).values(values).returning();
      return row!;
    },
    async findRule(userId: string, id: string): Promise<RuleRow | undefined> {
      const [row] = await db
        .select()
        .from(matchingRules)
        .where(and(eq(matchingRules.userId, userId), eq(matchingRules.id, id)))
        .limit(1);
      return row;
    },
    /** Newest first; `limit + 1` rows so the caller can tell whether another page exists. */
    listRules(
      userId: string,
      f: { type?: MatchingRuleType; profileTypeId?: string },
      limit: number,
      before?: string,
    ): Promise<RuleRow[]> {
      const filters = [
        f.type ? eq(matchingRules.type, f.type) : undefined,
        f.profileTypeId ? eq(matchingRules.profileTypeId, f.profileTypeId) : undefined,
      ];
      return newestFirstPage(db, matchingRules, userId, filters, limit, before);
    },
    /**
     * Updates a rule; `afterDefinition` runs in the same transaction (drop or re-derive results), and
     * the update is refused (undefined) when a run of the rule is PENDING or RUNNING.
     */
    async updateRule(
      userId: string,
      id: string,
      values: Partial<NewRule>,
      afterDefinition?: (tx: Tx) => Promise<void>,
    ): Promise<RuleRow | 'busy' | undefined> {
      return db.transaction(async (tx) => {
        const [locked] = await tx
          .select({ id: matchingRules.id })
          .from(matchingRules)
          .where(and(eq(matchingRules.userId, userId), eq(matchingRules.id, id)))
          .for('update');
        if (!locked) return undefined;
        if (afterDefinition) {
          const [active] = await tx
            .select({ id: matchingRuns.id })
            .from(matchingRuns)
            .where(and(eq(matchingRuns.ruleId, id), inArray(matchingRuns.status, ['PENDING', 'RUNNING'])))
            .limit(1);
          if (active) return 'busy';
        }
        const [row] = await tx.update(matchingRules).set(values).where(eq(matchingRules.id, id)).returning();
        if (afterDefinition) await afterDefinition(tx);
        return row;
      });
    },
    /** The rule, its runs and results (ON DELETE CASCADE). */
    async deleteRule(userId: string, id: string): Promise<boolean> {
      const rows = await db
        .delete(matchingRules)
        .where(and(eq(matchingRules.userId, userId), eq(matchingRules.id, id)))
        .returning({ id: matchingRules.id });
      return rows.length > 0;
    },

    /** Latest run of each rule. */
    async latestRuns(ruleIds: string[]): Promise<Map<string, RunRow>> {
      if (!ruleIds.length) return new Map();
      const rows = await db
        .selectDistinctOn([matchingRuns.ruleId])
        .from(matchingRuns)
        .where(inArray(matchingRuns.ruleId, ruleIds))
        .orderBy(matchingRuns.ruleId, desc(matchingRuns.id));
      return new Map(rows.map((r) => [r.ruleId, r]));
    },

    /**
     * A new PENDING run, unless one is PENDING or RUNNING already (then that one, `created: false`).
     * The rule row is locked so two concurrent executes cannot both start one.
     */
    async startRun(userId: string, ruleId: string, now: Date): Promise<{ run: RunRow; created: boolean } | undefined> {
      return db.transaction(async (tx) => {
        const [rule] = await tx
          .select({ id: matchingRules.id })
          .from(matchingRules)
          .where(and(eq(matchingRules.userId, userId), eq(matchingRules.id, ruleId)))
          .for('update');
        if (!rule) return undefined;
        const [active] = await tx
          .select()
          .from(matchingRuns)
          .where(and(eq(matchingRuns.ruleId, ruleId), inArray(matchingRuns.status, ['PENDING', 'RUNNING'])))
          .limit(1);
        if (active) return { run: active, created: false };
        const [run] = await tx
          .insert(matchingRuns)
          .values({ userId, ruleId, status: 'PENDING', createdAt: now, updatedAt: now })
          .returning();
        return { run: run!, created: true };
      });
    },
    async findRun(id: string): Promise<RunRow | undefined> {
      const [row] = await db.select().from(matchingRuns).where(eq(matchingRuns.id, id)).limit(1);
      return row;
    },
    async updateRun(id: string, values: Partial<typeof matchingRuns.$inferInsert>): Promise<RunRow | undefined> {
      const [row] = await db.update(matchingRuns).set(values).where(eq(matchingRuns.id, id)).returning();
      return row;
    },
    /**
     * Takes the run for this worker (PENDING, or RUNNING with no live lease) under a new owner token:
     * undefined when another worker holds it or it has finished, so a re-delivered message never runs
     * it twice at once. Lease times are the database's clock, the same for every process.
     */
    async claimRun(id: string, leaseMs: number): Promise<{ run: RunRow; lease: RunLease } | undefined> {
      const owner = newId();
      const [run] = await db
        .update(matchingRuns)
        .set({
          status: 'RUNNING',
          leaseOwner: owner,
          leaseUntil: sql`now() + ${leaseMs} * interval '1 millisecond'`,
          updatedAt: sql`now()`,
        })
        .where(
          and(
            eq(matchingRuns.id, id),
            sql`status IN ('PENDING', 'RUNNING') AND (lease_until IS NULL OR lease_until < now())`,
          ),
        )
        .returning();
      return run ? { run, lease: { runId: id, owner } } : undefined;
    },
    /** False when the run is no longer this worker's (taken over, finished or deleted). */
    async renewLease(lease: RunLease, leaseMs: number): Promise<boolean> {
      const rows = await queryRows(
        db,
        sql`UPDATE matching_runs SET lease_until = now() + ${leaseMs} * interval '1 millisecond'
        WHERE id = ${lease.runId} AND lease_owner = ${lease.owner} AND status = 'RUNNING' RETURNING id`,
      );
      return rows.length > 0;
    },
    /** Updates the run only while this worker holds it; false otherwise (nothing written). */
    async updateLeasedRun(lease: RunLease, values: PgUpdateSetSource<typeof matchingRuns>): Promise<boolean> {
      const rows = await db
        .update(matchingRuns)
        .set(values)
        .where(
          and(
            eq(matchingRuns.id, lease.runId),
            eq(matchingRuns.leaseOwner, lease.owner),
            eq(matchingRuns.status, 'RUNNING'),
          ),
        )
        .returning({ id: matchingRuns.id });
      return rows.length > 0;
    },
    /**
     * Runs to send to the queue again: RUNNING ones whose worker's lease ran out (its lease is
     * cleared, so the next sweep does not send it twice and any worker may claim it), and
     * PENDING/unleased ones untouched for `resendAfterMs` (a message lost between commit and send).
     */
    async releaseStaleRuns(now: Date, resendAfterMs: number): Promise<string[]> {
      const quiet = new Date(now.getTime() - resendAfterMs);
      const rows = await queryRows<{ id: string }>(
        db,
        sql`
        UPDATE matching_runs SET lease_until = NULL, updated_at = ${now}
        WHERE (status = 'RUNNING' AND lease_until < now())
           OR (status IN ('PENDING', 'RUNNING') AND lease_until IS NULL AND updated_at < ${quiet})
        RETURNING id`,
      );
      return rows.map((r) => r.id);
    },
    async deleteRun(id: string): Promise<void> {
      await db.delete(matchingRuns).where(eq(matchingRuns.id, id));
    },
    /** A set-based run picked up again starts over (it is cheap; its unchanged results are not rewritten). */
    async resetCounters(runId: string, now: Date): Promise<void> {
      await db.execute(
        sql`UPDATE matching_runs SET processed = 0, matched = 0, failed = 0, updated_at = ${now} WHERE id = ${runId}`,
      );
    },
    /** processed/matched/failed recomputed from the results this run wrote (a resumed AI run). */
    async recount(runId: string, now: Date): Promise<void> {
      await db.execute(sql`UPDATE matching_runs SET
          processed = (SELECT count(*) FROM matching_results WHERE run_id = ${runId}),
          matched = (SELECT count(*) FROM matching_results WHERE run_id = ${runId} AND matched),
          failed = (SELECT count(*) FROM matching_results WHERE run_id = ${runId} AND error IS NOT NULL),
          updated_at = ${now}
        WHERE id = ${runId}`);
    },

    async countProfiles(scope: ProfileScope): Promise<number> {
      const [row] = await queryRows<{ n: number }>(
        db,
        sql`SELECT count(*)::int AS n FROM profiles
            WHERE user_id = ${scope.userId} AND profile_type_id = ${scope.profileTypeId}`,
      );
      return Number(row?.n ?? 0);
    },

    /** Upper ids of consecutive chunks of `size` profiles in scope (id order); the last is the last profile. */
    async chunkBounds(scope: ProfileScope, size: number): Promise<string[]> {
      const rows = await queryRows<{ id: string }>(
        db,
        sql`
        SELECT id FROM (
          SELECT id, row_number() OVER (ORDER BY id) AS rn, count(*) OVER () AS n
          FROM profiles WHERE user_id = ${scope.userId} AND profile_type_id = ${scope.profileTypeId}
        ) s WHERE rn % ${size} = 0 OR rn = n ORDER BY id`,
      );
      return rows.map((r) => r.id);
    },

    /**
     * One chunk of a FILTER/SCORED execution in ONE statement: the profiles with after < id ≤ upTo
     * (or the next `limit` after `after`), skipping, when resuming, those this run already wrote;
     * evaluated in SQL, their results upserted and the run's counters bumped, atomically.
     * Returns the chunk's last id (null: nothing was left) and whether the run still exists.
     */
    async evaluateChunk(
      rule: SetRule & { id: string },
      scope: ProfileScope,
      lease: RunLease,
      range: { after: string | null; upTo?: string; limit?: number },
      now: Date,
    ) {
      const runId = lease.runId;
      // A result that did not change is not written again: re-executing a rule over unchanged
      // profiles costs the evaluation and an index probe per row, not a new row version and three
      // index entries (a scheduled re-run of 100k profiles writes only what moved).
      const statement = sql`
        WITH chunk AS (
          SELECT c.id FROM profiles c
          WHERE c.user_id = ${scope.userId} AND c.profile_type_id = ${scope.profileTypeId}
            ${range.after ? sql`AND c.id > ${range.after}` : sql``}
            ${range.upTo ? sql`AND c.id <= ${range.upTo}` : sql``}
          ORDER BY c.id ${range.limit ? sql`LIMIT ${range.limit}` : sql``}
        ), e AS MATERIALIZED (
          ${evaluationSelect(rule, sql`p.id IN (SELECT id FROM chunk)`)}
        ), ins AS (
          INSERT INTO matching_results AS r (id, user_id, rule_id, run_id, profile_id, matched, match_score,
                                             ai_reasoning, details, error, created_at, updated_at)
          SELECT ${SQL_UUID_V7}, ${scope.userId}, ${rule.id}, ${runId}, e.profile_id, e.matched, e.match_score, NULL,
                 e.details, NULL, ${now}, ${now}
          FROM e
          ON CONFLICT (rule_id, profile_id) DO UPDATE
          SET run_id = excluded.run_id, matched = excluded.matched, match_score = excluded.match_score,
            ai_reasoning = NULL, details = excluded.details, error = NULL, updated_at = excluded.updated_at
          WHERE (r.matched, r.match_score, r.details, r.error, r.ai_reasoning)
                IS DISTINCT FROM (excluded.matched, excluded.match_score, excluded.details, NULL::text, NULL::text)
        ), counted AS (
          UPDATE matching_runs
          SET processed = processed + (SELECT count(*) FROM e),
              matched = matching_runs.matched + (SELECT count(*) FROM e WHERE e.matched), updated_at = ${now}
          WHERE id = ${runId} AND lease_owner = ${lease.owner} RETURNING id
        )
        SELECT (SELECT id FROM chunk ORDER BY id DESC LIMIT 1) AS last_id, (SELECT count(*) FROM counted)::int AS n`;
      const [row] = await db.transaction(async (tx) => {
        if (!(await holdRun(tx, lease))) return [];
        // The per-row LATERALs have all-distinct inputs: a Memoize node there only costs (100 % misses).
        await tx.execute(sql`SET LOCAL enable_memoize = off`);
        return queryRows<{ last_id: string | null; n: number }>(tx, statement);
      });
      return { lastId: row?.last_id ?? null, runExists: Number(row?.n ?? 0) > 0 };
    },

    /** FILTER/SCORED results for a sample (preview): nothing is written. */
    async evaluateSample(rule: SetRule, scope: ProfileScope, sample: { ids?: string[]; limit: number }) {
      const where = and(
        sql`p.user_id = ${scope.userId} AND p.profile_type_id = ${scope.profileTypeId}`,
        sample.ids
          ? sql`p.id IN (SELECT x::uuid FROM jsonb_array_elements_text(${JSON.stringify(sample.ids)}::jsonb) AS x)`
          : undefined,
      )!;
      return queryRows<{
        profile_id: string;
        lead_id: string | null;
        matched: boolean;
        match_score: number;
        details: boolean[];
        data: Record<string, unknown>;
        status: ProfileWithLead['status'];
      }>(
        db,
        evaluationSelect(rule, where, {
          extra: sql`, p.data, p.status`,
          tail: sql`ORDER BY p.id DESC LIMIT ${sample.limit}`,
        }),
      );
    },

    /**
     * Profiles with their leads: a keyset page (id order) or given ids; `skipRun` leaves out those that run already
     * wrote.
     */
    async profilesWithLeads(
      scope: ProfileScope,
      page: {
        after?: string | null;
        limit: number;
        ids?: string[];
        newestFirst?: boolean;
        skipRun?: { ruleId: string; runId: string };
      },
    ): Promise<ProfileWithLead[]> {
      const inIds = page.ids
        ? sql`AND p.id IN (SELECT x::uuid FROM jsonb_array_elements_text(${JSON.stringify(page.ids)}::jsonb) AS x)`
        : sql``;
      const notWritten = page.skipRun
        ? sql`AND NOT EXISTS (SELECT 1 FROM matching_results r WHERE r.rule_id = ${page.skipRun.ruleId}
                              AND r.profile_id = p.id AND r.run_id = ${page.skipRun.runId})`
        : sql``;
      const rows = await queryRows<RawProfileLead>(
        db,
        sql`
        SELECT p.id, p.lead_id, p.data, p.status, l.id AS l_id, l.first_name, l.last_name, l.email, l.phone, l.company,
          l.job_title, l.status AS l_status, l.source_url, l.tags, l.created_at, l.custom_fields
        FROM profiles p LEFT JOIN leads l ON l.id = p.lead_id AND l.user_id = p.user_id
        WHERE p.user_id = ${scope.userId} AND p.profile_type_id = ${scope.profileTypeId}
          ${page.after ? sql`AND p.id > ${page.after}` : sql``}
          ${inIds}
          ${notWritten}
        ORDER BY p.id ${page.newestFirst ? sql`DESC` : sql`ASC`} LIMIT ${page.limit}`,
      );
      return rows.map(toProfileWithLead);
    },

    /** Which of `ids` are the user's profiles, and of which type. */
    async profileTypesOf(userId: string, ids: string[]): Promise<Map<string, string>> {
      if (!ids.length) return new Map();
      const rows = await db
        .select({ id: profiles.id, t: profiles.profileTypeId })
        .from(profiles)
        .where(and(eq(profiles.userId, userId), inArray(profiles.id, ids)));
      return new Map(rows.map((r) => [r.id, r.t]));
    },

    /**
     * AI results of one batch and the run's counters, together. The counters are bumped first, only
     * while the run is this worker's (the row lock then orders this batch against a take-over), and
     * the results are written only if they were.
     */
    async writeResults(lease: RunLease, rows: NewResult[], now: Date): Promise<boolean> {
      if (!rows.length) return true;
      return db.transaction(async (tx) => {
        if (!(await holdRun(tx, lease))) return false;
        const matched = rows.filter((r) => r.matched).length;
        const failed = rows.filter((r) => r.error).length;
        const counted = await tx
          .update(matchingRuns)
          .set({
            processed: sql`${matchingRuns.processed} + ${rows.length}`,
            matched: sql`${matchingRuns.matched} + ${matched}`,
            failed: sql`${matchingRuns.failed} + ${failed}`,
            updatedAt: now,
          })
          .where(and(eq(matchingRuns.id, lease.runId), eq(matchingRuns.leaseOwner, lease.owner)))
          .returning({ id: matchingRuns.id });
        if (!counted.length) return false;
        await tx
          .insert(matchingResults)
          .values(rows)
          .onConflictDoUpdate({
            target: [matchingResults.ruleId, matchingResults.profileId],
            set: {
              runId: sql`excluded.run_id`,
              matched: sql`excluded.matched`,
              matchScore: sql`excluded.match_score`,
              aiReasoning: sql`excluded.ai_reasoning`,
              details: sql`excluded.details`,
              error: sql`excluded.error`,
              updatedAt: sql`excluded.updated_at`,
            },
          });
        return true;
      });
    },

    /** A definition change: the stored results no longer describe the rule. */
    async deleteResults(tx: Tx, ruleId: string): Promise<void> {
      await tx.delete(matchingResults).where(eq(matchingResults.ruleId, ruleId));
    },
    /**
     * A threshold change: `matched` re-derived from the stored scores (and, for AI, the model's verdict), set-based.
     */
    async rederiveMatched(tx: Tx, ruleId: string, type: MatchingRuleType, threshold: number | null): Promise<void> {
      const meets = threshold === null ? sql`true` : sql`coalesce(match_score >= ${threshold}, false)`;
      const verdict =
        type === 'AI' ? sql`error IS NULL AND coalesce((details ->> 'match')::boolean, false) AND ${meets}` : meets;
      if (type === 'FILTER') return;
      await tx.execute(sql`UPDATE matching_results SET matched = (${verdict}) WHERE rule_id = ${ruleId}`);
    },

    /** Results of the rule not written by this run: profiles no longer in scope. */
    /**
     * Results of profiles no longer in the rule's scope: deleted while the run wrote them (the delete
     * trigger had already fired). Every profile in scope was evaluated by the run that just ended.
     */
    async deleteStaleResults(ruleId: string, scope: ProfileScope): Promise<void> {
      await db.execute(sql`DELETE FROM matching_results r WHERE r.rule_id = ${ruleId}
        AND NOT EXISTS (SELECT 1 FROM profiles p
                        WHERE p.id = r.profile_id AND p.user_id = ${scope.userId}
                          AND p.profile_type_id = ${scope.profileTypeId})`);
    },

    /** A page of stored results, best first (matchScore DESC NULLS LAST, id), keyset after (score, id). */
    async results(
      ruleId: string,
      f: { minScore?: number; maxScore?: number; matched?: boolean },
      limit: number,
      after?: { score: number | null; id: string },
    ) {
      let keyset: SQL | undefined;
      if (after) {
        keyset =
          after.score === null
            ? sql`(${matchingResults.matchScore} IS NULL AND ${matchingResults.id} > ${after.id})`
            : sql`(${matchingResults.matchScore} < ${after.score}
                   OR (${matchingResults.matchScore} = ${after.score} AND ${matchingResults.id} > ${after.id})
                   OR ${matchingResults.matchScore} IS NULL)`;
      }
      return db
        .select({
          result: matchingResults,
          profile: { data: profiles.data, status: profiles.status, leadId: profiles.leadId },
        })
        .from(matchingResults)
        .innerJoin(profiles, eq(profiles.id, matchingResults.profileId))
        .where(
          and(
            eq(matchingResults.ruleId, ruleId),
            f.minScore !== undefined ? sql`${matchingResults.matchScore} >= ${f.minScore}` : undefined,
            f.maxScore !== undefined ? sql`${matchingResults.matchScore} <= ${f.maxScore}` : undefined,
            f.matched !== undefined ? eq(matchingResults.matched, f.matched) : undefined,
            keyset,
          ),
        )
        .orderBy(sql`${matchingResults.matchScore} DESC NULLS LAST`, matchingResults.id)
        .limit(limit + 1);
    },
  };
}

export type MatchingRepository = ReturnType<typeof matchingRepository>;
