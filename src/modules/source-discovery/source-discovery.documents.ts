import { load } from 'cheerio';
import { extractText, getDocumentProxy } from 'unpdf';
import { validationError } from '../../shared/errors.ts';
import { fetchPublic, ssrfCause } from '../../shared/ssrf.ts';

/** Text of the documents analyze reads: an uploaded PDF, or a page (HTML, PDF or plain text) fetched by URL. */

export const MAX_DOCUMENT_BYTES = 10 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 20_000;

export const isPdf = (bytes: Uint8Array) => bytes.length >= 5 && Buffer.from(bytes.subarray(0, 5)).toString('latin1') === '%PDF-';

/** The text of a PDF (pages joined); a 400 naming `field` when it is not a readable PDF or holds no text. */
export async function pdfText(bytes: Uint8Array, field: string): Promise<string> {
  if (!isPdf(bytes)) throw validationError(field, 'must be a PDF document (it does not start with %PDF-)');
  let text: string;
  try {
    // pdf.js may take ownership of the buffer: give it a copy.
    const pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
    try {
      text = (await extractText(pdf, { mergePages: true })).text;
    } finally {
      await pdf.destroy();
    }
  } catch {
    throw validationError(field, 'the PDF could not be read (damaged or encrypted)');
  }
  text = text.replace(/[ \t]+/g, ' ').replace(/\n{3,}/g, '\n\n').trim();
  if (!text) throw validationError(field, 'the PDF holds no extractable text (a scanned image?)');
  return text;
}

/** Visible text of an HTML page: title, meta description and body, without scripts and styles. */
export function htmlText(html: string): string {
  const $ = load(html);
  $('script, style, noscript, template, svg, iframe, head link').remove();
  const title = $('title').first().text().trim();
  const description = $('meta[name="description"]').attr('content')?.trim() ?? '';
  // Block elements end a line, so sentences of different blocks do not run together.
  $('br').replaceWith('\n');
  $('p, div, li, h1, h2, h3, h4, h5, h6, tr, section, article, header, footer').each((_, el) => void $(el).append('\n'));
  const body = $('body').length ? $('body').text() : $.root().text();
  const lines = [title, description, body]
    .join('\n')
    .split('\n')
    .map((l) => l.replace(/\s+/g, ' ').trim())
    .filter(Boolean);
  return lines.join('\n');
}

/** Reads a response body up to the limit (a 400 naming `url` beyond it). */
async function readLimited(body: ReadableStream<Uint8Array> | null): Promise<Buffer> {
  if (!body) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > MAX_DOCUMENT_BYTES) {
      await body.cancel().catch(() => {});
      throw validationError('url', `the document is larger than ${MAX_DOCUMENT_BYTES / 1024 / 1024} MB`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * Fetches `url` through the SSRF guard and answers its text. Every failure is the client's to fix
 * and names `url`: a refused address (the guard's message), an unreachable host, an HTTP error, a
 * content type that is neither HTML, PDF nor text.
 */
export async function urlText(url: string, options: { allowPrivate: boolean; userAgent: string; signal?: AbortSignal }): Promise<string> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw validationError('url', 'must be an absolute http(s) URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw validationError('url', 'must be an http(s) URL');
  let response: Awaited<ReturnType<typeof fetchPublic>>;
  try {
    response = await fetchPublic(parsed, {
      allowPrivate: options.allowPrivate,
      headers: { 'user-agent': options.userAgent, accept: 'text/html,application/xhtml+xml,application/pdf;q=0.9,text/plain;q=0.8,*/*;q=0.5' },
      timeoutMs: FETCH_TIMEOUT_MS,
      signal: options.signal,
    });
  } catch (error) {
    const blocked = ssrfCause(error);
    if (blocked) throw validationError('url', blocked.message);
    const reason = (error as Error)?.name === 'TimeoutError' ? `no answer within ${FETCH_TIMEOUT_MS / 1000} s` : describeFetchError(error);
    throw validationError('url', `could not be fetched: ${reason}`);
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => {});
    throw validationError('url', `could not be fetched: the server answered HTTP ${response.status}`);
  }
  const type = (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  const bytes = await readLimited(response.body as ReadableStream<Uint8Array> | null);
  if (type === 'application/pdf' || isPdf(bytes)) return pdfText(bytes, 'url');
  if (type && !/^text\/|^application\/(xhtml\+xml|xml)$/.test(type)) throw validationError('url', `the page is ${type}, not HTML, PDF or text`);
  const raw = bytes.toString('utf8');
  const text = type === 'text/plain' ? raw.trim() : htmlText(raw);
  if (!text) throw validationError('url', 'the page holds no text');
  return text;
}

/** A short, secret-free reason for a network failure (undici puts the system error in `cause`). */
function describeFetchError(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  const code = cause?.code ?? (error as { code?: string })?.code;
  const known: Record<string, string> = {
    ENOTFOUND: 'the host name does not resolve',
    ECONNREFUSED: 'the connection was refused',
    ECONNRESET: 'the connection was reset',
    ETIMEDOUT: 'the connection timed out',
    UND_ERR_CONNECT_TIMEOUT: 'the connection timed out',
    EHOSTUNREACH: 'the host is unreachable',
  };
  if (code && known[code]) return known[code];
  const message = (error as Error)?.message ?? 'network error';
  return /redirect|protocol/i.test(message) ? message : 'network error';
}
