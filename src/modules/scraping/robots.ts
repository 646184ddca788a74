/**
 * robots.txt for one crawl: fetched once per origin with the crawl's User-Agent through the crawl's
 * guarded client (so through its proxy too), matched on the User-Agent's product token (RFC 9309).
 * A robots.txt that is missing, fails (4xx/5xx) or cannot be reached allows everything.
 */
import { createRequire } from 'node:module';

interface RobotsFile {
  isAllowed(url: string, ua?: string): boolean | undefined;
  getCrawlDelay(ua?: string): number | undefined;
}
// A CommonJS function export its typings declare as `default`: required, so the types match the runtime.
const robotsParser = createRequire(import.meta.url)('robots-parser') as (url: string, contents: string) => RobotsFile;

/** Crawl-delay honoured at most (a hostile robots.txt must not park a crawl for a day). */
const MAX_CRAWL_DELAY_MS = 60_000;
const GENERIC_TOKENS = new Set([
  'mozilla',
  'applewebkit',
  'chrome',
  'safari',
  'gecko',
  'firefox',
  'edg',
  'opr',
  'version',
  'mobile',
]);

/**
 * The product token robots.txt groups are matched against: the first token that looks like a bot
 * (`QuarryBot` in `Mozilla/5.0 (compatible; QuarryBot/0.1; +https://…)`), else the first non-browser
 * token, else `*` (a browser-like User-Agent obeys the `*` group).
 */
export function robotsToken(userAgent: string): string {
  const tokens = [...userAgent.matchAll(/([A-Za-z][A-Za-z0-9_-]*)\/[0-9]/g)].map((m) => m[1]!);
  const bot = tokens.find((t) => /bot|crawl|spider|scrap/i.test(t));
  return bot ?? tokens.find((t) => !GENERIC_TOKENS.has(t.toLowerCase())) ?? '*';
}

export interface RobotsRules {
  isAllowed(url: string): boolean;
  /** Crawl-delay in ms for our token (capped), if the file sets one. */
  crawlDelayMs?: number;
}

const ALLOW_ALL: RobotsRules = { isAllowed: () => true };

export class RobotsCache {
  readonly #fetchText: (url: string) => Promise<{ status: number; body: string }>;
  readonly #token: string;
  readonly #byOrigin = new Map<string, Promise<RobotsRules>>();
  readonly #onRules?: (origin: string, rules: RobotsRules) => void;

  /** `onRules` sees each origin's rules once, before any page of it is allowed (Crawl-delay). */
  constructor(
    fetchText: (url: string) => Promise<{ status: number; body: string }>,
    userAgent: string,
    onRules?: (origin: string, rules: RobotsRules) => void,
  ) {
    this.#fetchText = fetchText;
    this.#token = robotsToken(userAgent);
    this.#onRules = onRules;
  }

  #load(origin: string): Promise<RobotsRules> {
    let rules = this.#byOrigin.get(origin);
    if (!rules) {
      rules = this.#fetch(origin);
      this.#byOrigin.set(origin, rules);
    }
    return rules;
  }

  async #fetch(origin: string): Promise<RobotsRules> {
    const robotsUrl = `${origin}/robots.txt`;
    let rules = ALLOW_ALL;
    try {
      const { status, body } = await this.#fetchText(robotsUrl);
      if (status >= 200 && status < 300) {
        const file = robotsParser(robotsUrl, body);
        const delay = file.getCrawlDelay(this.#token);
        rules = {
          // undefined: the URL is not covered by this file (another origin): allowed.
          isAllowed: (url) => file.isAllowed(url, this.#token) !== false,
          crawlDelayMs:
            delay !== undefined && Number.isFinite(delay)
              ? Math.min(MAX_CRAWL_DELAY_MS, Math.max(0, delay * 1000))
              : undefined,
        };
      }
    } catch (error) {
      // Unreachable robots.txt: allow all. An abort is the crawl's business, not a robots answer.
      if ((error as Error)?.name === 'CrawlAbortedError') throw error;
    }
    this.#onRules?.(origin, rules);
    return rules;
  }

  async isAllowed(url: string): Promise<boolean> {
    const rules = await this.#load(new URL(url).origin);
    return rules.isAllowed(url);
  }
}
