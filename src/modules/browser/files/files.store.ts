/**
 * A session's files on disk, inside the session's own directory (its Chromium profile directory, removed with it
 * when the session ends): what the API uploaded and what the pages downloaded. Each file lives under a generated
 * id, never under a name a user or a page chose: `<session dir>/quarry-files/<id>` holds the bytes and `<id>.json`
 * what the API shows (the sanitized name, the type, where it came from, when). Chromium writes downloads into the
 * session's `Downloads` directory (cdp/policy.ts); complete ones are moved in here when the files are next read.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export type FileSource = 'upload' | 'download';

export interface StoredFile {
  id: string;
  name: string;
  size: number;
  mimeType?: string;
  source: FileSource;
  createdAt: string;
}

interface Meta {
  name: string;
  mimeType?: string;
  source: FileSource;
  createdAt: string;
}

/** The directory of a session's files, inside its profile directory. */
export const FILES_DIR = 'quarry-files';
/** Chromium's name of a download still being written. */
const PARTIAL = '.crdownload';
/** Longest name kept, in UTF-8 bytes (file systems allow 255; room is left for a ZIP's " (2)"). */
export const MAX_NAME_BYTES = 200;
const FALLBACK_NAME = 'file';

/** Thrown when content grows past the limit it was written with. */
export class FileTooLargeError extends Error {}

/** Ids are UUIDs: only a string of that shape is ever joined to the directory. */
const ID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const isFileId = (value: string): boolean => ID_SHAPE.test(value);

/** The first code points of `text` that fit in `max` UTF-8 bytes. */
function cutToBytes(text: string, max: number): string {
  let out = '';
  let bytes = 0;
  for (const ch of text) {
    bytes += Buffer.byteLength(ch);
    if (bytes > max) break;
    out += ch;
  }
  return out;
}

/**
 * A name safe to show, to put in a Content-Disposition and a ZIP entry, and to hand a page: the last segment of
 * whatever path it came as (either separator), without control and bidirectional-override characters, without
 * characters Windows refuses, trailing dots or spaces, at most MAX_NAME_BYTES (the extension kept); `file` when
 * nothing is left (empty, `.`, `..`). It is never used as a path: files are stored under their ids.
 */
export function sanitizeFileName(raw: string): string {
  const last = raw.slice(-4096).toWellFormed().normalize('NFC').split(/[/\\]/).pop() ?? '';
  let name = last
    .replace(/[\p{Cc}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]/gu, '')
    .replace(/[<>:"|?*]/g, '_')
    .trim()
    .replace(/[. ]+$/, '');
  if (!name) return FALLBACK_NAME;
  // Device names Windows reserves, whatever the extension.
  if (/^(con|prn|aux|nul|com\d|lpt\d)(\.|$)/i.test(name)) name = `_${name}`;
  if (Buffer.byteLength(name) <= MAX_NAME_BYTES) return name;
  const dot = name.lastIndexOf('.');
  const extension = dot > 0 && name.length - dot <= 20 ? name.slice(dot) : '';
  return (
    cutToBytes(name.slice(0, name.length - extension.length), MAX_NAME_BYTES - Buffer.byteLength(extension)) + extension
  );
}

/** A declared MIME type kept only when it looks like one (`type/subtype`, parameters dropped). */
export function cleanMimeType(raw: string | undefined): string | undefined {
  const type = raw?.split(';')[0].trim().toLowerCase();
  return type && type.length <= 255 && /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(type) ? type : undefined;
}

/** Passes bytes through, failing once more than `max` went by. */
function byteLimit(max: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      callback(seen > max ? new FileTooLargeError(`larger than ${max} bytes`) : null, chunk);
    },
  });
}

const missing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';

/** What the download watcher knows of the entries of the Downloads directory. */
export interface DownloadNames {
  /** The name the page suggested for this entry (Chromium names it by a GUID), when known. */
  nameOf(entry: string): string | undefined;
  /** Whether Chromium is still writing it. */
  inProgress(entry: string): boolean;
  /** The entry was taken in: nothing more to remember of it. */
  forget(entry: string): void;
}

export class FileStore {
  readonly root: string;
  readonly downloadDir: string;

  /** `sessionDir` is the session's own directory; downloads arrive in its `Downloads` (cdp/policy.ts). */
  constructor(sessionDir: string) {
    this.root = path.join(sessionDir, FILES_DIR);
    this.downloadDir = path.join(sessionDir, 'Downloads');
  }

  /**
   * The files directory, made inside the session's directory if need be, never the session's directory itself: one
   * removed with its ended session is not made again (ENOENT then).
   */
  async #ensureRoot(): Promise<void> {
    await fs.promises.mkdir(this.root, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
  }

  #bytes = (id: string) => path.join(this.root, id);
  #meta = (id: string) => path.join(this.root, `${id}.json`);

  async #read(id: string): Promise<StoredFile | undefined> {
    try {
      const [text, stat] = await Promise.all([
        fs.promises.readFile(this.#meta(id), 'utf8'),
        fs.promises.stat(this.#bytes(id)),
      ]);
      const meta = JSON.parse(text) as Meta;
      return {
        id,
        name: meta.name,
        size: stat.size,
        ...(meta.mimeType ? { mimeType: meta.mimeType } : {}),
        source: meta.source,
        createdAt: meta.createdAt,
      };
    } catch (error) {
      // Removed meanwhile, or not complete yet (the bytes are renamed in last).
      if (missing(error)) return undefined;
      throw error;
    }
  }

  /** Every complete file, newest first. */
  async list(): Promise<StoredFile[]> {
    let entries: string[];
    try {
      entries = await fs.promises.readdir(this.root);
    } catch (error) {
      if (missing(error)) return [];
      throw error;
    }
    const ids = entries
      .filter((e) => e.endsWith('.json'))
      .map((e) => e.slice(0, -5))
      .filter(isFileId);
    const files = (await Promise.all(ids.map((id) => this.#read(id)))).filter((f) => f !== undefined);
    return files.sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id));
  }

  /** A file and where its bytes are; undefined for anything that is not one of this session's file ids. */
  async find(id: string): Promise<(StoredFile & { path: string }) | undefined> {
    if (!isFileId(id)) return undefined;
    const file = await this.#read(id);
    return file && { ...file, path: this.#bytes(id) };
  }

  /**
   * Writes `content` as a new file: the bytes go to `<id>.part`, then the description, then the bytes are renamed
   * to `<id>`, so a file is listed only once complete. Beyond `maxBytes`, or when `cut()` says the source stopped
   * short of the whole file (a multipart parser truncates at its limit), FileTooLargeError and nothing is kept.
   */
  async write(
    content: NodeJS.ReadableStream,
    meta: Meta,
    limit: { maxBytes: number; cut?: () => boolean; signal: AbortSignal },
  ): Promise<StoredFile> {
    await this.#ensureRoot();
    const id = crypto.randomUUID();
    const part = `${this.#bytes(id)}.part`;
    try {
      const target = fs.createWriteStream(part, { flags: 'wx', mode: 0o600 });
      await pipeline(content, byteLimit(limit.maxBytes), target, { signal: limit.signal });
      if (limit.cut?.()) throw new FileTooLargeError(`larger than ${limit.maxBytes} bytes`);
      await this.#describe(id, meta);
      await fs.promises.rename(part, this.#bytes(id));
    } catch (error) {
      await Promise.all([fs.promises.rm(part, { force: true }), fs.promises.rm(this.#meta(id), { force: true })]);
      throw error;
    }
    return (await this.#read(id)) as StoredFile;
  }

  async #describe(id: string, meta: Meta): Promise<void> {
    const clean: Meta = { ...meta, name: sanitizeFileName(meta.name) };
    await fs.promises.writeFile(this.#meta(id), JSON.stringify(clean), { flag: 'wx', mode: 0o600 });
  }

  /** Removes a file; false when there was none. */
  async remove(id: string): Promise<boolean> {
    if (!isFileId(id)) return false;
    try {
      await fs.promises.unlink(this.#bytes(id));
    } catch (error) {
      if (missing(error)) return false;
      throw error;
    }
    await fs.promises.rm(this.#meta(id), { force: true });
    return true;
  }

  /**
   * Moves the complete downloads out of the Downloads directory into the store (a rename: the bytes are not copied),
   * named as the page suggested when the watcher saw it begin, else as Chromium named the file. Partial downloads
   * (`.crdownload`, or still in progress by the watcher's account) and anything but a regular file stay where they are.
   */
  async takeDownloads(names: DownloadNames, createdAt: string, signal: AbortSignal): Promise<number> {
    let entries: fs.Dirent[];
    try {
      entries = await fs.promises.readdir(this.downloadDir, { withFileTypes: true });
    } catch (error) {
      if (missing(error)) return 0;
      throw error;
    }
    let taken = 0;
    for (const entry of entries) {
      if (!entry.isFile() || entry.name.endsWith(PARTIAL) || names.inProgress(entry.name)) continue;
      if (signal.aborted) break;
      await this.#ensureRoot();
      const id = crypto.randomUUID();
      await this.#describe(id, { name: names.nameOf(entry.name) ?? entry.name, source: 'download', createdAt });
      try {
        await fs.promises.rename(path.join(this.downloadDir, entry.name), this.#bytes(id));
        names.forget(entry.name);
        taken++;
      } catch (error) {
        await fs.promises.rm(this.#meta(id), { force: true });
        if (!missing(error)) throw error;
      }
    }
    return taken;
  }
}
