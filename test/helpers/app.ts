import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { assembleDeps } from '../../src/assemble-deps.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import type { AppDeps } from '../../src/deps.ts';
import type { RunCrawl } from '../../src/modules/scraping/scraping.types.ts';
import { startBoss } from '../../src/queue/queues.ts';
import { type Clock, systemClock } from '../../src/shared/clock.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { createMailer, type Mailer } from '../../src/shared/mail.ts';
import { createNotifier } from '../../src/shared/notify.ts';
import { registerWorkers } from '../../src/workers.ts';
import { createTestDatabase } from './db.ts';

export interface TestContextOptions {
  clock?: Clock;
  /** Environment overrides, as the service would read them (e.g. { SMTP_URL, DNS_SERVERS }). */
  env?: Record<string, string>;
  /** Run pg-boss workers in this process (default true). */
  workers?: boolean;
  mailer?: Mailer;
  /** Replaces the crawl engine under the job runner (e.g. to hold a crawl open). */
  runCrawl?: RunCrawl;
}

export interface TestUser {
  id: string;
  email: string;
  apiKey: string;
  headers: { authorization: string };
}

export interface TestContext {
  app: FastifyInstance;
  deps: AppDeps;
  config: Config;
  dataDir: string;
  inject(options: InjectOptions): Promise<LightMyRequestResponse & { body: string; json(): any }>;
  /** `inject` as `user` (no credential when undefined), with an optional JSON body. */
  call(
    user: TestUser | undefined,
    method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE',
    url: string,
    payload?: unknown,
  ): Promise<LightMyRequestResponse & { body: string; json(): any }>;
  /** Signs a new user up through the API and returns their key. */
  signup(
    overrides?: Partial<{ email: string; password: string; name: string; marketingConsent: boolean }>,
  ): Promise<TestUser>;
  close(): Promise<void>;
}

let counter = 0;

/** The whole service on a throwaway database, as tests drive it through `app.inject`. */
export async function createTestContext(options: TestContextOptions = {}): Promise<TestContext> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-test-'));
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    ALLOW_PRIVATE_NETWORK: 'true',
    // Tests meter credits as a service with payments does (CREDITS_ENABLED: '' gives the real default), and
    // tests of other sections never run out of them; test/credits.test.ts sets its own grant.
    CREDITS_ENABLED: 'true',
    CREDITS_SIGNUP_GRANT: '1000000',
    // Tests read outreach inboxes when they mean to (test/outreach-idle.test.ts drives the IDLE watcher itself).
    OUTREACH_IMAP_IDLE: 'false',
    ...options.env,
  });
  const testDb = await createTestDatabase();
  const { database } = testDb;
  const boss = await startBoss(database, { databaseUrl: testDb.url, poolSize: 4, schedule: false });
  const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
  const notifier = createNotifier(database, testDb.url, { logger });
  // As the service does: a lost pg-boss connection is logged, not an unhandled 'error' event.
  boss.on('error', (err) => logger.error({ err }, 'pg-boss error'));
  const mailer = options.mailer ?? createMailer({ smtpUrl: config.SMTP_URL, from: config.MAIL_FROM, dataDir, logger });
  const deps = assembleDeps({
    config: { ...config, DATABASE_URL: testDb.url },
    database,
    clock: options.clock ?? systemClock,
    mailer,
    boss,
    notifier,
    logger,
  });
  const workers = (options.workers ?? true) ? await registerWorkers(deps, { runCrawl: options.runCrawl }) : undefined;
  const app = await buildApp(deps);
  await app.ready();

  const ctx: TestContext = {
    app,
    deps,
    config,
    dataDir,
    inject: (opts) => app.inject(opts) as never,
    call: (user, method, url, payload) =>
      app.inject({
        method,
        url,
        headers: user?.headers ?? {},
        ...(payload !== undefined ? { payload: payload as object } : {}),
      }) as never,
    async signup(overrides = {}) {
      const email = overrides.email ?? `user${process.pid}-${++counter}-${Date.now()}@example.com`;
      const res = await app.inject({
        method: 'POST',
        url: '/api/auth/signup',
        // Distinct source address per signup so the per-IP limit does not trip other tests.
        remoteAddress: `127.1.${Math.floor(counter / 250) % 250}.${(counter % 250) + 1}`,
        payload: {
          email,
          password: overrides.password ?? 'correct horse battery',
          name: overrides.name ?? 'Test User',
          termsAccepted: true,
          privacyAccepted: true,
          marketingConsent: overrides.marketingConsent,
        },
      });
      if (res.statusCode !== 201) throw new Error(`signup failed: ${res.statusCode} ${res.body}`);
      const { user, apiKey } = res.json().data;
      return { id: user.id, email: user.email, apiKey, headers: { authorization: `Bearer ${apiKey}` } };
    },
    async close() {
      await app.close();
      await workers?.stop();
      await boss.stop({ graceful: false, timeout: 2000 }).catch(() => {});
      await notifier.close();
      mailer.close();
      await database.close();
      await testDb.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return ctx;
}

/** A test context with two signed-up users: `alice` owns things, `bob` checks he cannot see them. */
export async function createTwoUserContext(
  options: TestContextOptions = {},
): Promise<{ ctx: TestContext; alice: TestUser; bob: TestUser }> {
  const ctx = await createTestContext(options);
  const [alice, bob] = await Promise.all([ctx.signup(), ctx.signup()]);
  return { ctx, alice, bob };
}

/** Polls `check` until it returns a truthy value or the time runs out. */
export async function eventually<T>(
  check: () => Promise<T | undefined | null | false>,
  timeoutMs = 15_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Settings for a second API instance in this process, as another process without browsers: a browser host id (kept
 * in DATA_DIR) belongs to one live instance, and a second instance with the same one is refused at start.
 */
export const asAnotherInstance = <T extends { config: Config }>(deps: T): T => ({
  ...deps,
  config: { ...deps.config, RUN_BROWSERS: false },
});
