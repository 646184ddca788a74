import { after } from 'node:test';

/**
 * pg 8 warns (once per process) when a query is sent on a client that is still running another one,
 * e.g. a `Promise.all` of queries inside a transaction; pg 9 will make it an error. A test file that
 * loads the test helpers fails on it, naming the caller; so does one whose service processes print it.
 */
const CONCURRENT_QUERY = /already executing a query/;
const seen: string[] = [];
const outputs: Array<() => string> = [];

process.on('warning', (warning) => {
  if (warning.name === 'DeprecationWarning' && CONCURRENT_QUERY.test(warning.message))
    seen.push(warning.stack ?? warning.message);
});

// Only under `node --test` (benchmarks load some helpers too, and must not start a test run).
if (process.env.NODE_TEST_CONTEXT) {
  after(() => {
    const children = outputs.map((o) => o()).filter((o) => CONCURRENT_QUERY.test(o));
    if (seen.length || children.length) {
      const callers = [...seen, ...children].join('\n');
      throw new Error(`pg: concurrent queries on one client (pg 9 refuses them):\n${callers}`);
    }
  });
}

/** Adds a service process's output (started with --trace-deprecation) to the check. */
export const watchOutputForConcurrentQueries = (output: () => string): void => void outputs.push(output);
