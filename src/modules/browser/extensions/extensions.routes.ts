import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { RouteModule } from '../../../route-module.ts';
import { principalOf } from '../../../shared/auth.ts';
import { AppError, validationError } from '../../../shared/errors.ts';
import { done, envelope, errorResponses, idParams, isoDate, ok, successOnly } from '../../../shared/http.ts';
import { nextCursor, paginationQuery } from '../../../shared/pagination.ts';
import { browserTags, readScope, writeScope } from '../tabs/route-parts.ts';
import { MAX_ENTRIES, MAX_EXTRACTED_BYTES, MAX_ZIP_BYTES } from './extension-archive.ts';
import { createExtensions, extensionView as toView } from './extensions.service.ts';

const extensionView = z
  .object({
    id: z.string(),
    name: z.string().describe("The manifest's name"),
    version: z.string().describe("The manifest's version"),
    manifestVersion: z.number().int().describe('2 or 3'),
    sizeBytes: z.number().int().describe('Bytes of the unpacked files'),
    createdAt: isoDate,
  })
  .meta({ id: 'BrowserExtension' });

const uploadBody = z
  .object({
    file: z.string().meta({ format: 'binary' }).describe('The ZIP of an unpacked extension'),
  })
  .nullish();

const tenancy =
  'Extensions are key-wide: X-Client-Ref does not narrow them (every ref of the user sees and may load them).';

/** The one `file` part of the upload; 413 beyond the cap, 400 naming `file` for anything else amiss. */
async function readZip(request: FastifyRequest): Promise<Buffer> {
  if (!request.isMultipart()) throw validationError('file', 'upload the ZIP as multipart/form-data, field `file`');
  const errors = request.server.multipartErrors;
  let zip: Buffer | undefined;
  try {
    for await (const part of request.parts()) {
      if (part.type !== 'file') continue;
      if (part.fieldname !== 'file') throw validationError(part.fieldname, 'unexpected file: send the ZIP as `file`');
      zip = await part.toBuffer();
    }
  } catch (error) {
    if (error instanceof errors.RequestFileTooLargeError) {
      const message = `larger than ${MAX_ZIP_BYTES / 2 ** 20} MB`;
      throw new AppError('PAYLOAD_TOO_LARGE', `file: ${message}`, { details: [{ field: 'file', message }] });
    }
    if (error instanceof errors.FilesLimitError) throw validationError('file', 'send one file only');
    if (!(error instanceof AppError) && (error as { statusCode?: number }).statusCode === undefined) {
      throw validationError('file', `the multipart body is cut short or malformed (${(error as Error).message})`);
    }
    throw error;
  }
  if (!zip) throw validationError('file', 'no `file` part: send the ZIP as `file`');
  return zip;
}

/** `/api/browser/extensions`: upload, list and delete Chrome extensions that sessions load with `extensionIds`. */
export const browserExtensionRoutes: RouteModule = (app, deps) => {
  const extensions = createExtensions(deps.db, deps.config.dataDir);

  // multipart/form-data only for the upload: the parser is registered in its own encapsulated scope.
  app.register(async (scope) => {
    await scope.register(multipart, {
      limits: { files: 1, fileSize: MAX_ZIP_BYTES, fields: 10, fieldSize: 1024, parts: 20 },
    });
    scope.post('/api/browser/extensions', {
      // The idempotency fingerprint covers JSON bodies only: a multipart upload would replay another file's answer.
      config: { ...writeScope, idempotency: false },
      schema: {
        tags: browserTags,
        summary: 'Upload a Chrome extension (a ZIP of the unpacked extension)',
        description:
          'multipart/form-data with one `file`: a ZIP whose root (or whose one top folder) holds `manifest.json` ' +
          'with `manifest_version` 2 or 3, `name` and `version`. At most ' +
          `${MAX_ZIP_BYTES / 2 ** 20} MB (413 PAYLOAD_TOO_LARGE beyond), unpacking to at most ` +
          `${MAX_EXTRACTED_BYTES / 2 ** 20} MB in ${MAX_ENTRIES} entries. Entries with \`..\`, absolute paths or ` +
          'symlinks, a missing or invalid manifest, or a file that is not a ZIP: 400 VALIDATION_ERROR naming `file` ' +
          `and the problem. Load it into a session with \`extensionIds\` at create. ${tenancy}`,
        consumes: ['multipart/form-data'],
        body: uploadBody,
        response: { 201: envelope(z.object({ extension: extensionView })), ...errorResponses(400, 401, 403, 413, 415) },
      },
      handler: async (request, reply) => {
        const row = await extensions.create(principalOf(request).userId, await readZip(request));
        return reply.code(201).send(ok({ extension: toView(row) }));
      },
    });
  });

  app.get('/api/browser/extensions', {
    config: readScope,
    schema: {
      tags: browserTags,
      summary: 'List uploaded Chrome extensions, newest first',
      description: `Cursor pagination. ${tenancy}`,
      querystring: paginationQuery,
      response: {
        200: envelope(z.object({ extensions: z.array(extensionView), nextCursor })),
        ...errorResponses(400, 401, 403),
      },
    },
    handler: async (request) => ok(await extensions.list(principalOf(request).userId, request.query)),
  });

  app.delete('/api/browser/extensions/:id', {
    config: writeScope,
    schema: {
      tags: browserTags,
      summary: 'Delete a Chrome extension (its files too)',
      description:
        'A live session that loaded it keeps running with it; sessions created afterwards cannot name it ' +
        `(404 naming \`extensionIds\`). ${tenancy}`,
      params: idParams,
      response: { 200: successOnly, ...errorResponses(400, 401, 403, 404) },
    },
    handler: async (request) => {
      await extensions.remove(principalOf(request).userId, request.params.id);
      return done('Extension deleted');
    },
  });
};
