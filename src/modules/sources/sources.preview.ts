import { z } from 'zod';
import type { AppDeps } from '../../deps.ts';
import { validationError, validationErrors } from '../../shared/errors.ts';
import {
  createOutboundClient,
  OutboundError,
  type OutboundResponse,
  outboundSettings,
} from '../../shared/outbound-http.ts';
import { CrawlError, extractFromHtml, parseSelectors, validateSelectors } from '../scraping/index.ts';
import { sourceUrl } from './sources.schemas.ts';

/**
 * The selector tester (POST /api/sources/preview-selectors): one page fetched as a crawl fetches it (the outbound
 * client: SCRAPER_PROXY_URL, the SSRF guard, SCRAPER_USER_AGENT) and the STATIC extraction run over it, answering
 * what each selector found. Nothing is stored.
 */

export const PREVIEW_MAX_BYTES = 5 * 1024 * 1024;
const PREVIEW_TIMEOUT_MS = 20_000;
const SAMPLE_ITEMS = 5;
const SAMPLE_VALUES = 3;

export const previewSelectorsBody = z.object({
  url: sourceUrl.describe('The page to test the selectors on (http or https)'),
  scrapeType: z
    .enum(['STATIC', 'DYNAMIC'])
    .default('STATIC')
    .describe('How the selectors are read (default STATIC). The page is fetched without running its scripts.'),
  selectors: z
    .record(z.string(), z.string())
    .describe('Selector strings by key, as in a source (`item`, lead fields, custom fields, `nextPage`)'),
});

const selectorResult = z.object({
  key: z.string(),
  selector: z.string(),
  matches: z
    .number()
    .int()
    .describe('`item`: items found; a field: items in which it has a value; `nextPage`: next-page URLs'),
  samples: z.array(z.string()).describe(`Up to ${SAMPLE_VALUES} values it found`),
});

export const previewSelectorsView = z.object({
  url: z.string().describe('The page read, after redirects'),
  status: z.number().int().describe("The page's HTTP status"),
  itemCount: z.number().int().describe('Items found (an item counts when at least one field has a value)'),
  items: z
    .array(z.object({ fields: z.record(z.string(), z.string()), visible: z.boolean() }))
    .describe(`The first ${SAMPLE_ITEMS} items, as a job would save them`),
  selectors: z.array(selectorResult).describe('Per selector, in the order given'),
  nextPageUrls: z.array(z.string()),
});

export type PreviewSelectorsInput = z.infer<typeof previewSelectorsBody>;
export type PreviewSelectorsView = z.infer<typeof previewSelectorsView>;

export function createSelectorPreview(deps: Pick<AppDeps, 'config'>) {
  const outbound = createOutboundClient(outboundSettings(deps.config));

  return async function previewSelectors(
    input: PreviewSelectorsInput,
    signal?: AbortSignal,
  ): Promise<PreviewSelectorsView> {
    const problems = validateSelectors(input.selectors, input.scrapeType);
    if (problems.length) throw validationErrors(problems);
    if (Object.keys(input.selectors).length === 0) throw validationError('selectors', 'give at least one selector');

    let response: OutboundResponse;
    try {
      response = await outbound.request({
        url: input.url,
        headers: { accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.5' },
        timeoutMs: PREVIEW_TIMEOUT_MS,
        maxBytes: PREVIEW_MAX_BYTES,
        signal,
      });
    } catch (error) {
      if (!(error instanceof OutboundError)) throw error;
      if (error.reason === 'blocked') throw validationError('url', error.message);
      if (error.reason === 'too_large')
        throw validationError('url', `the page is larger than ${PREVIEW_MAX_BYTES / 1024 / 1024} MB`);
      throw validationError('url', `could not be fetched: ${error.message}`);
    }
    if (response.status < 200 || response.status >= 300)
      throw validationError('url', `could not be fetched: the server answered HTTP ${response.status}`);
    const type = (response.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type && !/^text\/html$|^application\/(xhtml\+)?xml$|^text\/xml$/.test(type))
      throw validationError('url', `the page is ${type}, not HTML`);

    const parsed = parseSelectors(input.selectors, input.scrapeType);
    let result: ReturnType<typeof extractFromHtml>;
    try {
      result = extractFromHtml(response.body.toString('utf8'), parsed, response.url);
    } catch (error) {
      // A selector that compiles but fails on this page (validateSelectors caught the rest).
      if (error instanceof CrawlError && error.message.startsWith('selectors.')) {
        const [field, ...rest] = error.message.split(': ');
        throw validationError(field!, rest.join(': ') || 'does not apply to this page');
      }
      throw error;
    }

    const selectors = Object.entries(input.selectors).flatMap(([key, selector]) => {
      if (key === 'item') return [{ key, selector, matches: result.items.length, samples: [] as string[] }];
      if (key === 'nextPage')
        return [
          {
            key,
            selector,
            matches: result.nextPageUrls.length,
            samples: result.nextPageUrls.slice(0, SAMPLE_VALUES),
          },
        ];
      if (key === 'waitFor') return [];
      // fullName also fills firstName and lastName; those keys are reported as the item holds them.
      const values = result.items.flatMap((item) => (item.fields[key] ? [item.fields[key]] : []));
      return [{ key, selector, matches: values.length, samples: values.slice(0, SAMPLE_VALUES) }];
    });

    return {
      url: response.url,
      status: response.status,
      itemCount: result.items.length,
      items: result.items.slice(0, SAMPLE_ITEMS).map(({ fields, visible }) => ({ fields, visible })),
      selectors,
      nextPageUrls: result.nextPageUrls,
    };
  };
}
