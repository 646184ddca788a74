import { type SQL, sql } from 'drizzle-orm';
import { z } from 'zod';
import { type Db, queryRows } from '../../db/client.ts';
import type { MatchingRuleType } from '../../db/schema/index.ts';
import { AppError } from '../../shared/errors.ts';
import { decodeJsonCursor, encodeJsonCursor } from '../../shared/pagination.ts';
import { accountIdOf, accountKeyOf, describeAccountKey } from '../accounts/index.ts';
import type { RankedAccount, RankedAccountsQuery } from './deal-campaigns.schemas.ts';

/**
 * Accounts ranked by a campaign's fit score, in one set-based query:
 * matching_results of the campaign's rules → profiles → leads (only leads of the campaign's sources
 * when it has any) → account key. Per account and rule the best matchScore of its profiles counts;
 * fitScore = round(Σ best × weight ÷ Σ weight of all the campaign's rules), so a rule without a
 * result for the account counts 0. Failed evaluations (matchScore null) are ignored. Keyset paging
 * over (fitScore DESC, account key ASC in byte order).
 */

interface CampaignRuleRow {
  rule_id: string;
  name: string;
  type: MatchingRuleType;
  weight: number;
  criteria: Array<{ label?: string }> | null;
  conditions: { conditions?: unknown[] } | null;
}

interface RankedRow {
  account_key: string;
  fit_score: number;
  lead_count: number;
  matched_leads: number;
  name: string;
  rule_results: Array<{
    ruleId: string;
    bestScore: number;
    matchedProfiles: number;
    reasoning: string | null;
    details: unknown;
  }>;
}

// fit_score is an int 0–100 and k an account key (no NUL): anything else is not one of ours and would fail the query.
const rankingCursor = z.object({
  s: z.number().int().min(0).max(100),
  k: z.string().refine((k) => accountKeyOf(accountIdOf(k)) === k),
});
type Cursor = z.infer<typeof rankingCursor>;
const encodeCursor = (c: Cursor) => encodeJsonCursor(c);
const decodeCursor = (cursor: string | undefined) => decodeJsonCursor(cursor, rankingCursor);

/** Why a rule scored what it did for the account, in words. */
function reasoningOf(
  rule: CampaignRuleRow,
  best: { bestScore: number; reasoning: string | null; details: unknown } | undefined,
): string | null {
  if (!best) return null;
  const flags = Array.isArray(best.details) ? (best.details as unknown[]) : undefined;
  if (rule.type === 'AI') return best.reasoning;
  if (rule.type === 'SCORED') {
    if (!flags || !rule.criteria) return null;
    const held = rule.criteria
      .map((c, i) => (flags[i] === true ? (c.label ?? `criterion ${i + 1}`) : undefined))
      .filter((l): l is string => !!l);
    return held.length ? `Held: ${held.join('; ')}` : 'No criterion held';
  }
  const total = flags?.length ?? rule.conditions?.conditions?.length;
  const heldCount = flags?.filter((f) => f === true).length;
  if (best.bestScore === 100) return 'Every condition of the filter held';
  return heldCount !== undefined && total
    ? `The filter did not hold (${heldCount} of ${total} conditions held)`
    : 'The filter did not hold';
}

export async function rankAccounts(
  db: Db,
  userId: string,
  campaign: { id: string; sourceIds: string[] },
  query: RankedAccountsQuery,
): Promise<{ accounts: RankedAccount[]; nextCursor: string | null; rulesWithoutResults: string[] }> {
  const cursor = decodeCursor(query.cursor);
  const rules = await queryRows<CampaignRuleRow>(
    db,
    sql`SELECT c.rule_id, r.name, r.type, c.weight, r.criteria, r.conditions
        FROM campaign_rules c JOIN matching_rules r ON r.id = c.rule_id AND r.user_id = ${userId}
        WHERE c.campaign_id = ${campaign.id} ORDER BY c.rule_id`,
  );
  if (!rules.length) {
    throw new AppError(
      'NO_RULES',
      'The campaign has no matching rules: link rules (PATCH rules) or POST ' +
        'suggest-matching with save=true, then execute them',
    );
  }
  const totalWeight = rules.reduce((n, r) => n + r.weight, 0);
  const inSources: SQL = campaign.sourceIds.length
    ? sql`AND l.source_id IN (SELECT source_id FROM campaign_sources WHERE campaign_id = ${campaign.id})`
    : sql``;
  const after: SQL = cursor
    ? sql`AND (fit_score < ${cursor.s} OR (fit_score = ${cursor.s} AND account_key COLLATE "C" > ${cursor.k}))`
    : sql``;

  const rows = await queryRows<RankedRow>(
    db,
    sql`
    WITH cr AS (
      SELECT c.rule_id, c.weight FROM campaign_rules c
      JOIN matching_rules r ON r.id = c.rule_id AND r.user_id = ${userId}
      WHERE c.campaign_id = ${campaign.id}
    ),
    scoped AS (
      SELECT mr.id AS result_id, mr.rule_id, mr.profile_id, mr.matched, mr.match_score, mr.ai_reasoning, mr.details,
        l.id AS lead_id, l.account_key
      FROM matching_results mr
      JOIN cr ON cr.rule_id = mr.rule_id
      JOIN profiles p ON p.id = mr.profile_id AND p.user_id = ${userId}
      JOIN leads l ON l.id = p.lead_id AND l.user_id = ${userId}
      WHERE mr.user_id = ${userId} AND mr.match_score IS NOT NULL ${inSources}
    ),
    per_rule AS (
      SELECT account_key, rule_id, max(match_score) AS best_score,
        count(DISTINCT profile_id) FILTER (WHERE matched) AS matched_profiles,
        (array_agg(ai_reasoning ORDER BY match_score DESC, result_id))[1] AS best_reasoning,
        (array_agg(details ORDER BY match_score DESC, result_id))[1] AS best_details
      FROM scoped WHERE account_key IS NOT NULL
      GROUP BY account_key, rule_id
    ),
    ranked AS (
      SELECT pr.account_key, round(sum(pr.best_score * cr.weight)::numeric / ${totalWeight}::numeric)::int AS fit_score
      FROM per_rule pr JOIN cr ON cr.rule_id = pr.rule_id
      GROUP BY pr.account_key
    ),
    page AS (
      SELECT account_key, fit_score FROM ranked
      WHERE fit_score >= ${query.minScore} ${after}
      ORDER BY fit_score DESC, account_key COLLATE "C" ASC
      LIMIT ${query.limit + 1}
    ),
    lead_stats AS (
      SELECT k.account_key, count(*)::int AS lead_count,
        coalesce(mode() WITHIN GROUP (ORDER BY nullif(btrim(k.company), '')),
                 substr(k.account_key, strpos(k.account_key, ':') + 1)) AS name
      FROM (
        SELECT l.account_key, l.company FROM leads l
        WHERE l.user_id = ${userId} AND l.account_key IN (SELECT account_key FROM page) ${inSources}
      ) k
      GROUP BY k.account_key
    ),
    matched AS (
      SELECT account_key, count(DISTINCT lead_id)::int AS matched_leads FROM scoped
      WHERE matched AND account_key IN (SELECT account_key FROM page)
      GROUP BY account_key
    )
    SELECT page.account_key, page.fit_score, coalesce(ls.lead_count, 0) AS lead_count,
      coalesce(ls.name, substr(page.account_key, strpos(page.account_key, ':') + 1)) AS name,
      coalesce(m.matched_leads, 0) AS matched_leads,
      (SELECT json_agg(json_build_object('ruleId', pr.rule_id, 'bestScore', pr.best_score,
                                         'matchedProfiles', pr.matched_profiles,
                                         'reasoning', pr.best_reasoning, 'details', pr.best_details))
         FROM per_rule pr WHERE pr.account_key = page.account_key) AS rule_results
    FROM page
    LEFT JOIN lead_stats ls ON ls.account_key = page.account_key
    LEFT JOIN matched m ON m.account_key = page.account_key
    ORDER BY page.fit_score DESC, page.account_key COLLATE "C" ASC`,
  );

  const withoutResults = await queryRows<{ rule_id: string }>(
    db,
    sql`SELECT c.rule_id FROM campaign_rules c
        WHERE c.campaign_id = ${campaign.id}
          AND NOT EXISTS (SELECT 1 FROM matching_results mr WHERE mr.rule_id = c.rule_id AND mr.user_id = ${userId})
          AND NOT EXISTS (SELECT 1 FROM matching_runs run WHERE run.rule_id = c.rule_id AND run.status = 'COMPLETED')
        ORDER BY c.rule_id`,
  );

  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  const accounts = page.map((row): RankedAccount => {
    const results = new Map((row.rule_results ?? []).map((r) => [r.ruleId, r]));
    const key = describeAccountKey(row.account_key);
    return {
      accountId: accountIdOf(row.account_key),
      name: row.name,
      domain: key.kind === 'domain' ? key.value : null,
      leadCount: Number(row.lead_count),
      fitScore: Number(row.fit_score),
      matchedLeads: Number(row.matched_leads),
      reasons: rules.map((rule) => {
        const r = results.get(rule.rule_id);
        return {
          ruleId: rule.rule_id,
          ruleName: rule.name,
          type: rule.type,
          weight: rule.weight,
          bestScore: r ? Number(r.bestScore) : null,
          matchedProfiles: r ? Number(r.matchedProfiles) : 0,
          reasoning: reasoningOf(rule, r),
        };
      }),
    };
  });
  return {
    accounts,
    nextCursor:
      rows.length > query.limit && last ? encodeCursor({ s: Number(last.fit_score), k: last.account_key }) : null,
    rulesWithoutResults: withoutResults.map((r) => r.rule_id),
  };
}
