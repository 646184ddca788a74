import type { ErrorDetail } from '../../../shared/errors.ts';

/**
 * URL patterns of source templates (docs/scraping.md "Source templates"): a URL with named variables in braces,
 * `https://www.yelp.com/search?find_desc={query}&find_loc={location}`. Pure functions, no database.
 */
const PLACEHOLDER = /\{([^{}]*)\}/g;
const VARIABLE_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export interface ParsedPattern {
  /** Variable names in order of appearance. */
  variables: string[];
  errors: ErrorDetail[];
}

/** The variables of `pattern`, or what is wrong with it (names, duplicates, stray braces), naming `field`. */
export function parsePattern(pattern: string, field: string): ParsedPattern {
  const variables: string[] = [];
  const errors: ErrorDetail[] = [];
  for (const [, name] of pattern.matchAll(PLACEHOLDER)) {
    if (!VARIABLE_NAME.test(name!))
      errors.push({ field, message: `variable {${name}}: a name is a letter or _ followed by letters, digits or _` });
    else if (variables.includes(name!)) errors.push({ field, message: `variable {${name}} is declared twice` });
    else variables.push(name!);
  }
  if (/[{}]/.test(pattern.replace(PLACEHOLDER, '')))
    errors.push({ field, message: 'a brace that does not enclose a variable name ({name})' });
  return { variables, errors };
}

/** `pattern` with each variable replaced by its URL-encoded value (every variable must have one). */
export const fillPattern = (pattern: string, values: Record<string, string>): string =>
  pattern.replace(PLACEHOLDER, (_, name: string) => encodeURIComponent(values[name]!));
