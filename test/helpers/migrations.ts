import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const migrations = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../src/db/migrations');

interface JournalEntry {
  tag: string;
}

/** The tag of the first migration whose SQL contains `text` (stable when migrations are renumbered). */
export function migrationWith(text: string): string {
  const journal = JSON.parse(fs.readFileSync(path.join(migrations, 'meta/_journal.json'), 'utf8'));
  const entry = (journal.entries as JournalEntry[]).find((e) =>
    fs.readFileSync(path.join(migrations, `${e.tag}.sql`), 'utf8').includes(text),
  );
  assert.ok(entry, `no migration contains ${text}`);
  return entry.tag;
}

/** A copy of the migrations folder that stops before `tag`. */
export function migrationsBefore(tag: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-migrations-'));
  const journal = JSON.parse(fs.readFileSync(path.join(migrations, 'meta/_journal.json'), 'utf8'));
  const stop = (journal.entries as JournalEntry[]).findIndex((e) => e.tag === tag);
  assert.ok(stop > 0, `no migration ${tag}`);
  journal.entries = journal.entries.slice(0, stop);
  fs.mkdirSync(path.join(dir, 'meta'));
  fs.writeFileSync(path.join(dir, 'meta/_journal.json'), JSON.stringify(journal));
  for (const e of journal.entries as JournalEntry[])
    fs.copyFileSync(path.join(migrations, `${e.tag}.sql`), path.join(dir, `${e.tag}.sql`));
  return dir;
}
