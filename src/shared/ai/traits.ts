/**
 * What every "shared traits" analysis of people asks the model and does with its answer (accounts'
 * commonalities, the professional network's): the trait schema, people compacted into prompt lines within a
 * budget, and the answer's traits cleaned and bounded by the number of people actually shown.
 */
import { z } from 'zod';

const MAX_VALUE_CHARS = 200;

/** One trait as the model answers it (strict-mode friendly: every key required). */
export const traitSchema = z.object({
  trait: z.string().describe('A trait several people share (role, seniority, department, status, a field value…)'),
  evidence: z.string().describe('What in the data shows it'),
  leadCount: z.number().int().describe('How many of the people share it'),
});

export type Trait = z.infer<typeof traitSchema>;

/**
 * A JSON-able copy of `value` with long strings cut and wide or deep structures trimmed, so one person
 * cannot fill the prompt.
 */
export function compactForPrompt(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.length > MAX_VALUE_CHARS ? `${value.slice(0, MAX_VALUE_CHARS)}…` : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth >= 3) return '…';
  if (Array.isArray(value)) return value.slice(0, 10).map((v) => compactForPrompt(v, depth + 1));
  return Object.fromEntries(
    Object.entries(value)
      .slice(0, 20)
      .map(([k, v]) => [k.slice(0, 60), compactForPrompt(v, depth + 1)]),
  );
}

export const isEmptyValue = (value: unknown) =>
  value === null || value === undefined || (typeof value === 'object' && Object.keys(value as object).length === 0);

/** The leading lines that fit in `maxChars` (one per line, newline counted). */
export function linesWithin(lines: string[], maxChars: number): string[] {
  const kept: string[] = [];
  let size = 0;
  for (const line of lines) {
    if (size + line.length > maxChars) break;
    kept.push(line);
    size += line.length + 1;
  }
  return kept;
}

/** The model's traits trimmed, empty ones dropped, counts within 0..`people`, at most `max`. */
export function cleanTraits(traits: Trait[], people: number, max: number): Trait[] {
  return traits
    .map((t) => ({
      trait: t.trait.trim(),
      evidence: t.evidence.trim(),
      leadCount: Math.min(people, Math.max(0, Math.round(t.leadCount))),
    }))
    .filter((t) => t.trait)
    .slice(0, max);
}
