import fs from 'node:fs';
import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { RouteModule, TypedApp } from '../../../route-module.ts';
import { notFound } from '../../../shared/errors.ts';
import { done, envelope, errorResponses, ok, successOnly } from '../../../shared/http.ts';
import { browserSessionsOf } from '../sessions/sessions.service.ts';
import { browserTags, readScope, sessionParams, sessionPath, writeScope } from '../tabs/route-parts.ts';
import type { SessionResolver } from '../tabs/session-browser.ts';
import { attachBody, attachResult, fileParams, fileView, uploadBody } from './files.schemas.ts';
import { archive, attach, contentDisposition, filesOf, findFile, upload, viewOf } from './files.service.ts';

const LIFETIME =
  "Files live in the session's own directory while the session is live and are deleted with it when the session " +
  'ends (released, expired or failed); afterwards every files route answers 400 INVALID_STATE.';
const binary = (what: string) => z.any().describe(what);
/** A file is served as a download, never rendered: whatever its declared type, it cannot run as a page here. */
const SERVE_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; sandbox",
  'cache-control': 'no-store',
};

/** `/api/browser/sessions/{id}/files…`: uploads, the pages' downloads, one file, all as a ZIP, and attach. */
export const browserFileRoutes =
  (resolve: SessionResolver): RouteModule =>
  (app, deps) => {
    const sessions = browserSessionsOf(deps);
    const maxBytes = deps.config.BROWSER_FILE_MAX_MB * 1024 * 1024;
    /** The session's files (X-Client-Ref, ownership and state checked as for every operation). */
    const filesOfRequest = async (request: FastifyRequest, id: string) =>
      filesOf(await sessions.findLiveSession(request, id), deps.clock.now());
    const storeOf = async (request: FastifyRequest, id: string) => (await filesOfRequest(request, id)).store;

    app.get(sessionPath('files'), {
      config: readScope,
      schema: {
        tags: browserTags,
        summary: "The session's files: uploads and what its pages downloaded, newest first",
        description: `Downloads still being written are not listed yet. ${LIFETIME}`,
        params: sessionParams,
        response: { 200: envelope(z.object({ files: z.array(fileView) })), ...errorResponses(400, 401, 403, 404) },
      },
      handler: async (request) => {
        const store = await storeOf(request, request.params.id);
        return ok({ files: (await store.list()).map(viewOf) });
      },
    });

    app.get(sessionPath('files/archive'), {
      config: readScope,
      schema: {
        tags: browserTags,
        summary: 'Every file of the session in one ZIP archive, streamed',
        description: `Entries are named as the files are (made unique: \`a (2).txt\`). ${LIFETIME}`,
        params: sessionParams,
        response: { 200: binary('application/zip'), ...errorResponses(400, 401, 403, 404) },
      },
      handler: async (request, reply) => {
        const store = await storeOf(request, request.params.id);
        const files = await Promise.all((await store.list()).map((f) => store.find(f.id)));
        return reply
          .type('application/zip')
          .headers({ ...SERVE_HEADERS, 'content-disposition': contentDisposition(`files-${request.params.id}.zip`) })
          .send(archive(files.filter((f) => f !== undefined)));
      },
    });

    app.get(sessionPath('files/:fileId'), {
      config: readScope,
      schema: {
        tags: browserTags,
        summary: "A file's bytes, as a download (Content-Disposition: attachment)",
        description: `Content-Type is the upload's declared type, else application/octet-stream. ${LIFETIME}`,
        params: fileParams,
        response: { 200: binary('The file'), ...errorResponses(400, 401, 403, 404) },
      },
      handler: async (request, reply) => {
        const store = await storeOf(request, request.params.id);
        const file = await findFile(store, request.params.fileId);
        // Opened before the answer starts: a file deleted meanwhile is a 404, not a broken download.
        const handle = await fs.promises.open(file.path).catch(() => undefined);
        if (!handle) throw notFound('File');
        const { size } = await handle.stat();
        return reply
          .type(file.mimeType ?? 'application/octet-stream')
          .headers({ ...SERVE_HEADERS, 'content-disposition': contentDisposition(file.name) })
          .header('content-length', size)
          .send(handle.createReadStream());
      },
    });

    app.delete(sessionPath('files/:fileId'), {
      config: writeScope,
      schema: {
        tags: browserTags,
        summary: 'Delete a file of the session',
        params: fileParams,
        response: { 200: successOnly, ...errorResponses(400, 401, 403, 404) },
      },
      handler: async (request) => {
        const store = await storeOf(request, request.params.id);
        if (!(await store.remove(request.params.fileId))) await findFile(store, request.params.fileId);
        return done('File deleted');
      },
    });

    app.post(sessionPath('files/attach'), {
      config: writeScope,
      schema: {
        tags: browserTags,
        summary: 'Set files of the session on an input[type=file] of the page, under their names',
        description:
          'As if the user had chosen them; the page sees each file with its name, size and type (at most 40 MB in ' +
          'all). A selector not found within `timeoutMs`, or an element that is not a file input: 422 ACTION_FAILED. ' +
          'An unknown file id: 404 naming `fileIds.<i>`.',
        params: sessionParams,
        body: attachBody,
        response: { 200: envelope(attachResult), ...errorResponses(400, 401, 403, 404, 422) },
      },
      handler: async (request) => {
        const store = await storeOf(request, request.params.id);
        return ok(await attach(await resolve(request, request.params.id), store, request.body));
      },
    });

    // multipart/form-data for the upload only: the parser is registered in its own encapsulated scope.
    app.register(async (untyped) => {
      const scope = untyped as unknown as TypedApp;
      await scope.register(multipart, {
        limits: { files: 1, fileSize: maxBytes, fields: 10, fieldSize: 8192, parts: 20 },
      });
      scope.post(sessionPath('files'), {
        // The idempotency fingerprint covers JSON bodies only: a multipart upload would replay another file's answer.
        config: { ...writeScope, idempotency: false },
        schema: {
          tags: browserTags,
          summary: 'Upload a file into the session (multipart/form-data, field `file`)',
          description:
            'One file per request, at most BROWSER_FILE_MAX_MB (413 PAYLOAD_TOO_LARGE beyond). Its name is sanitized ' +
            '(no path, no control characters, at most 200 bytes; `file` when nothing is left) and it is stored under ' +
            `a generated id. ${LIFETIME}`,
          consumes: ['multipart/form-data'],
          params: sessionParams,
          body: uploadBody,
          response: { 201: envelope(fileView), ...errorResponses(400, 401, 403, 404, 413, 415) },
        },
        handler: async (request, reply) => {
          const files = await filesOfRequest(request, request.params.id);
          return reply.code(201).send(ok(await upload(request, files, maxBytes, deps.clock.now())));
        },
      });
    });
  };
