import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback server speaking the Brave Search API web-search format: `GET …/res/v1/web/search?q=&count=`
 * with `X-Subscription-Token` (401 without the right one, as Brave answers), results at
 * `web.results[] {title, url, description, …}`. Answers come from a function of the query.
 */

export interface StubSearchResult {
  title: string;
  url: string;
  description?: string;
}

export interface SearchRequest {
  q: string;
  count: number | undefined;
  headers: http.IncomingHttpHeaders;
}

export interface SearchStub {
  /** Full SEARCH_API_URL (`http://127.0.0.1:<port>/res/v1/web/search`). */
  url: string;
  key: string;
  requests: SearchRequest[];
  /** Results for a query (default: none). */
  respond(fn: (query: string) => StubSearchResult[]): void;
  /** The next `times` requests answer this HTTP status instead. */
  fail(status: number, times?: number): void;
  close(): Promise<void>;
}

export async function startSearchStub(key = 'brave-test-key'): Promise<SearchStub> {
  const requests: SearchRequest[] = [];
  let results: (query: string) => StubSearchResult[] = () => [];
  const failures: number[] = [];

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://stub');
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET' || url.pathname !== '/res/v1/web/search')
      return send(404, { type: 'ErrorResponse', error: { status: 404, code: 'NOT_FOUND' } });
    if (req.headers['x-subscription-token'] !== key) {
      return send(401, {
        type: 'ErrorResponse',
        error: {
          status: 401,
          code: 'SUBSCRIPTION_TOKEN_INVALID',
          detail: 'The provided subscription token is invalid.',
        },
      });
    }
    const q = url.searchParams.get('q') ?? '';
    const countParam = url.searchParams.get('count');
    requests.push({ q, count: countParam === null ? undefined : Number(countParam), headers: req.headers });
    const failure = failures.shift();
    if (failure)
      return send(failure, {
        type: 'ErrorResponse',
        error: { status: failure, code: 'STUB_FAILURE', detail: 'injected failure' },
      });
    if (!q)
      return send(422, { type: 'ErrorResponse', error: { status: 422, code: 'VALIDATION', detail: 'q is required' } });
    const count = Math.min(20, Number(countParam ?? 20));
    send(200, {
      type: 'search',
      query: { original: q, more_results_available: false },
      web: {
        type: 'search',
        results: results(q)
          .slice(0, count)
          .map((r) => ({
            type: 'search_result',
            title: r.title,
            url: r.url,
            description: r.description ?? '',
            is_source_local: false,
            language: 'en',
            profile: { name: new URL(r.url).hostname },
          })),
      },
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/res/v1/web/search`,
    key,
    requests,
    respond: (fn) => void (results = fn),
    fail: (status, times = 1) => void failures.push(...Array.from({ length: times }, () => status)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
