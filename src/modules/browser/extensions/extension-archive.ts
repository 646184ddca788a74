/**
 * An uploaded ZIP of an unpacked Chrome extension, checked before anything is written: every entry a plain file or
 * folder with a relative path that stays inside (no `..`, no absolute path, no drive letter, no symlink), sizes
 * capped, and a `manifest.json` at the root (or in the one top folder every entry shares) with `manifest_version`
 * 2 or 3, `name` and `version`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { unzipSync } from 'fflate';
import { AppError, validationError } from '../../../shared/errors.ts';

/** Upload cap (the multipart file size). */
export const MAX_ZIP_BYTES = 10 * 2 ** 20;
/** Caps on what a ZIP unpacks to (a small ZIP may inflate to gigabytes). */
export const MAX_EXTRACTED_BYTES = 50 * 2 ** 20;
export const MAX_ENTRIES = 2000;

export interface ExtensionManifest {
  name: string;
  version: string;
  manifestVersion: number;
}

export interface ExtensionArchive {
  manifest: ExtensionManifest;
  /** Paths relative to the extension's root (the top folder stripped), with their contents. */
  files: { path: string; data: Uint8Array }[];
  sizeBytes: number;
}

const bad = (message: string) => validationError('file', message);

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;

/**
 * Names and Unix modes of the central directory's entries: fflate does not tell a symlink (its target stored as the
 * entry's data) from a file, so it is read here.
 */
function centralEntries(zip: Uint8Array): { name: string; mode: number }[] {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  let end = -1;
  for (let at = zip.length - 22; at >= Math.max(0, zip.length - 22 - 0xffff); at--) {
    if (view.getUint32(at, true) === 0x06054b50) {
      end = at;
      break;
    }
  }
  if (end < 0) throw bad('not a ZIP archive');
  const count = view.getUint16(end + 10, true);
  let at = view.getUint32(end + 16, true);
  const entries: { name: string; mode: number }[] = [];
  const decoder = new TextDecoder();
  for (let i = 0; i < count; i++) {
    if (at + 46 > zip.length || view.getUint32(at, true) !== 0x02014b50)
      throw bad('the ZIP central directory is broken');
    const madeBy = view.getUint16(at + 4, true) >> 8;
    const nameLength = view.getUint16(at + 28, true);
    const extraLength = view.getUint16(at + 30, true);
    const commentLength = view.getUint16(at + 32, true);
    const external = view.getUint32(at + 38, true);
    const name = decoder.decode(zip.subarray(at + 46, at + 46 + nameLength));
    // Unix-made entries (3) carry st_mode in the high half of the external attributes.
    entries.push({ name, mode: madeBy === 3 ? external >>> 16 : 0 });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/** A safe relative path of an entry, or the reason it is refused. */
function checkedPath(name: string): string {
  if (name.includes('\0')) throw bad(`entry ${JSON.stringify(name)}: NUL in its name`);
  const slashed = name.replace(/\\/g, '/');
  if (slashed.startsWith('/') || /^[a-zA-Z]:/.test(slashed)) throw bad(`entry ${JSON.stringify(name)}: absolute path`);
  if (slashed.split('/').includes('..')) throw bad(`entry ${JSON.stringify(name)}: ".." in its path`);
  return slashed;
}

function parseManifest(data: Uint8Array | undefined): ExtensionManifest {
  if (!data) throw bad('no manifest.json at the root of the ZIP (or in its one top folder)');
  let manifest: Record<string, unknown>;
  try {
    manifest = JSON.parse(new TextDecoder().decode(data).replace(/^\uFEFF/, ''));
  } catch (err) {
    throw bad(`manifest.json is not valid JSON (${(err as Error).message})`);
  }
  if (typeof manifest !== 'object' || manifest === null || Array.isArray(manifest))
    throw bad('manifest.json must be a JSON object');
  const mv = manifest.manifest_version;
  if (mv !== 2 && mv !== 3) throw bad('manifest.json: manifest_version must be 2 or 3');
  const { name, version } = manifest;
  if (typeof name !== 'string' || name.trim() === '' || name.length > 200)
    throw bad('manifest.json: name must be a non-empty string (at most 200 characters)');
  if (typeof version !== 'string' || !/^\d+(\.\d+){0,3}$/.test(version))
    throw bad('manifest.json: version must be 1 to 4 dot-separated integers');
  return { name: name.trim(), version, manifestVersion: mv };
}

/** Checks and unpacks (in memory) an uploaded extension ZIP; 400 VALIDATION_ERROR naming `file` with the problem. */
export function readExtensionZip(zip: Uint8Array): ExtensionArchive {
  const entries = centralEntries(zip);
  if (entries.length === 0) throw bad('the ZIP is empty');
  if (entries.length > MAX_ENTRIES) throw bad(`more than ${MAX_ENTRIES} entries`);
  for (const entry of entries) {
    checkedPath(entry.name);
    if ((entry.mode & S_IFMT) === S_IFLNK) throw bad(`entry ${JSON.stringify(entry.name)}: symlinks are refused`);
  }
  let declared = 0;
  let unpacked: Record<string, Uint8Array>;
  try {
    unpacked = unzipSync(zip, {
      filter: (file) => {
        declared += file.originalSize;
        if (declared > MAX_EXTRACTED_BYTES) throw bad(`unpacks to more than ${MAX_EXTRACTED_BYTES / 2 ** 20} MB`);
        return !file.name.endsWith('/');
      },
    });
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw bad(`the ZIP cannot be read (${(err as Error).message})`);
  }
  const files = Object.entries(unpacked).map(([name, data]) => ({ path: checkedPath(name), data }));
  const sizeBytes = files.reduce((sum, f) => sum + f.data.length, 0);
  if (sizeBytes > MAX_EXTRACTED_BYTES) throw bad(`unpacks to more than ${MAX_EXTRACTED_BYTES / 2 ** 20} MB`);
  // The root is the ZIP's root, or its one top folder when every entry is inside it (a zipped extension folder).
  let root = '';
  if (!files.some((f) => f.path === 'manifest.json')) {
    const tops = new Set(files.map((f) => (f.path.includes('/') ? f.path.split('/')[0] : '')));
    const [top] = tops;
    if (tops.size === 1 && top) root = `${top}/`;
  }
  const inRoot = files.filter((f) => f.path.startsWith(root)).map((f) => ({ ...f, path: f.path.slice(root.length) }));
  const manifest = parseManifest(inRoot.find((f) => f.path === 'manifest.json')?.data);
  return { manifest, files: inRoot, sizeBytes };
}

/** Writes the files under `dir` (made fresh); every path was checked, and is checked again against `dir`. */
export function writeExtension(dir: string, archive: ExtensionArchive): void {
  const base = path.resolve(dir);
  fs.mkdirSync(base, { recursive: true });
  for (const file of archive.files) {
    const target = path.resolve(base, file.path);
    if (!target.startsWith(base + path.sep)) throw bad(`entry ${JSON.stringify(file.path)}: outside the extension`);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, file.data, { flag: 'wx' });
  }
}
