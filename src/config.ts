import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const emailList = z
  .string()
  .transform((v) =>
    v
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  )
  .pipe(z.array(z.email()));

/** A JSON-valued setting: parsed, then checked by `schema`. */
const json = <T extends z.ZodType>(schema: T) =>
  z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be JSON' });
        return z.NEVER;
      }
    })
    .pipe(schema);

// ---- Credits and payments (docs/webhooks-and-credits.md "Credits") ----
const creditTier = z.strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,39}$/, 'lower-case letters, digits, - and _'),
  name: z.string().min(1).max(100).optional(),
  credits: z.number().int().min(1).max(100_000_000),
  /** Price in the currency's minor unit (cents). */
  amount: z.number().int().min(1).max(100_000_000),
  currency: z.string().regex(/^[a-z]{3}$/, 'an ISO 4217 code in lower case'),
});
export type CreditTier = z.infer<typeof creditTier>;
const DEFAULT_CREDIT_TIERS: CreditTier[] = [
  { id: 'starter', name: 'Starter', credits: 5_000, amount: 1_000, currency: 'usd' },
  { id: 'growth', name: 'Growth', credits: 30_000, amount: 5_000, currency: 'usd' },
  { id: 'scale', name: 'Scale', credits: 150_000, amount: 20_000, currency: 'usd' },
];
const creditPrice = z.number().int().min(0).max(1_000_000);
/** Credits per unit of each metered action: a page crawled, an email validated, 1,000 AI tokens. */
const creditPrices = z.strictObject({
  pages: creditPrice.default(1),
  email_validations: creditPrice.default(1),
  emails_sent: creditPrice.default(1),
  ai_tokens: creditPrice.default(1),
  browser_minutes: creditPrice.default(1),
  markdown_pages: creditPrice.default(1),
});
export type CreditPrices = z.infer<typeof creditPrices>;

/** Every setting the service reads from the environment (see docs/configuration.md "Configuration"). */
const envSchema = z.object({
  NODE_ENV: z.string().default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  /**
   * Embedded database only: PGlite runs in a worker thread, off the event loop that serves HTTP and crawls. `auto`
   * (`pgliteInWorker`, the default): when the machine has a second core for it; `true`/`false` force it. With it a job
   * stores leads beside its crawl instead of stalling it (bench/NOTES-pglite-worker.md, "On by default").
   */
  PGLITE_WORKER: z
    .enum(['auto', 'true', 'false', '1', '0', 'yes', 'no'])
    .default('auto')
    .transform((v) => (v === 'auto' ? v : v === 'true' || v === '1' || v === 'yes')),
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL')
    .optional(),
  MAIL_FROM: z.string().default('Quarry <no-reply@quarry.local>'),
  ALLOW_PRIVATE_NETWORK: bool.default(false),
  TRUST_PROXY: bool.default(false),
  AI_BASE_URL: z.url().optional(),
  AI_API_KEY: z.string().optional(),
  AI_MODEL: z.string().optional(),
  AI_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(4),
  /** Per-call timeout and retries of the AI provider. */
  AI_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(60_000),
  AI_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  /** Web search for source discovery: the Brave Search API (`X-Subscription-Token`) or a server speaking its format. */
  SEARCH_API_URL: z.url().default('https://api.search.brave.com/res/v1/web/search'),
  SEARCH_API_KEY: z.string().optional(),
  /** Scraping defaults; a source's `options` may narrow them. */
  SCRAPER_USER_AGENT: z.string().min(1).default('Mozilla/5.0 (compatible; QuarryBot/0.1; +https://github.com/quarry)'),
  SCRAPER_MAX_PAGES: z.coerce.number().int().min(1).max(1_000_000).default(100),
  SCRAPER_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(16),
  SCRAPER_BROWSER_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  SCRAPER_DOMAIN_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(8),
  SCRAPER_DOMAIN_DELAY_MS: z.coerce.number().int().min(0).max(60_000).default(0),
  SCRAPER_REQUEST_TIMEOUT_SECS: z.coerce.number().int().min(1).max(600).default(30),
  /** Every crawl goes out through this proxy (http://user:pass@host:port) when set; a source's, export's or session's proxy profile replaces it. */
  SCRAPER_PROXY_URL: z.url({ protocol: /^https?$/ }).optional(),
  /** What the check of a new proxy profile fetches through the proxy (any 2xx passes). */
  PROXY_CHECK_URL: z.url({ protocol: /^https?$/ }).default('https://www.gstatic.com/generate_204'),
  SCRAPER_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  /** Scraping jobs one worker process runs at once. */
  JOB_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  /** Threads converting markdown export pages (default: cores − 1, 1 to 4); 0 converts on the event loop. */
  MARKDOWN_CONVERT_THREADS: z.coerce.number().int().min(0).max(32).optional(),
  /** A page of a markdown export still converting after this long fails (its thread is replaced). */
  MARKDOWN_CONVERT_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  CHROMIUM_PATH: z.string().default('/usr/bin/chromium'),
  ADMIN_EMAILS: emailList.default([]),
  /** Addresses every warmup domain also sends to (docs/outreach.md "Warmup domains"). */
  WARMUP_SEED_ADDRESSES: emailList.default([]),
  SECRET_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  DNS_SERVERS: z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .optional(),
  // ---- SMTP probing (docs/outreach.md "SMTP probing") ----
  /** Validation asks the domain's mail exchanger about each address (RCPT TO, never DATA). */
  SMTP_PROBE: bool.default(false),
  /** The envelope sender of probes (`MAIL FROM`); required when SMTP_PROBE is on. */
  SMTP_PROBE_FROM: z.email().optional(),
  /** The EHLO name; default the host of PUBLIC_URL, else the domain of SMTP_PROBE_FROM. */
  SMTP_PROBE_HELO: z
    .string()
    .regex(
      /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/,
      'must be a host name',
    )
    .optional(),
  SMTP_PROBE_PORT: z.coerce.number().int().min(1).max(65535).default(25),
  /** Each step of a probe (connect, each reply) fails after this long; the address stays smtp_unverified. */
  SMTP_PROBE_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  /** Probe connections to one domain at once, per process. */
  SMTP_PROBE_PER_DOMAIN: z.coerce.number().int().min(1).max(20).default(2),
  // ---- end of SMTP probing ----
  // ---- Outreach (docs/outreach.md "Outreach") ----
  /** Outreach mails one worker process sends at once (over every mailbox; each mailbox is one pooled transport). */
  OUTREACH_SEND_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(8),
  /**
   * How long the sequencer holds what it claimed, and how long a mail recorded but not confirmed may still be in
   * flight: after it, another process takes the enrollment over and such a mail counts as sent (never resent).
   */
  OUTREACH_SEND_LEASE_SECONDS: z.coerce.number().int().min(5).max(86_400).default(600),
  /** How often each mailbox's inbox is read for replies and bounces (with IDLE too: what a dropped watch missed). */
  OUTREACH_IMAP_INTERVAL_SECONDS: z.coerce.number().int().min(5).max(86_400).default(60),
  /**
   * Worker processes keep an IMAP IDLE connection per outreach mailbox and read it as soon as mail arrives. `false`
   * leaves reading to the schedule (servers that limit connections per account, many worker processes).
   */
  OUTREACH_IMAP_IDLE: bool.default(true),
  /** The platforms' API base URLs (tests point them at loopback servers speaking the same wire format). */
  INSTANTLY_API_URL: z.url({ protocol: /^https?$/ }).default('https://api.instantly.ai'),
  SMARTLEAD_API_URL: z.url({ protocol: /^https?$/ }).default('https://server.smartlead.ai/api/v1'),
  // ---- end of outreach ----
  /** Run pg-boss workers inside the API process (default). `false` makes an API-only process. */
  RUN_WORKERS: bool.default(true),
  // ---- Outbound webhooks (docs/webhooks-and-credits.md, Webhooks) ----
  /** Webhook deliveries one worker process sends at once. */
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(32),
  /** A delivery attempt with no complete answer by then fails (and is retried). */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  /** Events, their deliveries and attempts are kept this long. */
  WEBHOOK_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  // ---- end of outbound webhooks ----
  // ---- Cloud browser (docs/configuration.md) ----
  /** This process hosts browser sessions (each a Chromium of its own). */
  RUN_BROWSERS: bool.default(true),
  /** Names this host on the sessions it holds; default a random id kept in DATA_DIR/browser-host-id. */
  BROWSER_HOST_ID: z
    .string()
    .regex(/^[\w.:-]{1,100}$/, 'letters, digits, . : _ -')
    .optional(),
  /**
   * Base URL (http[s]://host:port, no path) of this process's API listener as the other API processes reach it, to
   * forward requests for the sessions it holds; default derived from HOST and PORT (docs/browser.md "Scale-out").
   */
  BROWSER_INTERNAL_URL: z
    .url({ protocol: /^https?$/ })
    .refine((url) => /^https?:\/\/[^/?#]+\/?$/.test(url), 'must be a base URL without path, query or fragment')
    .optional(),
  /** Live sessions per host, per user, per clientRef (429 CAPACITY_EXCEEDED beyond). */
  BROWSER_MAX_SESSIONS: z.coerce.number().int().min(0).max(1000).default(10),
  BROWSER_MAX_SESSIONS_PER_USER: z.coerce.number().int().min(1).max(1000).default(5),
  BROWSER_MAX_SESSIONS_PER_CLIENT_REF: z.coerce.number().int().min(1).max(1000).default(2),
  /** No new session while the machine has less free memory than this. */
  BROWSER_MIN_FREE_MEMORY_MB: z.coerce.number().int().min(0).max(1_000_000).default(256),
  /** A session's hard timeout unless its create asks otherwise (`timeoutMs`). */
  BROWSER_SESSION_TIMEOUT_MS: z.coerce.number().int().min(1000).max(86_400_000).default(900_000),
  /** A session with no client and no action for this long ends, unless keepAlive (`idleTimeoutMs`). */
  BROWSER_IDLE_TIMEOUT_MS: z.coerce.number().int().min(1000).max(86_400_000).default(300_000),
  /** Chromium processes kept launched and ready, so a new session starts without waiting for one. */
  BROWSER_WARM_POOL: z.coerce.number().int().min(0).max(100).default(0),
  /** The largest file an upload into a session may be (413 PAYLOAD_TOO_LARGE beyond). */
  BROWSER_FILE_MAX_MB: z.coerce.number().int().min(1).max(1024).default(32),
  /** Where browser profiles' state files live; default DATA_DIR/browser-profiles (shared by every host). */
  BROWSER_PROFILE_DIR: z.string().min(1).optional(),
  /** The largest state a profile may hold (413 PAYLOAD_TOO_LARGE beyond). */
  BROWSER_PROFILE_MAX_MB: z.coerce.number().int().min(1).max(1024).default(50),
  /** Days a sleeping session's snapshot is kept; then it is deleted and the session ends EXPIRED. */
  BROWSER_SNAPSHOT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  /** Screencast frames per second a live view sends its viewers at most (docs/browser.md "Live viewer"). */
  BROWSER_LIVE_MAX_FPS: z.coerce.number().int().min(1).max(60).default(10),
  /**
   * The CSP `frame-ancestors` of the live-view page: who may embed it in an iframe (space-separated sources:
   * `'self'`, `https://app.example.com`, `https:`, `*`). Default `'self'`: only pages of this service.
   */
  BROWSER_LIVE_FRAME_ANCESTORS: z
    .string()
    .trim()
    .min(1)
    .regex(/^[^;,\r\n]+$/, "CSP sources separated by spaces (no ';' or ',')")
    .default("'self'"),
  // ---- end of cloud browser ----
  // ---- Professional network (docs/professional-network.md) ----
  /** The network's base URL (scheme and host): profile URLs must be its /in/<slug> pages; tests use a loopback site. */
  LINKEDIN_BASE_URL: z
    .url({ protocol: /^https?$/ })
    .refine((url) => /^https?:\/\/[^/?#]+\/?$/.test(url), 'must be a base URL without path, query or fragment')
    .default('https://www.linkedin.com'),
  /** A credential's daily request limit unless its create names one (`dailyLimit`). */
  LINKEDIN_DAILY_LIMIT: z.coerce.number().int().min(1).max(10_000).default(80),
  /** The least wait between two profile requests of an enrichment job, and the random extra on top of it. */
  LINKEDIN_DELAY_MS: z.coerce.number().int().min(0).max(600_000).default(20_000),
  LINKEDIN_JITTER_MS: z.coerce.number().int().min(0).max(600_000).default(20_000),
  /**
   * A running enrichment job's heartbeat period, and the silence after which its worker counts as dead and another
   * worker takes the job over (PostgreSQL; tests shorten both).
   */
  LINKEDIN_JOB_HEARTBEAT_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
  LINKEDIN_JOB_STALE_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(30_000),
  // ---- end of professional network ----
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PUBLIC_URL: z.url().optional(),
  // ---- Credits and payments (docs/webhooks-and-credits.md "Credits") ----
  /**
   * Metering (docs/webhooks-and-credits.md "Credits"). Unset: on exactly when payments are configured (STRIPE_SECRET_KEY), since
   * without them nobody can buy credits and metering would only lock users out.
   */
  CREDITS_ENABLED: bool.optional(),
  CREDITS_SIGNUP_GRANT: z.coerce.number().int().min(0).max(100_000_000).default(1_000),
  CREDITS_LOW_THRESHOLD: z.coerce.number().int().min(0).max(100_000_000).default(100),
  CREDITS_TIERS: json(
    z
      .array(creditTier)
      .min(1)
      .max(20)
      .refine((tiers) => new Set(tiers.map((t) => t.id)).size === tiers.length, 'tier ids must be unique'),
  ).default(DEFAULT_CREDIT_TIERS),
  CREDITS_PRICES: json(creditPrices).default(creditPrices.parse({})),
  STRIPE_SECRET_KEY: z.string().min(1).optional(),
  STRIPE_WEBHOOK_SECRET: z.string().min(1).optional(),
  /** Another server speaking Stripe's API (a proxy, a test stub): its protocol, host and port are used. */
  STRIPE_API_BASE: z.url({ protocol: /^https?$/ }).optional(),
  /** Secret of `POST /api/webhooks/inbound/standard` (Standard Webhooks, `whsec_` + base64). */
  INBOUND_WEBHOOK_SECRET: z
    .string()
    .regex(/^(whsec_)?[A-Za-z0-9+/]{16,}={0,2}$/, 'must be whsec_ followed by base64 (at least 12 bytes)')
    .optional(),
});

/** Rules across settings. */
const checkedEnvSchema = envSchema
  .superRefine((env, ctx) => {
    if (env.SMTP_PROBE && !env.SMTP_PROBE_FROM)
      ctx.addIssue({ code: 'custom', path: ['SMTP_PROBE_FROM'], message: 'is required when SMTP_PROBE is on' });
    if (env.LINKEDIN_JOB_STALE_MS < 3 * env.LINKEDIN_JOB_HEARTBEAT_MS)
      ctx.addIssue({
        code: 'custom',
        path: ['LINKEDIN_JOB_STALE_MS'],
        message: 'must be at least 3 × LINKEDIN_JOB_HEARTBEAT_MS (a live job would be taken over)',
      });
  })
  .transform((env) => ({ ...env, CREDITS_ENABLED: env.CREDITS_ENABLED ?? env.STRIPE_SECRET_KEY !== undefined }));

export type Config = z.output<typeof checkedEnvSchema> & { dataDir: string };

export class ConfigError extends Error {}

/** A start-up problem the operator must fix (a data directory or host id in use): printed as one line, exit 1. */
export class StartupError extends Error {}

/**
 * Whether the embedded database runs in its worker thread: as PGLITE_WORKER says, and with `auto` when the machine
 * offers at least two cores (on one, the thread would only take turns with the event loop, and every statement would
 * pay two thread wake-ups). Node's count follows the CPU affinity and a cgroup's CPU quota (libuv 1.49 and later;
 * Node 24 has 1.52), so a container limited to one CPU keeps PGlite in the service thread.
 */
export function pgliteInWorker(config: Pick<Config, 'PGLITE_WORKER'>, cores = os.availableParallelism()): boolean {
  return config.PGLITE_WORKER === 'auto' ? cores >= 2 : config.PGLITE_WORKER;
}

/** Parses the environment; throws a ConfigError whose message is one readable line. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = checkedEnvSchema.safeParse(cleaned);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0]);
    const at = issue.path.length > 1 ? ` (item ${issue.path.slice(1).join('.')})` : '';
    // Secrets are not echoed back.
    const shown = /KEY|SECRET|PASSWORD|PROXY/.test(name) ? '[redacted]' : JSON.stringify(env[name] ?? '');
    throw new ConfigError(`Invalid configuration: ${name}=${shown}${at}: ${issue.message}`);
  }
  return { ...parsed.data, dataDir: path.resolve(parsed.data.DATA_DIR) };
}
