/**
 * A live session's files (docs/browser.md "Files"): uploads, the downloads its pages made, one file's bytes, all of
 * them as a ZIP, and files handed to an `input[type=file]`. They live in the session's own directory and go with it
 * when the session ends.
 */
import fs from 'node:fs';
import { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import { Zip, ZipPassThrough } from 'fflate';
import { AppError, notFound, validationError } from '../../../shared/errors.ts';
import { runStep } from '../actions/action-error.ts';
import { DEFAULT_ACTION_TIMEOUT_MS } from '../actions/actions.service.ts';
import type { LiveSession } from '../sessions/host.ts';
import type { SessionOperations } from '../tabs/session-browser.ts';
import { DownloadWatcher } from './downloads.ts';
import type { AttachBody } from './files.schemas.ts';
import { cleanMimeType, FileStore, FileTooLargeError, type StoredFile } from './files.store.ts';

/**
 * The most a page can be handed at once: Playwright gives the page the files as base64 in one CDP message, which
 * the service's own CDP endpoint takes up to 64 MB of (cdp/websocket.ts).
 */
export const MAX_ATTACH_BYTES = 40 * 1024 * 1024;

interface SessionFiles {
  store: FileStore;
  watcher?: Promise<DownloadWatcher>;
  /** Taking downloads in, one pass at a time (two passes would race for the same file). */
  queue: Promise<unknown>;
}

/** Per live session of this process; gone with the session object. */
const perSession = new WeakMap<LiveSession, SessionFiles>();

function stateOf(live: LiveSession): SessionFiles {
  let files = perSession.get(live);
  if (!files) {
    files = { store: new FileStore(live.chromium.userDataDir), queue: Promise.resolve() };
    perSession.set(live, files);
  }
  return files;
}

/**
 * Follows a live session's downloads: points Chromium's downloads into the session's directory and remembers the
 * names pages give them. Done on the session's first files request; the sessions side may call it as the session
 * opens, so that downloads land in the session's directory with their names from the start.
 */
export async function followDownloads(live: LiveSession): Promise<DownloadWatcher> {
  const state = stateOf(live);
  state.watcher ??= DownloadWatcher.attach(live.mux, state.store.downloadDir);
  try {
    return await state.watcher;
  } catch (error) {
    state.watcher = undefined;
    throw ending((error as Error).message);
  }
}

const ending = (why: string) =>
  new AppError('INVALID_STATE', `The browser session cannot be driven now: ${why}`, {
    details: [{ field: 'id', message: 'session is ending' }],
  });

/** A live session's files, and the signal that its browser closed (its directory is about to go). */
export interface SessionFileAccess {
  store: FileStore;
  closed: AbortSignal;
}

/** The files of a live session, its complete downloads taken in first (following its downloads from then on). */
export async function filesOf(live: LiveSession, now: Date): Promise<SessionFileAccess> {
  const watcher = await followDownloads(live);
  const state = stateOf(live);
  const pass = state.queue.then(() => state.store.takeDownloads(watcher, now.toISOString(), watcher.closed));
  state.queue = pass.catch(() => {});
  await pass;
  return { store: state.store, closed: watcher.closed };
}

/** What the API shows of a file (the path stays inside). */
export const viewOf = ({ id, name, size, mimeType, source, createdAt }: StoredFile): StoredFile => ({
  id,
  name,
  size,
  ...(mimeType ? { mimeType } : {}),
  source,
  createdAt,
});

export async function findFile(store: FileStore, fileId: string, field?: string) {
  const file = await store.find(fileId);
  if (!file) throw notFound('File', field);
  return file;
}

/**
 * Stores the one file part of a multipart upload (field `file`), streamed to disk and cut at `maxBytes`: 413
 * PAYLOAD_TOO_LARGE beyond, 400 naming `file` for no file, a second file or a body cut short.
 */
export async function upload(request: FastifyRequest, files: SessionFileAccess, maxBytes: number, now: Date) {
  if (!request.isMultipart()) throw validationError('file', 'upload the file as multipart/form-data, field `file`');
  const errors = request.server.multipartErrors;
  const tooLarge = () => {
    const message = `larger than ${maxBytes / 1024 / 1024} MB (BROWSER_FILE_MAX_MB)`;
    return new AppError('PAYLOAD_TOO_LARGE', `file: ${message}`, { details: [{ field: 'file', message }] });
  };
  let stored: StoredFile | undefined;
  let reading = 'body';
  try {
    for await (const part of request.parts()) {
      if (part.type !== 'file') continue;
      if (part.fieldname !== 'file') throw validationError(part.fieldname, 'unexpected file: send it as `file`');
      if (stored) throw validationError('file', 'send one file per request');
      reading = 'file';
      const meta = { name: part.filename, mimeType: cleanMimeType(part.mimetype), source: 'upload' as const };
      const cut = () => part.file.truncated;
      const limit = { maxBytes, cut, signal: files.closed };
      stored = await files.store.write(part.file, { ...meta, createdAt: now.toISOString() }, limit);
      reading = 'body';
    }
  } catch (error) {
    // The session ended meanwhile: its directory is gone (or going), and the file with it.
    if (files.closed.aborted || (error as NodeJS.ErrnoException).code === 'ENOENT') throw ending('it ended');
    if (error instanceof FileTooLargeError || error instanceof errors.RequestFileTooLargeError) throw tooLarge();
    if (error instanceof errors.FilesLimitError) throw validationError('file', 'send one file per request');
    // The parser's own errors (a body cut short, a malformed part) carry no status: the client's to fix.
    if (!(error instanceof AppError) && (error as { statusCode?: number }).statusCode === undefined) {
      throw validationError(reading, `the multipart body is cut short or malformed (${(error as Error).message})`);
    }
    throw error;
  }
  if (!stored) throw validationError('file', 'no file: send it as multipart/form-data, field `file`');
  return viewOf(stored);
}

/**
 * `attachment` with the name twice: plain ASCII for old clients and RFC 5987 UTF-8 for the rest, so no name can
 * break out of the header or be taken as a path.
 */
export function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const utf8 = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${utf8}`;
}

/** Names unique within one archive: `a.txt`, `a (2).txt`. */
function uniqueNames(names: string[]): string[] {
  const seen = new Set<string>();
  return names.map((name) => {
    let candidate = name;
    const dot = name.lastIndexOf('.');
    const [stem, extension] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
    for (let n = 2; seen.has(candidate.toLowerCase()); n++) candidate = `${stem} (${n})${extension}`;
    seen.add(candidate.toLowerCase());
    return candidate;
  });
}

/**
 * Every file in one ZIP, streamed: each file is read in chunks as the client takes the archive, stored without
 * compression (what browsers download is mostly compressed already, and it costs the host no CPU). A file removed
 * meanwhile is left out.
 */
export function archive(files: Array<StoredFile & { path: string }>): Readable {
  async function* chunks(): AsyncGenerator<Uint8Array> {
    const out: Uint8Array[] = [];
    let failure: Error | null = null;
    const zip = new Zip((error, chunk) => {
      if (error) failure = error;
      else out.push(chunk);
    });
    const drain = function* () {
      if (failure) throw failure;
      yield* out.splice(0);
    };
    const names = uniqueNames(files.map((f) => f.name));
    for (const [i, file] of files.entries()) {
      const handle = await fs.promises.open(file.path).catch(() => undefined);
      if (!handle) continue;
      const entry = new ZipPassThrough(names[i]);
      entry.mtime = new Date(file.createdAt);
      zip.add(entry);
      for await (const chunk of handle.createReadStream()) {
        entry.push(chunk as Buffer);
        yield* drain();
      }
      entry.push(new Uint8Array(0), true);
      yield* drain();
    }
    zip.end();
    yield* drain();
  }
  return Readable.from(chunks(), { objectMode: false });
}

/**
 * Sets the files on an `input[type=file]` of the tab through the service's Playwright, under their names. A
 * selector not found in time or an element that is no file input: 422 ACTION_FAILED.
 */
export async function attach(session: SessionOperations, store: FileStore, body: AttachBody) {
  const files = await Promise.all(body.fileIds.map((id, i) => findFile(store, id, `fileIds.${i}`)));
  const total = files.reduce((sum, f) => sum + f.size, 0);
  if (total > MAX_ATTACH_BYTES)
    throw validationError(
      'fileIds',
      `together larger than ${MAX_ATTACH_BYTES / 1024 / 1024} MB (a page takes that much at once)`,
    );
  session.touch();
  const page = body.tabId !== undefined ? session.tabs.get(body.tabId) : await session.activePage();
  const payloads = await Promise.all(
    files.map(async (f) => ({ name: f.name, mimeType: f.mimeType ?? '', buffer: await fs.promises.readFile(f.path) })),
  );
  const timeout = body.timeoutMs ?? DEFAULT_ACTION_TIMEOUT_MS;
  await runStep('attach', () => page.locator(body.selector).first().setInputFiles(payloads, { timeout }));
  return { tabId: session.tabs.idOf(page), files: files.map(viewOf) };
}
