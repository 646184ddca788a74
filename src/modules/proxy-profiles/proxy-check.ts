/**
 * The check of a new proxy profile (docs/scraping.md "Proxy profiles"): one GET of PROXY_CHECK_URL through the
 * proxy. Any failure is 400 CONNECTION_FAILED naming it: the proxy refused the credentials (407 or a SOCKS5
 * authentication failure), refused or dropped the connection, did not answer in time, or the check URL answered
 * something else than 2xx through it.
 */
import { request } from 'undici';
import { AppError } from '../../shared/errors.ts';
import { createProxyAgent } from '../../shared/pinned-proxy.ts';

const CHECK_TIMEOUT_MS = 10_000;

const reasonOf = (error: unknown): string => {
  const chain: Array<{ code?: string; message?: string }> = [];
  for (let e = error as { cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++)
    chain.push(e as { code?: string; message?: string });
  const codes = chain.map((e) => e.code ?? '');
  const text = chain.map((e) => e.message ?? '').join(' | ');
  if (/\b407\b/.test(text)) return 'the proxy rejected the credentials (407 Proxy Authentication Required)';
  if (/socks/i.test(text) && /auth/i.test(text)) return `the SOCKS5 proxy rejected the credentials (${text})`;
  if (codes.includes('ECONNREFUSED')) return 'the proxy refused the connection (nothing listens on that port)';
  if (codes.some((c) => /TIMEOUT/.test(c)) || /timed? ?out/i.test(text)) return 'the proxy did not answer in time';
  if (codes.includes('ENOTFOUND') || codes.includes('EAI_AGAIN')) return 'the proxy host name does not resolve';
  if (codes.includes('ECONNRESET') || codes.includes('UND_ERR_SOCKET')) return 'the proxy closed the connection';
  return text || String(error);
};

/** Resolves when `checkUrl` answers 2xx through `url`; throws 400 CONNECTION_FAILED (details: `host`). */
export async function checkProxy(url: string, checkUrl: string, shown: string): Promise<void> {
  const agent = createProxyAgent(url, { connectTimeout: CHECK_TIMEOUT_MS });
  const fail = (reason: string) =>
    new AppError('CONNECTION_FAILED', `The check through ${shown} failed: ${reason}`, {
      details: [{ field: 'host', message: reason }],
    });
  try {
    const response = await request(checkUrl, {
      dispatcher: agent,
      signal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
      headersTimeout: CHECK_TIMEOUT_MS,
    });
    await response.body.dump().catch(() => {});
    if (response.statusCode === 407)
      throw fail('the proxy rejected the credentials (407 Proxy Authentication Required)');
    if (response.statusCode < 200 || response.statusCode >= 300)
      throw fail(`PROXY_CHECK_URL answered ${response.statusCode} through the proxy`);
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw fail(reasonOf(error));
  } finally {
    await agent.destroy().catch(() => {});
  }
}
