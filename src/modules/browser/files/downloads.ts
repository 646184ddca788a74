/**
 * The names of a session's downloads. Chromium writes a download to the session's Downloads directory under a GUID
 * (`allowAndName`, which Playwright asks for as well, so clients do not undo each other): the name the page
 * suggested comes only in `Browser.downloadWillBegin`. The watcher is a CDP client of the session's multiplexer of
 * its own (as the service's Playwright is one), asks for download events, and remembers each download's name and
 * whether it is still being written.
 */
import path from 'node:path';
import type { CdpMux } from '../cdp/mux.ts';
import type { DownloadNames } from './files.store.ts';

const ANSWER_TIMEOUT_MS = 5000;

interface Event {
  id?: number;
  method?: string;
  params?: { guid?: string; suggestedFilename?: string; state?: string; filePath?: string };
  error?: { message: string };
}

export class DownloadWatcher implements DownloadNames {
  #names = new Map<string, string>();
  #writing = new Set<string>();
  #closed = new AbortController();

  /**
   * Aborted when the session's browser closes, before its directory is removed: writes into the directory stop
   * then (a file created while it is being removed would make the removal fail).
   */
  get closed(): AbortSignal {
    return this.#closed.signal;
  }

  nameOf(entry: string): string | undefined {
    return this.#names.get(entry);
  }

  inProgress(entry: string): boolean {
    return this.#writing.has(entry);
  }

  forget(entry: string): void {
    this.#names.delete(entry);
  }

  #event(message: Event): void {
    const guid = message.params?.guid;
    if (!guid) return;
    if (message.method === 'Browser.downloadWillBegin') {
      if (message.params?.suggestedFilename) this.#names.set(guid, message.params.suggestedFilename);
      this.#writing.add(guid);
    } else if (message.method === 'Browser.downloadProgress' && message.params?.state !== 'inProgress') {
      this.#writing.delete(guid);
      // A client that asked for `allow` makes Chromium name the file itself: the file is wherever it says.
      const file = message.params?.filePath ? path.basename(message.params.filePath) : guid;
      const name = this.#names.get(guid);
      if (message.params?.state !== 'completed') this.#names.delete(guid);
      else if (name && file !== guid) {
        this.#names.delete(guid);
        this.#names.set(file, name);
      }
    }
  }

  /**
   * Attaches to the session's multiplexer and asks Chromium to write downloads into `downloadDir` (the policy pins
   * the path there anyway) with events; the client lives until the session's browser closes.
   */
  static async attach(mux: CdpMux, downloadDir: string): Promise<DownloadWatcher> {
    const watcher = new DownloadWatcher();
    let answered: (message: Event) => void = () => {};
    const answer = new Promise<Event>((resolve) => {
      answered = resolve;
    });
    const client = await mux.attach(
      {
        send(text) {
          const message = JSON.parse(text) as Event;
          if (message.id === 1) answered(message);
          else watcher.#event(message);
        },
        close() {
          watcher.#closed.abort(new Error('the browser closed'));
          answered({ error: { message: 'the browser closed' } });
        },
        bufferedAmount: 0,
      },
      { spare: false },
    );
    const params = { behavior: 'allowAndName', downloadPath: downloadDir, eventsEnabled: true };
    client.receive(JSON.stringify({ id: 1, method: 'Browser.setDownloadBehavior', params }));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<Event>((resolve) => {
      timer = setTimeout(() => resolve({ error: { message: 'no answer in time' } }), ANSWER_TIMEOUT_MS);
    });
    const result = await Promise.race([answer, timeout]).finally(() => clearTimeout(timer));
    if (result.error) {
      client.close();
      throw new Error(`Downloads cannot be followed: ${result.error.message}`);
    }
    return watcher;
  }
}
