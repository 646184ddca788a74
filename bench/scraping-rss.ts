/**
 * One STATIC runCrawl in a process of its own (as a worker runs it), sampling RSS every 100 ms:
 * `node bench/scraping-rss.ts <startUrl> <maxPages>` prints `{"pages", "secs", "maxRssMb"}`.
 * bench/scraping.ts runs it, so earlier benchmarks' heaps do not count against the crawl.
 */
import { runCrawl } from '../src/modules/scraping/crawl.ts';
import { DIRECTORY_SELECTORS } from '../test/fixtures/sites.ts';

const [url, maxPages] = [process.argv[2]!, Number(process.argv[3])];
let max = process.memoryUsage().rss;
const timer = setInterval(() => (max = Math.max(max, process.memoryUsage().rss)), 100);
const started = performance.now();
const result = await runCrawl(
  {
    url,
    scrapeType: 'STATIC',
    selectors: DIRECTORY_SELECTORS,
    maxPages,
    respectRobotsTxt: true,
    userAgent: 'Mozilla/5.0 (compatible; QuarryBot/0.1; +https://github.com/quarry)',
    maxConcurrency: 16,
    domainConcurrency: 16,
    domainDelayMs: 0,
    requestTimeoutSecs: 30,
    maxRetries: 2,
    allowPrivateNetwork: true,
    chromiumPath: '',
  },
  { onPage: async () => {}, signal: new AbortController().signal },
);
clearInterval(timer);
const stats = {
  pages: result.pagesVisited,
  secs: (performance.now() - started) / 1000,
  maxRssMb: Math.max(max, process.memoryUsage().rss) / 1024 / 1024,
};
process.stdout.write(`${JSON.stringify(stats)}\n`);
