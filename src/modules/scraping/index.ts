/**
 * The scraping module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
import type { RunCrawl } from './scraping.types.ts';

export {
  CrawlError,
  type CrawledPage,
  type CrawlProgress,
  type CrawlSettings,
  type ExtractedItem,
  type RunCrawl,
} from './scraping.types.ts';
export { LEAD_FIELD_KEYS, type LeadFieldKey, validateSelectors } from './selectors.ts';

/** The crawler, loaded on first use: it pulls in Crawlee and the browser tooling, which most processes never need. */
export const loadRunCrawl = async (): Promise<RunCrawl> => (await import('./crawl.ts')).runCrawl;
export { type ExtractResult, extractFromHtml } from './extract-html.ts';
export { parseSelectors } from './selectors.ts';
