/** A small file made once and then only read: an identity or a key that every process of one machine shares. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The trimmed content of `file`, which `make` writes when it does not exist yet. Written aside, then linked into
 * place: two processes starting at once end up with the same complete content (the second link fails, EEXIST).
 */
export function readOrCreateFile(file: string, make: () => string, mode = 0o644): string {
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const draft = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}`;
    fs.writeFileSync(draft, `${make()}\n`, { mode });
    try {
      fs.linkSync(draft, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      fs.rmSync(draft, { force: true });
    }
  }
  return fs.readFileSync(file, 'utf8').trim();
}
