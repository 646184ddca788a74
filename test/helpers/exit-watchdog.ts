/**
 * Loaded into every test file's process (`npm test` passes it with --import). node:test waits for a file's process to
 * exit, without a limit: a timer or socket left open after its tests (a crawl that never settled, say) hung the whole
 * suite until CI's own limit, naming nothing. So a file still running WATCHDOG_MS after its tests ended (its own after
 * hooks included: they run after this one's) fails, naming what keeps it alive.
 */
import { after } from 'node:test';
import { isMainThread } from 'node:worker_threads';

/** Longer than the suite's after hooks take (closing apps, browsers, databases: seconds); shorter than CI's limit. */
const WATCHDOG_MS = 90_000;

// Only in a test file's own main thread: not in the runner that starts the files, nor in worker threads (PGlite's,
// markdown conversion's), which inherit --import and would start a node:test root of their own.
if (process.env.NODE_TEST_CONTEXT && isMainThread) {
  after(() => {
    setTimeout(() => {
      const resources = process.getActiveResourcesInfo().filter((r) => r !== 'TTYWrap' && r !== 'PipeWrap');
      console.error(
        `This test file's process was still running ${WATCHDOG_MS / 1000} s after its tests ended (after hooks ` +
          `included), kept alive by: ${resources.join(', ') || 'nothing visible'}. ` +
          'Something it started was not closed.',
      );
      process.exit(1);
    }, WATCHDOG_MS).unref();
  });
}
