/**
 * Profiles' state files: BROWSER_PROFILE_DIR/<user>/<profile>/state-<token>-<id>.sealed, each save a new file
 * (written aside, flushed, renamed into place), so a stale writer never overwrites the file a newer one recorded; the
 * row says which file is current, and the file it replaced is removed after the switch. A file holds the state's
 * JSON gzipped, then sealed with the service's secret box (cookie values are credentials): AES-256-GCM under
 * SECRET_KEY. A plaintext `.json` file of an earlier version is still read.
 */
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { Config } from '../../../config.ts';
import { isSealedBytes, type SecretBox } from '../../../shared/crypto.ts';
import { newId } from '../../../shared/ids.ts';

const gzip = promisify(zlib.gzip);
const gunzip = promisify(zlib.gunzip);

/** What a profile holds: Playwright's storage state (cookies, and per origin its localStorage and IndexedDB). */
export interface ProfileState {
  cookies: Array<{
    name: string;
    value: string;
    domain: string;
    path: string;
    expires: number;
    httpOnly: boolean;
    secure: boolean;
    sameSite: 'Strict' | 'Lax' | 'None';
  }>;
  origins: Array<{ origin: string; localStorage: Array<{ name: string; value: string }>; indexedDB?: unknown[] }>;
}

export const profilesRoot = (config: Pick<Config, 'BROWSER_PROFILE_DIR' | 'dataDir'>): string =>
  path.resolve(config.BROWSER_PROFILE_DIR ?? path.join(config.dataDir, 'browser-profiles'));

/** Ids are UUIDs (checked before they reach here): nothing else is ever joined to the root. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const STATE_FILE = /^state-\d+-[0-9a-f-]{36}\.(sealed|json)$/;

function safe(part: string, shape: RegExp): string {
  if (!shape.test(part)) throw new Error(`not a profile path part: ${part}`);
  return part;
}

const userDir = (root: string, userId: string) => path.join(root, safe(userId, UUID));

/** Whether `dir` was removed: false when it still holds something (or is gone already). */
const removeIfEmpty = (dir: string): Promise<boolean> =>
  fs.promises.rmdir(dir).then(
    () => true,
    () => false,
  );

/** Creates `file` (exclusive, 0600) in `dir`, made first; made again when an emptied directory went meanwhile. */
async function openCreating(dir: string, file: string): Promise<fs.promises.FileHandle> {
  for (let attempt = 0; ; attempt++) {
    await fs.promises.mkdir(dir, { recursive: true });
    try {
      return await fs.promises.open(file, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 2) throw err;
    }
  }
}

export function createProfileStore(root: string, box: SecretBox) {
  const dirOf = (userId: string, profileId: string) => path.join(userDir(root, userId), safe(profileId, UUID));

  return {
    /**
     * Writes a new state file (the state's JSON, compressed and sealed) for a save under `token`; answers its name
     * (the row is pointed at it afterwards).
     */
    async write(userId: string, profileId: string, token: number, json: Buffer): Promise<string> {
      const bytes = box.sealBytes(await gzip(json));
      const dir = dirOf(userId, profileId);
      const name = `state-${token}-${newId()}.sealed`;
      const draft = path.join(dir, `.${name}.tmp`);
      const handle = await openCreating(dir, draft);
      try {
        await handle.writeFile(bytes);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fs.promises.rename(draft, path.join(dir, name));
      return name;
    },

    async read(userId: string, profileId: string, file: string): Promise<ProfileState> {
      const bytes = await fs.promises.readFile(path.join(dirOf(userId, profileId), safe(file, STATE_FILE)));
      const json = isSealedBytes(bytes) ? await gunzip(box.openBytes(bytes)) : bytes; // else a legacy plaintext file
      return JSON.parse(json.toString('utf8')) as ProfileState;
    },

    /** Removes a state file, and the profile's directory when that was its last file (a save racing a delete). */
    async removeFile(userId: string, profileId: string, file: string | null): Promise<void> {
      if (!file) return;
      const dir = dirOf(userId, profileId);
      await fs.promises.rm(path.join(dir, safe(file, STATE_FILE)), { force: true });
      // Only an empty directory goes (ENOTEMPTY otherwise): the user's too, when that was its last profile.
      for (const emptied of [dir, path.dirname(dir)]) if (!(await removeIfEmpty(emptied))) break;
    },

    /** A profile's directory with every state file in it. */
    async removeProfile(userId: string, profileId: string): Promise<void> {
      await fs.promises.rm(dirOf(userId, profileId), { recursive: true, force: true });
    },
  };
}

export type ProfileStore = ReturnType<typeof createProfileStore>;

/** Every browser profile file of a user, removed once the account is erased (its rows went with the user's). */
export async function removeProfileFilesOf(
  config: Pick<Config, 'BROWSER_PROFILE_DIR' | 'dataDir'>,
  userId: string,
): Promise<void> {
  await fs.promises.rm(userDir(profilesRoot(config), userId), { recursive: true, force: true });
}
