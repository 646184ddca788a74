/** A conversion thread of the pool (markdown-convert-pool.ts): pages in, title and markdown out. */
import { parentPort } from 'node:worker_threads';
import { pageToMarkdown } from './markdown-convert.ts';

interface Job {
  id: number;
  html: string;
  url: string;
  onlyMainContent: boolean;
}

parentPort!.on('message', (job: Job) => {
  try {
    parentPort!.postMessage({ id: job.id, page: pageToMarkdown(job.html, job.url, job.onlyMainContent) });
  } catch (error) {
    parentPort!.postMessage({ id: job.id, error: String((error as Error)?.message ?? error) });
  }
});

// Its modules are loaded: the pool's time limits start now.
parentPort!.postMessage('ready');
