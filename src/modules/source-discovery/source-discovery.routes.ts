import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { AppError, validationError } from '../../shared/errors.ts';
import { disconnectSignal, envelope, errorResponses, ok } from '../../shared/http.ts';
import { createOutboundClient, outboundSettings } from '../../shared/outbound-http.ts';
import { MAX_DOCUMENT_BYTES, pdfText, urlText } from './source-discovery.documents.ts';
import {
  analyzeBody,
  analyzeView,
  discoverBody,
  discoverView,
  generateBody,
  generateView,
} from './source-discovery.schemas.ts';
import { createSourceDiscoveryService } from './source-discovery.service.ts';

const FALLBACK =
  'Without an AI provider (AI_BASE_URL, AI_MODEL) the answer is rule-based: entries of the built-in catalogue of ' +
  'public directories (docs/source-catalogue.md) ranked by keyword overlap, each `reasoning` saying so and why it ' +
  'matched; `method` is `catalogue`. With AI configured the model proposes sources; with web search also configured ' +
  '(SEARCH_API_KEY) it only chooses among real search results, so every URL comes from the search engine (`method` ' +
  '`ai+search`). 502 AI_PROVIDER_ERROR when the provider fails after its retries.';

/** analyze's input: exactly one of a PDF `file` (multipart) or a `url` (multipart field or JSON). */
async function readAnalyzeInput(request: FastifyRequest): Promise<{ file?: Buffer; url?: string }> {
  if (!request.isMultipart()) {
    const body = (request.body ?? {}) as { file?: string; url?: string };
    if (body.file !== undefined) throw validationError('file', 'upload the PDF as multipart/form-data');
    return { url: body.url };
  }
  const errors = request.server.multipartErrors;
  let file: Buffer | undefined;
  let url: string | undefined;
  /** The file part being read, named when the body breaks off inside it. */
  let reading = 'body';
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file') throw validationError(part.fieldname, 'unexpected file: send the PDF as `file`');
        reading = part.fieldname;
        file = await part.toBuffer();
        reading = 'body';
      } else if (part.fieldname === 'url') {
        url = String(part.value ?? '').trim();
      }
    }
  } catch (error) {
    if (error instanceof errors.RequestFileTooLargeError) {
      const message = `larger than ${MAX_DOCUMENT_BYTES / 1024 / 1024} MB`;
      throw new AppError('PAYLOAD_TOO_LARGE', `file: ${message}`, { details: [{ field: 'file', message }] });
    }
    if (error instanceof errors.FilesLimitError) throw validationError('file', 'send one file only');
    // The multipart parser's own errors (a body cut short, a malformed part) carry no status: the client's to fix.
    if (!(error instanceof AppError) && (error as { statusCode?: number }).statusCode === undefined) {
      throw validationError(reading, `the multipart body is cut short or malformed (${(error as Error).message})`);
    }
    throw error;
  }
  if (url !== undefined && url.length > 2048) throw validationError('url', 'at most 2048 characters');
  return { file, url: url || undefined };
}

export const sourceDiscoveryRoutes: RouteModule = (app, deps) => {
  const service = createSourceDiscoveryService(deps);
  const outbound = createOutboundClient(outboundSettings(deps.config));
  const tags = ['Sources'];
  const errors = errorResponses(400, 401, 403, 502);

  app.post('/api/sources/discover', {
    config: { scope: 'sources:write' },
    schema: {
      tags,
      summary: 'Discover public sources of leads for a query',
      description: `Suggests up to \`count\` (1–10, default 5) pages that list leads matching \`query\`. ${FALLBACK}`,
      body: discoverBody,
      response: { 200: envelope(discoverView), ...errors },
    },
    handler: async (request, reply) =>
      ok(await service.discover(principalOf(request).userId, request.body, disconnectSignal(reply))),
  });

  app.post('/api/sources/generate', {
    config: { scope: 'sources:write' },
    schema: {
      tags,
      summary: 'Generate sources for a project description',
      description:
        'Suggests `count` (1–5, default 3) sources for the project. With `autoSave` they are saved as DRAFT sources ' +
        '(into `projectId` when given) and each answer item carries the saved `id` and `status`. `projectId` must be ' +
        'one of yours (404 naming projectId otherwise, checked before any AI call). Catalogue entries for JSON APIs ' +
        `come with ready-made \`selectors\`. ${FALLBACK}`,
      body: generateBody,
      response: { 200: envelope(generateView), ...errorResponses(400, 401, 403, 404, 502) },
    },
    handler: async (request, reply) =>
      ok(await service.generate(principalOf(request).userId, request.body, disconnectSignal(reply))),
  });

  // multipart/form-data only for this route: the parser is registered in its own encapsulated scope.
  app.register(async (scope) => {
    await scope.register(multipart, {
      limits: { files: 1, fileSize: MAX_DOCUMENT_BYTES, fields: 10, fieldSize: 8192, parts: 20 },
    });
    scope.post('/api/sources/analyze', {
      // The idempotency fingerprint covers JSON bodies only: a multipart upload would replay another file's answer.
      config: { scope: 'sources:write', idempotency: false },
      schema: {
        tags,
        summary: 'Analyse a brief (PDF or URL) into lead requirements and sources',
        description:
          'multipart/form-data with exactly one of `file` (a PDF, at most 10 MB: 413 PAYLOAD_TOO_LARGE beyond) or ' +
          '`url` (a page or PDF, fetched as crawls fetch: through SCRAPER_PROXY_URL when set, the SSRF guard and the ' +
          'configured User-Agent); `application/json` `{"url": "…"}` is accepted too. Neither or both: 400 naming ' +
          '`file` and `url`; a file that is not a PDF: 400 naming `file`; a URL that is refused, unreachable or ' +
          'answers an error: 400 naming `url`; a multipart body cut short: 400 naming the part it broke off in ' +
          '(`file`) or `body`. Answers `requirements {targetAudience, industry, location, suggestedSources[], ' +
          'reasoning}` (null where the document does not say). Without an AI provider the requirements come from ' +
          'documented keyword heuristics (`method` `heuristic`, `reasoning` names the rule behind each value) and ' +
          'the sources from the built-in catalogue; with AI the model reads the text (first 24,000 characters) and ' +
          'proposes sources as in discover.',
        consumes: ['multipart/form-data', 'application/json'],
        body: analyzeBody,
        response: { 200: envelope(analyzeView), ...errorResponses(400, 401, 403, 413, 415, 502) },
      },
      handler: async (request, reply) => {
        const { file, url } = await readAnalyzeInput(request);
        if ((file === undefined) === (url === undefined)) {
          const message = file === undefined ? 'send a PDF `file` or a `url`' : 'send either `file` or `url`, not both';
          throw new AppError('VALIDATION_ERROR', message, {
            details: [
              { field: 'file', message },
              { field: 'url', message },
            ],
          });
        }
        const signal = disconnectSignal(reply);
        const text = file ? await pdfText(file, 'file') : await urlText(url!, { outbound, signal });
        return ok(await service.analyze(principalOf(request).userId, text, signal));
      },
    });
  });
};
