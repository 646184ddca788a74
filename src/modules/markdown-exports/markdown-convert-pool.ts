/**
 * Conversion off the event loop: Readability and mdream are synchronous CPU work (about 1 ms a page), which on
 * the crawl's own thread would hold up its requests and the database writes. A few worker threads, started on
 * first use and shared by the process's exports, take each page to the least busy one; they are unref'd, so an
 * idle pool keeps no process alive. Without threads (MARKDOWN_CONVERT_THREADS=0) pages convert inline, with no
 * time limit.
 *
 * A thread converts its pages in order. A page still converting after `timeLimitMs` fails, and its thread is
 * terminated (synchronous work cannot be interrupted otherwise); a thread that ends for any reason (a crash, an
 * exit without an error, that termination) leaves the pool, and the pages it still held are handed to another
 * thread once (a second thread death fails them).
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { type ConvertedPage, pageToMarkdown } from './markdown-convert.ts';

/** A page that could not be converted (its own failure, not the export's): an error, the time limit, a crash. */
export class ConvertError extends Error {}

interface Job {
  html: string;
  url: string;
  onlyMainContent: boolean;
  resolve(page: ConvertedPage): void;
  reject(error: Error): void;
  /** Already handed over once by a thread that ended. */
  moved: boolean;
}

interface Thread {
  worker: Worker;
  /** Its jobs, the one converting first. */
  queue: Array<{ id: number; job: Job }>;
  timer?: NodeJS.Timeout;
  /** Its modules are loaded: time limits run from then on (not while it starts). */
  ready: boolean;
  /** Why it ended, when it is known (an 'error' event, the time limit). */
  death?: Error;
}

export function createConvertPool(size: number, options: { timeLimitMs?: number } = {}) {
  const timeLimitMs = options.timeLimitMs ?? 30_000;
  const threads: Thread[] = [];
  let nextId = 0;
  let closed = false;

  /** The time limit runs for the page a thread is converting (the first of its queue). */
  const arm = (thread: Thread) => {
    clearTimeout(thread.timer);
    thread.timer = undefined;
    const current = thread.queue[0];
    if (!current || !thread.ready) return;
    thread.timer = setTimeout(() => {
      thread.death = new ConvertError(`Converting the page took longer than ${timeLimitMs} ms`);
      thread.queue.shift();
      current.job.reject(thread.death);
      void thread.worker.terminate();
    }, timeLimitMs);
    thread.timer.unref();
  };

  const start = (): Thread => {
    const worker = new Worker(new URL('./markdown-convert.worker.ts', import.meta.url));
    const thread: Thread = { worker, queue: [], ready: false };
    worker.unref();
    worker.on('message', (m: { id: number; page?: ConvertedPage; error?: string } | 'ready') => {
      if (m === 'ready') {
        thread.ready = true;
        return arm(thread);
      }
      if (thread.queue[0]?.id !== m.id) return; // a page the time limit already failed
      const { job } = thread.queue.shift()!;
      arm(thread);
      if (m.page) job.resolve(m.page);
      else job.reject(new ConvertError(`Converting the page failed: ${m.error}`));
    });
    worker.on('error', (error) => {
      thread.death ??= new ConvertError(`The conversion thread failed: ${error.message}`);
    });
    worker.on('exit', (code) => {
      clearTimeout(thread.timer);
      const at = threads.indexOf(thread);
      if (at >= 0) threads.splice(at, 1);
      const reason = closed
        ? new Error('The conversion pool was closed')
        : (thread.death ?? new ConvertError(`The conversion thread exited (code ${code})`));
      for (const { job } of thread.queue.splice(0)) {
        if (closed || job.moved) job.reject(reason);
        else {
          job.moved = true;
          submit(job);
        }
      }
    });
    threads.push(thread);
    return thread;
  };

  function submit(job: Job): void {
    const thread =
      threads.length < size ? start() : threads.reduce((a, b) => (b.queue.length < a.queue.length ? b : a));
    const id = nextId++;
    thread.queue.push({ id, job });
    if (thread.queue.length === 1) arm(thread);
    thread.worker.postMessage({ id, html: job.html, url: job.url, onlyMainContent: job.onlyMainContent });
  }

  return {
    convert(html: string, url: string, onlyMainContent: boolean): Promise<ConvertedPage> {
      if (size <= 0) return Promise.resolve(pageToMarkdown(html, url, onlyMainContent));
      if (closed) return Promise.reject(new Error('The conversion pool was closed'));
      return new Promise<ConvertedPage>((resolve, reject) =>
        submit({ html, url, onlyMainContent, resolve, reject, moved: false }),
      );
    },
    async close(): Promise<void> {
      closed = true;
      await Promise.all(threads.splice(0).map((t) => t.worker.terminate()));
    },
  };
}

/** Threads by default: one per core but one (the crawl and the database keep one), at least one, at most 4. */
export const defaultConvertThreads = () => Math.min(4, Math.max(1, os.availableParallelism() - 1));
