import { z } from 'zod';
import type { ErrorDetail } from '../../shared/errors.ts';

export const MAX_PAGES_LIMIT = 100_000;

/**
 * The numeric and boolean crawl settings of a source, in their natural types. They belong in `options`; the
 * places they had before still work: `maxPages` and `respectRobotsTxt` at the top of the body, and any of them
 * among the `selectors` (as a number, a boolean, or a string such as "3000"). `options` wins over both.
 */
export const crawlSettingShape = {
  maxPages: z
    .number()
    .int()
    .min(1)
    .max(MAX_PAGES_LIMIT)
    .describe(`Pages per run at most, 1–${MAX_PAGES_LIMIT} (default SCRAPER_MAX_PAGES)`),
  respectRobotsTxt: z.boolean().describe('Default true: pages robots.txt disallows are skipped'),
  domainDelayMs: z.number().int().min(0).max(60_000).describe('Pause between two requests to the same host, 0–60000'),
  domainConcurrency: z.number().int().min(1).max(64).describe('Parallel requests to one host, 1–64'),
  requestTimeoutSecs: z.number().int().min(1).max(300).describe('Seconds before a request fails, 1–300'),
  maxRetries: z.number().int().min(0).max(10).describe('Retries of a failed request, 0–10'),
};
type Shape = typeof crawlSettingShape;
export type CrawlSettingKey = keyof Shape;
type CrawlSettingValues = { [K in CrawlSettingKey]?: z.infer<Shape[K]> };

export const isCrawlSettingKey = (key: string): key is CrawlSettingKey => Object.hasOwn(crawlSettingShape, key);

/** Settings kept in columns of their own rather than in the `options` JSON. */
const COLUMN_KEYS = new Set<CrawlSettingKey>(['maxPages', 'respectRobotsTxt']);

/** A setting written as a selector string ("3000", "false") in its natural type; anything else as it is. */
function natural(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const v = value.trim();
  if (/^-?\d+$/.test(v)) return Number(v);
  return v === 'true' ? true : v === 'false' ? false : value;
}

export interface CrawlSettingsInput {
  selectors?: Record<string, string | number | boolean>;
  options?: Record<string, unknown>;
  maxPages?: number | null;
  respectRobotsTxt?: boolean;
}

export interface PlacedCrawlSettings {
  /** The selectors without the crawl settings found among them. */
  selectors?: Record<string, string>;
  /** The `options` JSON to store (undefined: unchanged). */
  options?: Record<string, unknown>;
  maxPages?: number | null;
  respectRobotsTxt?: boolean;
  errors: ErrorDetail[];
}

/**
 * Gathers the crawl settings from `options`, the top-level fields and the selectors (in that order of
 * precedence) and sorts them into what is stored where. `prefix` names batch items (`sources.2.`).
 */
export function placeCrawlSettings(input: CrawlSettingsInput, prefix = ''): PlacedCrawlSettings {
  const errors: ErrorDetail[] = [];
  const fromSelectors: CrawlSettingValues = {};
  let selectors: Record<string, string> | undefined;
  if (input.selectors) {
    selectors = {};
    for (const [key, value] of Object.entries(input.selectors)) {
      if (!isCrawlSettingKey(key)) {
        selectors[key] = String(value);
        continue;
      }
      const parsed = crawlSettingShape[key].safeParse(natural(value));
      if (parsed.success) (fromSelectors as Record<string, unknown>)[key] = parsed.data;
      else errors.push({ field: `${prefix}selectors.${key}`, message: parsed.error.issues[0]!.message });
    }
  }
  const given = input.options ?? {};
  const pick = <K extends CrawlSettingKey>(key: K, topLevel?: CrawlSettingValues[K] | null) =>
    given[key] !== undefined
      ? (given[key] as CrawlSettingValues[K])
      : topLevel !== undefined
        ? topLevel
        : fromSelectors[key];
  const options: Record<string, unknown> = {};
  let moved = false;
  for (const key of Object.keys(crawlSettingShape) as CrawlSettingKey[]) {
    if (COLUMN_KEYS.has(key) || fromSelectors[key] === undefined || given[key] !== undefined) continue;
    options[key] = fromSelectors[key];
    moved = true;
  }
  for (const [key, value] of Object.entries(given)) {
    if (!COLUMN_KEYS.has(key as CrawlSettingKey)) options[key] = value;
  }
  return {
    selectors,
    options: input.options !== undefined || moved ? options : undefined,
    maxPages: pick('maxPages', input.maxPages),
    respectRobotsTxt: pick('respectRobotsTxt', input.respectRobotsTxt) ?? undefined,
    errors,
  };
}
