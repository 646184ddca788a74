/**
 * Conversion off the event loop: Readability and mdream are synchronous CPU work (about 1 ms a page), which on
 * the crawl's own thread would hold up its requests and the database writes. A few worker threads, started on
 * first use and shared by the process's exports, take each page to the least busy one; they are unref'd, so an
 * idle pool keeps no process alive. Without threads (MARKDOWN_CONVERT_THREADS=0) pages convert inline.
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { type ConvertedPage, pageToMarkdown } from './markdown-convert.ts';

interface Pending {
  resolve(page: ConvertedPage): void;
  reject(error: Error): void;
}

interface Thread {
  worker: Worker;
  busy: number;
}

export function createConvertPool(size: number) {
  const threads: Thread[] = [];
  const pending = new Map<number, Pending & { thread: Thread }>();
  let nextId = 0;

  const start = (): Thread => {
    const worker = new Worker(new URL('./markdown-convert.worker.ts', import.meta.url));
    const thread: Thread = { worker, busy: 0 };
    worker.unref();
    worker.on('message', (m: { id: number; page?: ConvertedPage; error?: string }) => {
      const job = pending.get(m.id);
      if (!job) return;
      pending.delete(m.id);
      job.thread.busy--;
      if (m.page) job.resolve(m.page);
      else job.reject(new Error(`Converting the page failed: ${m.error}`));
    });
    worker.on('error', (error) => {
      // A dead thread fails its pages (they are then the export's failed pages) and is replaced on next use.
      threads.splice(threads.indexOf(thread), 1);
      for (const [id, job] of pending)
        if (job.thread === thread) {
          pending.delete(id);
          job.reject(error);
        }
    });
    threads.push(thread);
    return thread;
  };

  return {
    convert(html: string, url: string, onlyMainContent: boolean): Promise<ConvertedPage> {
      if (size <= 0) return Promise.resolve(pageToMarkdown(html, url, onlyMainContent));
      const idle = threads.length < size ? start() : threads.reduce((a, b) => (b.busy < a.busy ? b : a));
      const id = nextId++;
      idle.busy++;
      return new Promise<ConvertedPage>((resolve, reject) => {
        pending.set(id, { resolve, reject, thread: idle });
        idle.worker.postMessage({ id, html, url, onlyMainContent });
      });
    },
    async close(): Promise<void> {
      await Promise.all(threads.splice(0).map((t) => t.worker.terminate()));
    },
  };
}

/** Threads by default: one per core but one (the crawl and the database keep one), at least one, at most 4. */
export const defaultConvertThreads = () => Math.min(4, Math.max(1, os.availableParallelism() - 1));
