/**
 * The matching module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export {
  type Condition,
  type ConditionGroup,
  type Criterion,
  conditionGroupSchema,
  conditionOperators,
  criteriaSchema,
  LEAD_CONDITION_FIELDS,
  MAX_CONDITIONS,
  MAX_TOTAL_CONDITIONS,
  ruleDefinitionSchema,
} from './matching.conditions.ts';
export { createMatchingRecovery } from './matching.recovery.ts';
export { matchingRoutes } from './matching.routes.ts';
export { createMatchingRunner } from './matching.runner.ts';
export type { MatchingJob } from './matching.service.ts';
export { findMatchingRule, insertMatchingRules } from './matching.service.ts';
export { checkDefinition } from './matching.validate.ts';
