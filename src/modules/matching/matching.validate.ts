import { sql } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import type { ProfileFieldDefinition } from '../../db/schema/index.ts';
import { AppError, type ErrorDetail } from '../../shared/errors.ts';
import {
  type Condition,
  type ConditionGroup,
  MAX_TOTAL_CONDITIONS,
  type RuleDefinition,
} from './matching.conditions.ts';
import { fieldRef, operandProblem } from './matching.values.ts';

const isGroup = (x: Condition | ConditionGroup): x is ConditionGroup => Array.isArray((x as ConditionGroup).conditions);

/** Every condition of a definition with its path in the request body (e.g. `criteria.2.condition.conditions.0`). */
export function conditionsWithPaths(def: RuleDefinition, prefix = ''): Array<{ path: string; condition: Condition }> {
  const out: Array<{ path: string; condition: Condition }> = [];
  const walk = (node: Condition | ConditionGroup, path: string) => {
    if (isGroup(node))
      node.conditions.forEach((child, i) => {
        walk(child, `${path}.conditions.${i}`);
      });
    else out.push({ path, condition: node });
  };
  if (def.type === 'FILTER') walk(def.conditions, `${prefix}conditions`);
  if (def.type === 'SCORED') {
    def.criteria.forEach((c, i) => {
      walk(c.condition, `${prefix}criteria.${i}.condition`);
    });
  }
  return out;
}

/** An unescaped \b or \B: a JS word boundary to the writer, a backspace / backslash to PostgreSQL's ARE. */
export function hasWordBoundaryEscape(pattern: string): boolean {
  for (let i = 0; i < pattern.length - 1; i++) {
    if (pattern[i] !== '\\') continue;
    if (pattern[i + 1] === 'b' || pattern[i + 1] === 'B') return true;
    i++; // skip the escaped character (so \\b is a backslash then b)
  }
  return false;
}

/**
 * Checks what the schema cannot: fields exist (profile fields on the type, lead columns known),
 * operator/value fit, and regex patterns compile in PostgreSQL (the engine that will run them).
 * Throws one 400 naming every bad field.
 */
export async function checkDefinition(
  db: Db,
  def: RuleDefinition,
  fields: readonly ProfileFieldDefinition[],
  prefix = '',
): Promise<void> {
  const names = new Set(fields.map((f) => f.name));
  const conditions = conditionsWithPaths(def, prefix);
  if (conditions.length > MAX_TOTAL_CONDITIONS) {
    const field = `${prefix}${def.type === 'SCORED' ? 'criteria' : 'conditions'}`;
    throw new AppError(
      'VALIDATION_ERROR',
      `${field}: at most ${MAX_TOTAL_CONDITIONS} conditions in a rule (${conditions.length} given)`,
      {
        details: [
          {
            field,
            message:
              `at most ${MAX_TOTAL_CONDITIONS} conditions in a rule, ` +
              `all groups together (${conditions.length} given)`,
          },
        ],
      },
    );
  }
  const errors: ErrorDetail[] = [];
  for (const { path, condition: c } of conditions) {
    const ref = fieldRef(c.field);
    if (!ref) {
      errors.push({
        field: `${path}.field`,
        message:
          'unknown lead field; lead fields are lead.<column> (firstName, lastName, fullName, email, emailDomain, ' +
          'phone, company, jobTitle, status, tags, sourceUrl, createdAt) or lead.customFields.<key>',
      });
      continue;
    }
    if (ref.kind === 'json' && ref.source === 'profile' && !names.has(ref.key)) {
      errors.push({ field: `${path}.field`, message: `"${ref.key}" is not a field of the profile type` });
      continue;
    }
    const problem = operandProblem(c, ref);
    if (problem) {
      errors.push({ field: `${path}.${problem.part}`, message: problem.message });
      continue;
    }
    if (c.operator === 'regex') {
      if (hasWordBoundaryEscape(c.value as string)) {
        errors.push({
          field: `${path}.value`,
          message:
            'PostgreSQL regular expressions read \\b as a backspace and \\B as a backslash: ' +
            'use \\y for a word boundary and \\Y for a non-boundary',
        });
        continue;
      }
      try {
        await db.execute(sql`SELECT '' ~ ${c.value as string} AS ok`);
      } catch {
        errors.push({ field: `${path}.value`, message: 'not a valid regular expression (PostgreSQL syntax)' });
      }
    }
  }
  if (errors.length)
    throw new AppError('VALIDATION_ERROR', `Invalid ${errors.map((e) => e.field).join(', ')}`, { details: errors });
}
