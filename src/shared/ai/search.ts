import type { Config } from '../../config.ts';
import { AppError } from '../errors.ts';

/**
 * Web search for source discovery, speaking the Brave Search API wire format
 * (https://api-dashboard.search.brave.com/app/documentation/web-search/get-started):
 * `GET <SEARCH_API_URL>?q=…&count=…` with `X-Subscription-Token` and `Accept: application/json`,
 * results at `web.results[] {title, url, description}`. SEARCH_API_URL is operator configuration
 * (trusted), so it is fetched directly rather than through the SSRF guard.
 */
export interface SearchResult {
  title: string;
  url: string;
  description: string;
}

export interface SearchOptions {
  /** Results wanted, 1–20 (Brave's maximum per request). Default 10. */
  count?: number;
  signal?: AbortSignal;
}

export interface SearchProvider {
  /** SEARCH_API_KEY is set. */
  readonly configured: boolean;
  search(query: string, options?: SearchOptions): Promise<SearchResult[]>;
}

const SEARCH_TIMEOUT_MS = 15_000;

/** Brave marks query terms in snippets with <strong>; answers carry plain text. */
const plain = (html: string) =>
  html
    .replace(/<[^>]*>/g, '')
    .replace(
      /&(amp|lt|gt|quot|#39|#x27);/g,
      (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", '#x27': "'" })[e]!,
    )
    .replace(/\s+/g, ' ')
    .trim();

const isHttpUrl = (value: unknown): value is string => {
  if (typeof value !== 'string') return false;
  try {
    const u = new URL(value);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
};

export function createSearchProvider(config: Pick<Config, 'SEARCH_API_URL' | 'SEARCH_API_KEY'>): SearchProvider {
  const key = config.SEARCH_API_KEY;
  return {
    configured: Boolean(key),

    async search(query, options = {}) {
      if (!key) throw new AppError('SEARCH_NOT_CONFIGURED', 'No web search provider is configured: set SEARCH_API_KEY');
      const count = Math.min(20, Math.max(1, Math.trunc(options.count ?? 10)));
      const url = new URL(config.SEARCH_API_URL);
      url.searchParams.set('q', query);
      url.searchParams.set('count', String(count));
      const timeout = AbortSignal.timeout(SEARCH_TIMEOUT_MS);
      const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
      let response: Response;
      try {
        response = await fetch(url, { headers: { Accept: 'application/json', 'X-Subscription-Token': key }, signal });
      } catch {
        if (options.signal?.aborted) throw options.signal.reason;
        const why = timeout.aborted ? `did not answer within ${SEARCH_TIMEOUT_MS} ms` : 'could not be reached';
        throw new AppError('SEARCH_PROVIDER_ERROR', `The search provider ${why}`);
      }
      if (!response.ok) {
        await response.body?.cancel();
        throw new AppError('SEARCH_PROVIDER_ERROR', `The search provider answered HTTP ${response.status}`);
      }
      let body: { web?: { results?: Array<{ title?: unknown; url?: unknown; description?: unknown }> } };
      try {
        body = (await response.json()) as typeof body;
      } catch {
        throw new AppError('SEARCH_PROVIDER_ERROR', 'The search provider answered something that is not JSON');
      }
      const results = Array.isArray(body?.web?.results) ? body.web.results : [];
      return results
        .filter((r) => isHttpUrl(r?.url))
        .slice(0, count)
        .map((r) => ({
          title: typeof r.title === 'string' ? plain(r.title) : '',
          url: r.url as string,
          description: typeof r.description === 'string' ? plain(r.description) : '',
        }));
    },
  };
}
