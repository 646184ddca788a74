/**
 * A session's recording on disk: one JSONL file per session under `DATA_DIR/browser-recordings/`, each line
 * `{"p": pageId, "e": rrwebEvent}`, appended in arrival order. Bounded: past `maxBytes` a last line
 * `{"truncated": true}` is written and later events are dropped (the replay stays valid up to there).
 * Kept after the session ends (recordings are read afterwards) and swept after `RECORDING_RETENTION_DAYS`.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Per session: enough for a long session of an ordinary site; a video-heavy page reaches it sooner. */
export const RECORDING_MAX_BYTES = 50 * 2 ** 20;
export const RECORDING_RETENTION_DAYS = 30;

export const recordingsDir = (dataDir: string) => path.join(dataDir, 'browser-recordings');
/** Session ids are the service's own (uuid-like), never the caller's raw input: still, only safe names. */
export const recordingPath = (dataDir: string, sessionId: string) =>
  path.join(recordingsDir(dataDir), `${sessionId.replace(/[^\w-]/g, '_')}.jsonl`);

export interface RecordedEvent {
  type: number;
  timestamp: number;
  [key: string]: unknown;
}

export interface RecordingWriter {
  append(pageId: string, events: RecordedEvent[]): void;
  /** Resolves once every appended line is on disk. */
  flushed(): Promise<void>;
  /** Stops accepting events and closes the file. */
  close(): Promise<void>;
}

/** Writers of the sessions this process records, so a read right after release waits for the last lines. */
const open = new Map<string, RecordingWriter>();

export function openRecording(dataDir: string, sessionId: string, maxBytes = RECORDING_MAX_BYTES): RecordingWriter {
  const file = recordingPath(dataDir, sessionId);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const handle = fs.promises.open(file, 'a');
  let chain: Promise<unknown> = handle;
  let bytes = 0;
  let done = false;
  const write = (text: string) => {
    chain = chain.then(async () => (await handle).appendFile(text)).catch(() => {});
  };
  const writer: RecordingWriter = {
    append(pageId, events) {
      if (done) return;
      const text = events.map((e) => `${JSON.stringify({ p: pageId, e })}\n`).join('');
      const size = Buffer.byteLength(text);
      if (bytes + size > maxBytes) {
        done = true;
        write(`${JSON.stringify({ truncated: true })}\n`);
        return;
      }
      bytes += size;
      write(text);
    },
    flushed: () => chain.then(() => {}),
    async close() {
      done = true;
      await chain;
      await (await handle).close().catch(() => {});
      if (open.get(sessionId) === writer) open.delete(sessionId);
    },
  };
  open.set(sessionId, writer);
  return writer;
}

export interface RecordedPage {
  id: string;
  /** The address of the page's first recorded document other than about:blank (rrweb's Meta event). */
  url: string | null;
  events: number;
}

export interface Recording {
  pages: RecordedPage[];
  truncated: boolean;
  events: (pageId: string) => RecordedEvent[];
}

/** The recording of `sessionId`, or undefined when there is no file (nothing recorded on this host). */
export async function readRecording(dataDir: string, sessionId: string): Promise<Recording | undefined> {
  await open.get(sessionId)?.flushed();
  let text: string;
  try {
    text = await fs.promises.readFile(recordingPath(dataDir, sessionId), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const byPage = new Map<string, RecordedEvent[]>();
  const pages = new Map<string, RecordedPage>();
  let truncated = false;
  for (const line of text.split('\n')) {
    if (!line) continue;
    let row: { p?: string; e?: RecordedEvent; truncated?: boolean };
    try {
      row = JSON.parse(line);
    } catch {
      continue; // a line cut by a crash mid-write
    }
    if (row.truncated) truncated = true;
    if (!row.p || !row.e) continue;
    let page = pages.get(row.p);
    if (!page) {
      page = { id: row.p, url: null, events: 0 };
      pages.set(row.p, page);
      byPage.set(row.p, []);
    }
    page.events++;
    const href = (row.e.data as { href?: unknown } | undefined)?.href;
    // A new tab's first document is the empty about:blank: the page is named after the first real one.
    if (row.e.type === 4 && typeof href === 'string' && (page.url === null || page.url === 'about:blank'))
      page.url = href;
    byPage.get(row.p)?.push(row.e);
  }
  return { pages: [...pages.values()], truncated, events: (pageId) => byPage.get(pageId) ?? [] };
}

/** Removes recordings older than the retention (by the file's last write). */
export async function sweepRecordings(dataDir: string, now: number, retentionDays = RECORDING_RETENTION_DAYS) {
  const dir = recordingsDir(dataDir);
  const names = await fs.promises.readdir(dir).catch(() => [] as string[]);
  const cutoff = now - retentionDays * 86_400_000;
  let removed = 0;
  for (const name of names) {
    const file = path.join(dir, name);
    const stat = await fs.promises.stat(file).catch(() => undefined);
    if (stat && stat.mtimeMs < cutoff) {
      await fs.promises.rm(file, { force: true });
      removed++;
    }
  }
  return removed;
}
