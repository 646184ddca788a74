import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn, updatedAt } from './columns.ts';
import { profileTypes } from './profiles.ts';
import { users } from './users.ts';

export const matchingRuleTypes = ['FILTER', 'SCORED', 'AI'] as const;
export type MatchingRuleType = (typeof matchingRuleTypes)[number];

/**
 * A rule over the profiles of one profile type. FILTER keeps `conditions` (a condition group);
 * SCORED keeps `criteria` (weighted conditions) and `threshold`; AI keeps `aiPrompt` and `threshold`.
 * The shapes are defined (and validated) by src/modules/matching/matching.conditions.ts.
 */
export const matchingRules = pgTable(
  'matching_rules',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    profileTypeId: uuid('profile_type_id')
      .notNull()
      .references(() => profileTypes.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    description: text('description'),
    type: text('type', { enum: matchingRuleTypes }).notNull(),
    conditions: jsonb('conditions').$type<unknown>(),
    criteria: jsonb('criteria').$type<unknown>(),
    threshold: integer('threshold'),
    aiPrompt: text('ai_prompt'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('matching_rules_user_idx').on(t.userId, t.id), index('matching_rules_type_idx').on(t.profileTypeId)],
);

export const matchingRunStatuses = ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED'] as const;
export type MatchingRunStatus = (typeof matchingRunStatuses)[number];

/** One execution of a rule over every profile of its type (a pg-boss job), with its progress. */
export const matchingRuns = pgTable(
  'matching_runs',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    ruleId: uuid('rule_id')
      .notNull()
      .references(() => matchingRules.id, { onDelete: 'cascade' }),
    status: text('status', { enum: matchingRunStatuses }).notNull().default('PENDING'),
    /** Profiles to evaluate (known once the run starts), evaluated so far, matched, failed (AI errors). */
    total: integer('total').notNull().default(0),
    processed: integer('processed').notNull().default(0),
    matched: integer('matched').notNull().default(0),
    failed: integer('failed').notNull().default(0),
    error: text('error'),
    /** Held by the worker executing the run, renewed while it works; a run whose lease ran out is resumed elsewhere. */
    leaseUntil: tsColumn('lease_until'),
    /** A token of the claim that holds the lease: every write of the run is fenced by it. */
    leaseOwner: text('lease_owner'),
    startedAt: tsColumn('started_at'),
    finishedAt: tsColumn('finished_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('matching_runs_rule_idx').on(t.ruleId, t.id), index('matching_runs_user_idx').on(t.userId, t.id)],
);

/**
 * The latest result of a rule for one profile (an execution replaces the previous one's).
 * Written 100,000 rows per execution, so it carries no foreign keys: a per-row RI check locks the
 * referenced profile and rule rows (FOR KEY SHARE) and about doubled the cost of writing results.
 * The cascades are statement-level AFTER DELETE triggers on `profiles` and `matching_rules`
 * (migration 0002: one set-based DELETE per statement, whatever path deleted them: a profile, its
 * type, its source, a rule, the user). Readers join `profiles`, so a result written for a profile
 * deleted mid-run is never shown, and the run's final sweep removes it.
 */
export const matchingResults = pgTable(
  'matching_results',
  {
    id: idColumn(),
    userId: uuid('user_id').notNull(),
    ruleId: uuid('rule_id').notNull(),
    runId: uuid('run_id'),
    profileId: uuid('profile_id').notNull(),
    matched: boolean('matched').notNull(),
    /** 0–100: SCORED's weighted sum, the model's score for AI, 100 or 0 for FILTER; null when evaluation failed. */
    matchScore: integer('match_score'),
    aiReasoning: text('ai_reasoning'),
    /** Why: the criteria that held (SCORED), the model's structured answer (AI). */
    details: jsonb('details').$type<unknown>(),
    /** Set when the profile could not be evaluated (an AI provider error after retries). */
    error: text('error'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    // One result per (rule, profile); profile first so the same index serves the profiles delete trigger.
    uniqueIndex('matching_results_profile_rule_key').on(t.profileId, t.ruleId),
    // Results by score (filter + keyset), best first; also every rule_id lookup.
    index('matching_results_rule_score_idx').on(t.ruleId, sql`${t.matchScore} DESC NULLS LAST`, t.id),
  ],
);
