/**
 * Crawlee's PlaywrightCrawler for everything in Quarry that crawls with Chromium: the first import turns off the
 * open proxy `@crawlee/browser-pool` would start on load (browser-pool-no-open-proxy.ts); imports are evaluated in
 * order, so it runs before the browser pool loads.
 */
import './browser-pool-no-open-proxy.ts';

export { PlaywrightCrawler, type PlaywrightCrawlingContext } from '@crawlee/playwright';
