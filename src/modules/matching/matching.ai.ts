import { z } from 'zod';
import type { AppDeps } from '../../deps.ts';
import { AppError } from '../../shared/errors.ts';
import type { ProfileWithLead } from './matching.repository.ts';

/** The model's structured answer per profile (strict-mode friendly: every key required). */
export const aiVerdictSchema = z.object({
  match: z.boolean().describe('Whether the profile matches the criteria'),
  score: z.number().int().min(0).max(100).describe('How well it matches, 0–100'),
  reasoning: z.string().describe('One or two sentences on why'),
});
export type AiVerdict = z.infer<typeof aiVerdictSchema>;

export const AI_FEATURE = 'matching.ai';
const MAX_JSON_CHARS = 6_000;
const MAX_REASONING = 2_000;

const SYSTEM =
  'You qualify lead profiles against criteria written by a user. Judge only from the data given; when a criterion ' +
  'cannot be judged from it, say so and lower the score. Answer with JSON: match (true when the profile meets the ' +
  'criteria), score (0–100, how well it fits) and reasoning (one or two short sentences).';

/** JSON of a value, cut to a bounded size (a huge scraped field must not blow the context). */
function boundedJson(value: unknown): string {
  const text = JSON.stringify(value, (_k, v: unknown) =>
    typeof v === 'string' && v.length > 1000 ? `${v.slice(0, 1000)}…` : v,
  );
  return text.length > MAX_JSON_CHARS ? `${text.slice(0, MAX_JSON_CHARS)}… (truncated)` : text;
}

export function aiPromptFor(aiPrompt: string, p: ProfileWithLead): string {
  const lead = p.lead
    ? {
        firstName: p.lead.firstName,
        lastName: p.lead.lastName,
        email: p.lead.email,
        phone: p.lead.phone,
        company: p.lead.company,
        jobTitle: p.lead.jobTitle,
        status: p.lead.status,
        tags: p.lead.tags,
        sourceUrl: p.lead.sourceUrl,
        customFields: p.lead.customFields,
      }
    : null;
  return `Criteria:\n${aiPrompt}\n\nProfile (JSON):\n${boundedJson(p.data)}\n\nLead (JSON):\n${boundedJson(lead)}`;
}

/** What one profile's AI evaluation yields, ready to be stored or shown. */
export interface AiOutcome {
  matched: boolean;
  matchScore: number | null;
  aiReasoning: string | null;
  details: AiVerdict | null;
  error: string | null;
}

/**
 * Asks the model about one profile through the shared AI layer (bounded by AI_CONCURRENCY, retried
 * with jittered backoff honouring Retry-After, usage recorded). A provider failure after the
 * retries becomes an outcome with `error` (matched false, no score), not an exception, so one bad
 * answer does not stop a run; cancellation still throws.
 */
export async function evaluateWithAi(
  deps: Pick<AppDeps, 'ai'>,
  userId: string,
  rule: { aiPrompt: string; threshold: number | null },
  profile: ProfileWithLead,
  signal?: AbortSignal,
): Promise<AiOutcome> {
  try {
    const v = await deps.ai.generateObject({
      userId,
      feature: AI_FEATURE,
      schema: aiVerdictSchema,
      schemaName: 'profile_match',
      system: SYSTEM,
      prompt: aiPromptFor(rule.aiPrompt, profile),
      signal,
    });
    const verdict = { match: v.match, score: v.score, reasoning: v.reasoning.slice(0, MAX_REASONING) };
    const matched = verdict.match && (rule.threshold === null || verdict.score >= rule.threshold);
    return { matched, matchScore: verdict.score, aiReasoning: verdict.reasoning, details: verdict, error: null };
  } catch (error) {
    if (signal?.aborted) throw error;
    // Neither is about this profile: the run stops (FAILED) instead of recording the error on every profile.
    if (error instanceof AppError && (error.code === 'AI_NOT_CONFIGURED' || error.code === 'INSUFFICIENT_CREDITS'))
      throw error;
    const message = error instanceof AppError ? error.message : 'The AI evaluation failed';
    return { matched: false, matchScore: null, aiReasoning: null, details: null, error: message };
  }
}
