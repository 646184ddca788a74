import { z } from 'zod';
import type { Db, Tx } from '../../db/client.ts';
import type { AppDeps } from '../../deps.ts';
import { QUEUES } from '../../queue/queues.ts';
import { AppError, notFound, validationError } from '../../shared/errors.ts';
import { findOwned, isUuid, storedId } from '../../shared/ids.ts';
import { decodeCursor, decodeJsonCursor, encodeJsonCursor, pageOf } from '../../shared/pagination.ts';
import { createProfileTypeService } from '../profile-types/index.ts';
import { evaluateWithAi } from './matching.ai.ts';
import {
  type Condition,
  type ConditionGroup,
  type Criterion,
  type RuleDefinition,
  ruleDefinitionSchema,
} from './matching.conditions.ts';
import {
  insertRuleRows,
  matchingRepository,
  type NewRule,
  type ResultRow,
  type RuleRow,
  type RunRow,
} from './matching.repository.ts';
import {
  type CreateRuleInput,
  type DetailsView,
  type ListRulesQuery,
  PREVIEW_DEFAULT_SAMPLE,
  PREVIEW_MAX_AI_SAMPLE,
  type PreviewInput,
  type PreviewResultView,
  type ResultsQuery,
  type RuleView,
  type RunView,
  type UpdateRuleInput,
} from './matching.schemas.ts';
import type { SetRule } from './matching.sql.ts';
import { checkDefinition } from './matching.validate.ts';

export interface MatchingJob {
  runId: string;
}

export const toRunView = (r: RunRow): RunView => ({
  id: r.id,
  status: r.status,
  total: r.total,
  processed: r.processed,
  matched: r.matched,
  failed: r.failed,
  progress: r.status === 'COMPLETED' ? 100 : r.total > 0 ? Math.min(100, Math.floor((r.processed * 100) / r.total)) : 0,
  error: r.error,
  startedAt: r.startedAt?.toISOString() ?? null,
  finishedAt: r.finishedAt?.toISOString() ?? null,
  createdAt: r.createdAt.toISOString(),
});

export const toRuleView = (r: RuleRow, lastRun: RunRow | undefined): RuleView => ({
  id: r.id,
  name: r.name,
  description: r.description,
  type: r.type,
  profileTypeId: r.profileTypeId,
  conditions: r.conditions ?? null,
  criteria: r.criteria ?? null,
  threshold: r.threshold,
  aiPrompt: r.aiPrompt,
  lastRun: lastRun ? toRunView(lastRun) : null,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

/** The definition stored in a rule row. */
export function definitionOf(
  r: Pick<RuleRow, 'type' | 'conditions' | 'criteria' | 'threshold' | 'aiPrompt'>,
): RuleDefinition {
  if (r.type === 'FILTER') return { type: 'FILTER', conditions: r.conditions as ConditionGroup };
  if (r.type === 'SCORED') return { type: 'SCORED', criteria: r.criteria as Criterion[], threshold: r.threshold ?? 50 };
  return { type: 'AI', aiPrompt: r.aiPrompt ?? '', threshold: r.threshold ?? undefined };
}

const columnsOf = (def: RuleDefinition) => ({
  type: def.type,
  conditions: def.type === 'FILTER' ? def.conditions : null,
  criteria: def.type === 'SCORED' ? def.criteria : null,
  threshold: def.type === 'FILTER' ? null : (def.threshold ?? null),
  aiPrompt: def.type === 'AI' ? def.aiPrompt : null,
});

/** A short label for a condition (FILTER details), e.g. `profile.state in [CA, NY]`. */
function describe(node: Condition | ConditionGroup): string {
  if (Array.isArray((node as ConditionGroup).conditions)) {
    const g = node as ConditionGroup;
    return `(${g.conditions.map(describe).join(` ${g.operator} `)})`;
  }
  const c = node as Condition;
  const v = c.value === undefined ? '' : ` ${Array.isArray(c.value) ? `[${c.value.join(', ')}]` : String(c.value)}`;
  return `${c.field} ${c.operator}${v}`.slice(0, 200);
}

/** Stored details → their view: booleans per top-level item (FILTER/SCORED) or the model's answer (AI). */
export function detailsView(def: RuleDefinition, details: unknown): DetailsView {
  if (details === null || details === undefined) return null;
  if (def.type === 'AI') return { ai: details as NonNullable<DetailsView>['ai'] };
  const held = details as boolean[];
  if (def.type === 'SCORED')
    return {
      criteria: def.criteria.map((c, i) => ({
        label: c.label ?? describe(c.condition),
        weight: c.weight,
        held: !!held[i],
      })),
    };
  return { criteria: def.conditions.conditions.map((c, i) => ({ label: describe(c), weight: null, held: !!held[i] })) };
}

// match_score is an int 0–100 (1e300 would fail the query); the id a UUID.
const resultCursor = z.tuple([z.number().int().min(0).max(100).nullable(), z.string().refine(isUuid)]);
const encodeResultCursor = (score: number | null, id: string) => encodeJsonCursor([score, id]);
function decodeResultCursor(cursor: string | undefined): { score: number | null; id: string } | undefined {
  const c = decodeJsonCursor(cursor, resultCursor);
  return c && { score: c[0], id: c[1] };
}

export type MatchingService = ReturnType<typeof createMatchingService>;

export function createMatchingService(deps: Pick<AppDeps, 'db' | 'clock' | 'boss' | 'ai' | 'logger'>) {
  const repo = matchingRepository(deps.db);
  const types = createProfileTypeService(deps);

  async function owned(userId: string, id: string, field?: string): Promise<RuleRow> {
    return findOwned(id, 'Matching rule', (key) => repo.findRule(userId, key), field);
  }

  async function view(row: RuleRow): Promise<RuleView> {
    return toRuleView(row, (await repo.latestRuns([row.id])).get(row.id));
  }

  const requireAi = (def: RuleDefinition) => {
    if (def.type === 'AI' && !deps.ai.configured) {
      throw new AppError(
        'AI_NOT_CONFIGURED',
        'AI rules need an AI provider: set AI_BASE_URL and AI_MODEL (and AI_API_KEY if the endpoint needs one)',
      );
    }
  };

  return {
    owned,

    async create(userId: string, input: CreateRuleInput): Promise<RuleView> {
      const { name, description, profileTypeId, ...definition } = input;
      const type = await types.get(userId, profileTypeId, 'profileTypeId');
      await checkDefinition(deps.db, definition, type.fields);
      const now = deps.clock.now();
      const row = await repo.insertRule({
        userId,
        profileTypeId: type.id,
        name,
        description: description || null,
        ...columnsOf(definition),
        createdAt: now,
        updatedAt: now,
      });
      return toRuleView(row, undefined);
    },

    async list(userId: string, query: ListRulesQuery) {
      const rows = await repo.listRules(
        userId,
        { type: query.type, profileTypeId: query.profileTypeId?.toLowerCase() },
        query.limit,
        decodeCursor(query.cursor),
      );
      const { items, nextCursor } = pageOf(rows, query.limit);
      const runs = await repo.latestRuns(items.map((r) => r.id));
      return { rules: items.map((r) => toRuleView(r, runs.get(r.id))), nextCursor };
    },

    get: async (userId: string, id: string) => view(await owned(userId, id)),

    /**
     * name/description change freely. A definition change (type, conditions, criteria, aiPrompt)
     * deletes the stored results; a threshold change alone re-derives `matched` from the stored
     * scores. Both are refused with 409 while a run of the rule is PENDING or RUNNING.
     */
    async update(userId: string, id: string, input: UpdateRuleInput): Promise<RuleView> {
      const current = await owned(userId, id);
      const { name, description, type, ...rest } = input;
      const newType = type ?? current.type;
      const definitionChanged =
        (type !== undefined && type !== current.type) ||
        rest.conditions !== undefined ||
        rest.criteria !== undefined ||
        rest.aiPrompt !== undefined;
      const thresholdChanged = rest.threshold !== undefined;
      let values: Partial<RuleRow> = {};
      if (definitionChanged || thresholdChanged) {
        const base = newType === current.type ? definitionOf(current) : { type: newType };
        const merged = {
          ...base,
          ...Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)),
        } as Record<string, unknown>;
        if (merged.threshold === null) delete merged.threshold;
        if (newType === 'FILTER' && rest.threshold !== undefined && rest.threshold !== null)
          throw validationError('threshold', 'FILTER rules have no threshold');
        for (const key of ['conditions', 'criteria', 'aiPrompt'] as const) {
          const owner = { conditions: 'FILTER', criteria: 'SCORED', aiPrompt: 'AI' }[key];
          if (rest[key] !== undefined && owner !== newType) throw validationError(key, `not part of a ${newType} rule`);
        }
        const parsed = ruleDefinitionSchema.safeParse(merged);
        if (!parsed.success) {
          const issue = parsed.error.issues[0]!;
          throw validationError(issue.path.join('.') || 'type', issue.message);
        }
        const fieldsOf = await types.get(userId, current.profileTypeId);
        await checkDefinition(deps.db, parsed.data, fieldsOf.fields);
        values = columnsOf(parsed.data);
      }
      if (name !== undefined) values.name = name;
      if (description !== undefined) values.description = description || null;
      if (!Object.keys(values).length) return view(current);
      const after = definitionChanged
        ? (tx: Parameters<typeof repo.deleteResults>[0]) => repo.deleteResults(tx, current.id)
        : thresholdChanged
          ? (tx: Parameters<typeof repo.deleteResults>[0]) =>
              repo.rederiveMatched(tx, current.id, newType, values.threshold ?? null)
          : undefined;
      const row = await repo.updateRule(userId, current.id, { ...values, updatedAt: deps.clock.now() }, after);
      if (row === 'busy')
        throw new AppError('CONFLICT', 'The rule is being executed; change its definition once the run has finished');
      if (!row) throw notFound('Matching rule');
      return view(row);
    },

    async remove(userId: string, id: string): Promise<void> {
      await findOwned(id, 'Matching rule', (key) => repo.deleteRule(userId, key));
    },

    /**
     * Starts a run (PENDING) and queues it. When the rule already has a PENDING or RUNNING run,
     * that run is answered instead (`started: false`): executing twice never runs twice.
     */
    async execute(userId: string, ruleId: string): Promise<{ run: RunView; started: boolean }> {
      const rule = await owned(userId, ruleId, 'ruleId');
      requireAi(definitionOf(rule));
      if (rule.type === 'AI') await deps.ai.assertCredits(userId);
      const started = await repo.startRun(userId, rule.id, deps.clock.now());
      if (!started) throw notFound('Matching rule', 'ruleId');
      if (started.created) {
        try {
          await deps.boss.send(QUEUES.matching, { runId: started.run.id } satisfies MatchingJob);
        } catch (err) {
          deps.logger.error({ err, runId: started.run.id }, 'could not queue a matching run');
          await repo.deleteRun(started.run.id).catch(() => {});
          throw new AppError('SERVICE_UNAVAILABLE', 'The run could not be queued; try again later');
        }
      }
      return { run: toRunView(started.run), started: started.created };
    },

    /** A saved or unsaved rule on a sample (or given profiles), with nothing written. */
    async preview(userId: string, input: PreviewInput, signal?: AbortSignal) {
      let def: RuleDefinition;
      let profileTypeId: string;
      if (input.ruleId !== undefined) {
        const rule = await owned(userId, input.ruleId, 'ruleId');
        def = definitionOf(rule);
        profileTypeId = rule.profileTypeId;
      } else {
        const { name: _n, description: _d, profileTypeId: typeId, ...definition } = input.rule!;
        const type = await types.get(userId, typeId, 'rule.profileTypeId');
        await checkDefinition(deps.db, definition, type.fields, 'rule.');
        def = definition;
        profileTypeId = type.id;
      }
      requireAi(def);
      if (def.type === 'AI') await deps.ai.assertCredits(userId);
      const max = def.type === 'AI' ? PREVIEW_MAX_AI_SAMPLE : Infinity;
      if ((input.sampleSize ?? 0) > max) throw validationError('sampleSize', `at most ${max} for AI rules`);
      if ((input.profileIds?.length ?? 0) > max) throw validationError('profileIds', `at most ${max} for AI rules`);
      const scope = { userId, profileTypeId };
      let ids: string[] | undefined;
      if (input.profileIds) {
        ids = [...new Set(input.profileIds.map((id) => id.toLowerCase()))];
        const found = await repo.profileTypesOf(userId, ids.filter(isUuid));
        input.profileIds.forEach((raw, i) => {
          const t = found.get(storedId(raw) ?? '');
          if (!t) throw notFound('Profile', `profileIds.${i}`);
          if (t !== profileTypeId) throw validationError(`profileIds.${i}`, "not a profile of the rule's profile type");
        });
      }
      const limit = ids?.length ?? input.sampleSize ?? PREVIEW_DEFAULT_SAMPLE;
      let results: PreviewResultView[];
      if (def.type !== 'AI') {
        const rows = await repo.evaluateSample(def as SetRule, scope, { ids, limit });
        results = rows.map((r) => ({
          profileId: r.profile_id,
          leadId: r.lead_id,
          profile: { data: r.data, status: r.status },
          matched: r.matched,
          matchScore: Number(r.match_score),
          aiReasoning: null,
          details: detailsView(def, r.details),
          error: null,
        }));
      } else {
        const profiles = await repo.profilesWithLeads(scope, { ids, limit, newestFirst: true });
        const rule = { aiPrompt: def.aiPrompt, threshold: def.threshold ?? null };
        const outcomes = await Promise.all(profiles.map((p) => evaluateWithAi(deps, userId, rule, p, signal)));
        // Every call failed: the provider is down, say so rather than show a page of errors.
        const firstError = outcomes.find((o) => o.error);
        if (outcomes.length && outcomes.every((o) => o.error))
          throw new AppError('AI_PROVIDER_ERROR', firstError!.error!);
        results = profiles.map((p, i) => ({
          profileId: p.id,
          leadId: p.leadId,
          profile: { data: p.data, status: p.status },
          matched: outcomes[i]!.matched,
          matchScore: outcomes[i]!.matchScore,
          aiReasoning: outcomes[i]!.aiReasoning,
          details: detailsView(def, outcomes[i]!.details),
          error: outcomes[i]!.error,
        }));
      }
      return {
        type: def.type,
        results,
        summary: { evaluated: results.length, matched: results.filter((r) => r.matched).length },
      };
    },

    async results(userId: string, query: ResultsQuery) {
      const rule = await owned(userId, query.ruleId, 'ruleId');
      const def = definitionOf(rule);
      const after = decodeResultCursor(query.cursor);
      const rows = await repo.results(
        rule.id,
        { minScore: query.minScore, maxScore: query.maxScore, matched: query.matched },
        query.limit,
        after,
      );
      const more = rows.length > query.limit;
      const page = rows.slice(0, query.limit);
      const last = page[page.length - 1]?.result;
      const run = (await repo.latestRuns([rule.id])).get(rule.id);
      return {
        rule: { id: rule.id, name: rule.name, type: rule.type },
        run: run ? toRunView(run) : null,
        results: page.map(({ result: r, profile }) => resultView(def, r, profile)),
        nextCursor: more && last ? encodeResultCursor(last.matchScore, last.id) : null,
      };
    },
  };
}

function resultView(
  def: RuleDefinition,
  r: ResultRow,
  profile: { data: Record<string, unknown>; status: PreviewResultView['profile']['status']; leadId: string | null },
) {
  return {
    id: r.id,
    profileId: r.profileId,
    leadId: profile.leadId,
    matched: r.matched,
    matchScore: r.matchScore,
    aiReasoning: r.aiReasoning,
    details: detailsView(def, r.details),
    error: r.error,
    profile: { data: profile.data, status: profile.status },
    changedAt: r.updatedAt.toISOString(),
  };
}

/** The user's matching rule with this id, if any (a profile export names one). */
export const findMatchingRule = (db: Db, userId: string, id: string) => matchingRepository(db).findRule(userId, id);

/** Inserts rules in the caller's transaction (a deal campaign's proposed rules), answering their ids. */
export const insertMatchingRules = (tx: Tx, values: NewRule[]) => insertRuleRows(tx, values);
