import { validationError } from '../../shared/errors.ts';
import { type OutboundClient, OutboundError, type OutboundResponse } from '../../shared/outbound-http.ts';

/**
 * Text of the documents analyze reads: an uploaded PDF, or a page (HTML, PDF or plain text) fetched by URL. The PDF
 * and HTML parsers are loaded on first use, not at every start (docs/scaling-out.md "Start-up").
 */

export const MAX_DOCUMENT_BYTES = 10 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 20_000;

export const isPdf = (bytes: Uint8Array) =>
  bytes.length >= 5 && Buffer.from(bytes.subarray(0, 5)).toString('latin1') === '%PDF-';

/** The text of a PDF (pages joined); a 400 naming `field` when it is not a readable PDF or holds no text. */
export async function pdfText(bytes: Uint8Array, field: string): Promise<string> {
  if (!isPdf(bytes)) throw validationError(field, 'must be a PDF document (it does not start with %PDF-)');
  let text: string;
  try {
    const { extractText, getDocumentProxy } = await import('unpdf');
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
  text = text
    .replace(/[ \t]+/g, ' ')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  if (!text) throw validationError(field, 'the PDF holds no extractable text (a scanned image?)');
  return text;
}

/** Visible text of an HTML page: title, meta description and body, without scripts and styles. */
export async function htmlText(html: string): Promise<string> {
  const { load } = await import('cheerio');
  const $ = load(html);
  $('script, style, noscript, template, svg, iframe, head link').remove();
  const title = $('title').first().text().trim();
  const description = $('meta[name="description"]').attr('content')?.trim() ?? '';
  // Block elements end a line, so sentences of different blocks do not run together.
  $('br').replaceWith('\n');
  $('p, div, li, h1, h2, h3, h4, h5, h6, tr, section, article, header, footer').each(
    (_, el) => void $(el).append('\n'),
  );
  const body = $('body').length ? $('body').text() : $.root().text();
  const lines = [title, description, body]
    .join('\n')
    .split('\n')
    .map((l) => l.replace(/\s+/g, ' ').trim())
    .filter(Boolean);
  return lines.join('\n');
}

/**
 * Fetches `url` through the service's outbound client (proxy, SSRF guard, User-Agent) and answers its
 * text. Every failure is the client's to fix and names `url`: a refused address (the guard's message),
 * an unreachable host, an HTTP error, a content type that is neither HTML, PDF nor text.
 */
export async function urlText(
  url: string,
  options: { outbound: OutboundClient; signal?: AbortSignal },
): Promise<string> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw validationError('url', 'must be an absolute http(s) URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw validationError('url', 'must be an http(s) URL');
  let response: OutboundResponse;
  try {
    response = await options.outbound.request({
      url: parsed,
      headers: { accept: 'text/html,application/xhtml+xml,application/pdf;q=0.9,text/plain;q=0.8,*/*;q=0.5' },
      timeoutMs: FETCH_TIMEOUT_MS,
      maxBytes: MAX_DOCUMENT_BYTES,
      signal: options.signal,
    });
  } catch (error) {
    if (!(error instanceof OutboundError)) throw error;
    if (error.reason === 'blocked') throw validationError('url', error.message);
    if (error.reason === 'too_large')
      throw validationError('url', `the document is larger than ${MAX_DOCUMENT_BYTES / 1024 / 1024} MB`);
    throw validationError('url', `could not be fetched: ${error.message}`);
  }
  if (response.status < 200 || response.status >= 300)
    throw validationError('url', `could not be fetched: the server answered HTTP ${response.status}`);
  const type = (response.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  const bytes = response.body;
  if (type === 'application/pdf' || isPdf(bytes)) return pdfText(bytes, 'url');
  if (type && !/^text\/|^application\/(xhtml\+xml|xml)$/.test(type))
    throw validationError('url', `the page is ${type}, not HTML, PDF or text`);
  const raw = bytes.toString('utf8');
  const text = type === 'text/plain' ? raw.trim() : await htmlText(raw);
  if (!text) throw validationError('url', 'the page holds no text');
  return text;
}
