/**
 * Crawlee's PlaywrightCrawler, without the open proxy its browser pool starts on import.
 *
 * `@crawlee/browser-pool/proxy-server.js` starts a proxy-chain server on port 0 of every interface, with no
 * credentials and no address check, as soon as the module loads: its address is only a placeholder launch proxy
 * for per-context proxies (Playwright: "can be any string"), and Quarry always launches Chromium with its own
 * guard proxy (src/shared/guard-proxy.ts), which replaces it. Anyone who reached the host could relay through it
 * to loopback. The module is put in Node's CommonJS cache, before the browser pool is loaded, as one that opens
 * nothing. Imported for this effect alone, by playwright-crawler.ts, before `@crawlee/playwright`.
 */
import Module, { createRequire } from 'node:module';
import path from 'node:path';

const PLACEHOLDER_PROXY = 'http://per-context';

function replaceProxyServerModule(): void {
  const fromHere = createRequire(import.meta.url);
  const fromPlaywright = createRequire(fromHere.resolve('@crawlee/playwright'));
  const fromBrowser = createRequire(fromPlaywright.resolve('@crawlee/browser'));
  const file = path.join(path.dirname(fromBrowser.resolve('@crawlee/browser-pool')), 'proxy-server.js');
  if (fromHere.cache[file]?.loaded) {
    throw new Error('@crawlee/browser-pool was loaded before its open proxy could be disabled');
  }
  const replacement = new Module(file);
  replacement.filename = file;
  replacement.loaded = true;
  replacement.exports = { getLocalProxyAddress: async () => PLACEHOLDER_PROXY };
  fromHere.cache[file] = replacement;
}

replaceProxyServerModule();
