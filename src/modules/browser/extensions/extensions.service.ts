/**
 * Uploaded Chrome extensions: a row per extension, its files under DATA_DIR/browser-extensions/<id>/. Key-wide:
 * X-Client-Ref does not narrow them (they are the integrator's code, loaded into its end-users' sessions).
 */
import fs from 'node:fs';
import path from 'node:path';
import { and, desc, eq, inArray, lt } from 'drizzle-orm';
import type { Db } from '../../../db/client.ts';
import { browserExtensions } from '../../../db/schema/index.ts';
import { notFound } from '../../../shared/errors.ts';
import { newId, storedId } from '../../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../../shared/pagination.ts';
import { readExtensionZip, writeExtension } from './extension-archive.ts';

export type ExtensionRow = Omit<typeof browserExtensions.$inferSelect, 'zip'>;

/** Every column but the ZIP (read only to unpack it on a host that lacks its folder). */
const listed = {
  id: browserExtensions.id,
  userId: browserExtensions.userId,
  name: browserExtensions.name,
  version: browserExtensions.version,
  manifestVersion: browserExtensions.manifestVersion,
  sizeBytes: browserExtensions.sizeBytes,
  createdAt: browserExtensions.createdAt,
};

export const extensionsDir = (dataDir: string) => path.join(dataDir, 'browser-extensions');
const dirOf = (dataDir: string, id: string) => path.join(extensionsDir(dataDir), id);

export function extensionView(row: ExtensionRow) {
  return {
    id: row.id,
    name: row.name,
    version: row.version,
    manifestVersion: row.manifestVersion,
    sizeBytes: row.sizeBytes,
    createdAt: row.createdAt.toISOString(),
  };
}

export function createExtensions(db: Db, dataDir: string) {
  /**
   * The extension's folder on this host: unpacked from its stored ZIP when absent (the upload reached another API
   * process, or DATA_DIR was cleared); written aside, then renamed into place, so a half-written folder never loads.
   */
  async function materialize(id: string): Promise<void> {
    const dir = dirOf(dataDir, id);
    if (fs.existsSync(path.join(dir, 'manifest.json'))) return;
    const [row] = await db
      .select({ zip: browserExtensions.zip })
      .from(browserExtensions)
      .where(eq(browserExtensions.id, id));
    if (!row) throw notFound(`Browser extension ${id}`, 'extensionIds');
    const draft = `${dir}.${process.pid}.${newId()}`;
    try {
      writeExtension(draft, readExtensionZip(row.zip));
      // A folder without its manifest is a broken one: replaced. One with it was put there meanwhile by another
      // session's start: kept (its files are the same).
      if (fs.existsSync(dir) && !fs.existsSync(path.join(dir, 'manifest.json')))
        await fs.promises.rm(dir, { recursive: true, force: true });
      await fs.promises.rename(draft, dir).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
      });
    } finally {
      await fs.promises.rm(draft, { recursive: true, force: true });
    }
  }

  return {
    /** Checks the ZIP, writes its files, then records it (files first: a row always has its folder). */
    async create(userId: string, zip: Uint8Array): Promise<ExtensionRow> {
      const archive = readExtensionZip(zip);
      const row = {
        id: newId(),
        userId,
        name: archive.manifest.name,
        version: archive.manifest.version,
        manifestVersion: archive.manifest.manifestVersion,
        sizeBytes: archive.sizeBytes,
        zip,
      };
      const dir = dirOf(dataDir, row.id);
      try {
        writeExtension(dir, archive);
        const [inserted] = await db.insert(browserExtensions).values(row).returning(listed);
        return inserted!;
      } catch (err) {
        fs.rmSync(dir, { recursive: true, force: true });
        throw err;
      }
    },

    async list(userId: string, query: { limit: number; cursor?: string }) {
      const before = decodeCursor(query.cursor);
      const rows = await db
        .select(listed)
        .from(browserExtensions)
        .where(and(eq(browserExtensions.userId, userId), before ? lt(browserExtensions.id, before) : undefined))
        .orderBy(desc(browserExtensions.id))
        .limit(query.limit + 1);
      const { items, nextCursor } = pageOf(rows, query.limit);
      return { extensions: items.map(extensionView), nextCursor };
    },

    /** Row and files gone; a live session that loaded it keeps what its Chromium already read. */
    async remove(userId: string, id: string): Promise<void> {
      const key = storedId(id);
      const [row] = key
        ? await db
            .delete(browserExtensions)
            .where(and(eq(browserExtensions.id, key), eq(browserExtensions.userId, userId)))
            .returning({ id: browserExtensions.id })
        : [];
      if (!row) throw notFound('Browser extension');
      await fs.promises.rm(dirOf(dataDir, row.id), { recursive: true, force: true });
    },

    /** The folders of a create's `extensionIds`: 404 naming `extensionIds` for one that is not the user's. */
    async dirsFor(userId: string, ids: string[]): Promise<string[]> {
      if (ids.length === 0) return [];
      const keys = ids.map(storedId);
      const found = keys.every((k) => k !== undefined)
        ? await db
            .select({ id: browserExtensions.id })
            .from(browserExtensions)
            .where(and(eq(browserExtensions.userId, userId), inArray(browserExtensions.id, keys as string[])))
        : [];
      const known = new Set(found.map((r) => r.id));
      const missing = ids.filter((_, i) => !known.has(keys[i] ?? ''));
      if (missing.length > 0) throw notFound(`Browser extension ${missing[0]}`, 'extensionIds');
      const unique = [...new Set(keys as string[])];
      for (const id of unique) await materialize(id);
      return unique.map((id) => dirOf(dataDir, id));
    },
  };
}
