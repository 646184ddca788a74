// Browser profiles' state files on disk (src/modules/browser/profiles/profiles.store.ts), without a database.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { createProfileStore } from '../../src/modules/browser/profiles/profiles.store.ts';
import { createSecretBox } from '../../src/shared/crypto.ts';
import { newId } from '../../src/shared/ids.ts';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-profiles-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));
const store = createProfileStore(root, createSecretBox('profiles store test key'));
const state = Buffer.from(JSON.stringify({ cookies: [], origins: [] }));

test('a save whose profile was deleted meanwhile leaves no directory behind', async () => {
  // The delete removed the directory; the save's write made it again; the save, finding no row, removes its file.
  const [userId, profileId] = [newId(), newId()];
  const file = await store.write(userId, profileId, 1, state);
  const dir = path.join(root, userId, profileId);
  assert.deepEqual(fs.readdirSync(dir), [file]);
  await store.removeFile(userId, profileId, file);
  assert.equal(fs.existsSync(dir), false, 'the profile directory is gone with its last file');
});

test('removing a replaced file keeps the directory with the current one; a write after that still works', async () => {
  const [userId, profileId] = [newId(), newId()];
  const first = await store.write(userId, profileId, 1, state);
  const second = await store.write(userId, profileId, 2, state);
  await store.removeFile(userId, profileId, first);
  assert.deepEqual(fs.readdirSync(path.join(root, userId, profileId)), [second]);
  assert.deepEqual(await store.read(userId, profileId, second), { cookies: [], origins: [] });
  // Emptied, then written again (a stale save racing the delete): the write makes the directory again.
  await store.removeFile(userId, profileId, second);
  const third = await store.write(userId, profileId, 3, state);
  assert.deepEqual(await store.read(userId, profileId, third), { cookies: [], origins: [] });
});
