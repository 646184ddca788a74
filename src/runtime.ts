// First, before anything can load Crawlee's browser pool: it would open an unauthenticated proxy on every interface.
import './modules/scraping/browser-pool-no-open-proxy.ts';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildApp } from './app.ts';
import { assembleDeps } from './assemble-deps.ts';
import { type Config, ConfigError, loadConfig, pgliteInWorker, StartupError } from './config.ts';
import { type Database, openDatabase } from './db/client.ts';
import { migrate } from './db/migrate.ts';
import type { AppDeps } from './deps.ts';
import { creditsMode } from './modules/credits/index.ts';
import { startBoss } from './queue/queues.ts';
import { systemClock } from './shared/clock.ts';
import { createLogger } from './shared/logger.ts';
import { createMailer } from './shared/mail.ts';
import { createNotifier } from './shared/notify.ts';
import { registerSchedules, registerWorkers, type Workers } from './workers.ts';

export interface Runtime {
  deps: AppDeps;
  app?: FastifyInstance;
  stop(): Promise<void>;
}

/**
 * lower() follows the database's locale: on a cluster created with `--locale=C` it folds ASCII only,
 * so 'MÜLLER' would not equal 'müller' in matching rules or account grouping. Warn once at startup.
 */
export async function warnOnAsciiOnlyCaseFolding(
  database: Pick<Database, 'query'>,
  logger: Pick<Logger, 'warn'>,
): Promise<boolean> {
  const [row] = await database.query<{ ok: boolean }>(`SELECT lower('ÀÉÜ') = 'àéü' AS ok`);
  if (row?.ok) return true;
  logger.warn(
    'case-insensitive matching and account grouping fold only ASCII letters on this database (its lower() follows a ' +
      'C or non-UTF-8 locale); a UTF-8 locale (e.g. C.UTF-8 or en_US.UTF-8) is needed to fold letters such as Ü',
  );
  return false;
}

/** Where the database is, for the start-up log: never the credentials of DATABASE_URL. */
function describeDatabase(config: Config): { database: string; firstStart: boolean } {
  if (config.DATABASE_URL) {
    const url = new URL(config.DATABASE_URL);
    return { database: `postgres://${url.host}${url.pathname}`, firstStart: false };
  }
  const dir = path.join(config.dataDir, 'pgdata');
  return { database: dir, firstStart: !fs.existsSync(path.join(dir, 'PG_VERSION')) };
}

/** Logs a start-up step before it runs and its duration after, so a slow start is never a silent one. */
async function step<T>(logger: Logger, says: { start: string; done: string }, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  logger.info(says.start);
  const result = await run();
  logger.info({ ms: Math.round(performance.now() - started) }, says.done);
  return result;
}

/** Opens the database, migrates, starts pg-boss, and (as asked) the HTTP API and the workers. */
export async function startRuntime(
  config: Config,
  role: { http: boolean; workers: boolean },
  logger: Logger = createLogger(config.LOG_LEVEL),
): Promise<Runtime> {
  const { database: where, firstStart } = describeDatabase(config);
  const database = await step(
    logger,
    firstStart
      ? {
          start: `creating the embedded database in ${where} (first start only: PGlite's initdb, tens of seconds)…`,
          done: 'database created',
        }
      : { start: `opening the database ${where}…`, done: 'database open' },
    () =>
      openDatabase({
        databaseUrl: config.DATABASE_URL,
        dataDir: config.dataDir,
        poolSize: config.DATABASE_POOL_SIZE,
        worker: pgliteInWorker(config),
      }),
  );
  await step(logger, { start: 'applying database migrations…', done: 'database migrated' }, () => migrate(database));
  await warnOnAsciiOnlyCaseFolding(database, logger);
  const boss = await step(logger, { start: 'starting pg-boss (background job queues)…', done: 'pg-boss started' }, () =>
    startBoss(database, { databaseUrl: config.DATABASE_URL, poolSize: config.DATABASE_POOL_SIZE }),
  );
  boss.on('error', (err) => logger.error({ err }, 'pg-boss error'));
  const notifier = createNotifier(database, config.DATABASE_URL, { logger });
  const mailer = createMailer({ smtpUrl: config.SMTP_URL, from: config.MAIL_FROM, dataDir: config.dataDir, logger });
  const deps = assembleDeps({ config, database, clock: systemClock, mailer, boss, notifier, logger });
  logger.info({ credits: config.CREDITS_ENABLED ? 'metered' : 'off' }, creditsMode(config));

  let workers: Workers | undefined;
  if (role.workers) {
    const says = { start: 'starting background workers and schedules…', done: 'workers started' };
    workers = await step(logger, says, async () => {
      // Browser work (professional-network enrichment) only where the API runs the browser sessions service: a
      // worker-only process would hold Chromium under the API's host id without its reaper.
      const registered = await registerWorkers(deps, { hostsBrowsers: role.http && config.RUN_BROWSERS });
      await registerSchedules(deps);
      return registered;
    });
  }
  let app: FastifyInstance | undefined;
  if (role.http) {
    app = await step(logger, { start: 'starting the HTTP API…', done: 'HTTP API ready' }, async () => {
      const built = await buildApp(deps);
      await built.listen({ port: config.PORT, host: config.HOST });
      return built;
    });
  }

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Stop taking requests and let in-flight ones finish, then let running jobs finish.
      await app?.close();
      // Running crawls stop and their jobs go back to PENDING for another worker or the next start.
      await workers?.stop();
      await boss.stop({ graceful: true, timeout: 20_000 });
      await notifier.close();
      mailer.close();
      await database.close();
    })());
  return { deps, app, stop };
}

/** A start-up failure told in one line (the port is taken, not ours to bind). */
export class PortUnavailableError extends Error {}

const portMessage = (host: string, port: number, code: string | undefined) =>
  code === 'EACCES'
    ? `Port ${port} on ${host} needs more privileges than this process has: set PORT to a port above 1023`
    : `Port ${port} on ${host} is already in use by another process: stop it, or set PORT to a free port`;

/**
 * Binds HOST:PORT for a moment and lets go, so a taken port stops the start before the database is opened
 * or migrated. Port 0 asks the system for any free port: nothing to check.
 */
export async function checkPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE' || err.code === 'EACCES'
          ? new PortUnavailableError(portMessage(host, port, err.code))
          : err,
      ),
    );
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** Entry point shared by `npm start` and `npm run worker`. */
export async function main(role: { http: boolean; workers: boolean }): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  if (!role.http && !config.RUN_WORKERS) role.workers = true;
  if (role.http) {
    try {
      await checkPortFree(config.HOST, config.PORT);
    } catch (err) {
      if (!(err instanceof PortUnavailableError)) throw err;
      console.error(err.message);
      process.exit(1);
    }
  }
  const logger = createLogger(config.LOG_LEVEL);
  const starting = startRuntime(config, { http: role.http, workers: role.http ? config.RUN_WORKERS : true }, logger);

  // `process.on`, not `once`: Crawlee's storage loads signal-exit, whose listener re-raises the signal
  // (killing the process before its cleanup, lock left behind) when it finds itself the only listener,
  // and a `once` listener is removed before it runs. A second signal (Ctrl-C reaches both `npm start`,
  // which forwards it, and node) changes nothing. A signal during start-up stops once started.
  let shuttingDown = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (shuttingDown) return logger.info({ signal }, 'already shutting down');
    shuttingDown = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    starting
      .then((runtime) => runtime.stop())
      .then(
        () => {
          logger.info('stopped');
          process.exit(0);
        },
        (err) => {
          if (!(err instanceof StartupError)) logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, shutdown);

  let runtime: Runtime;
  try {
    runtime = await starting;
  } catch (err) {
    if (err instanceof StartupError) {
      console.error(err.message);
      process.exit(1);
    }
    // Taken between the check above and the listen: the same one line.
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES') {
      console.error(portMessage(config.HOST, config.PORT, code));
      process.exit(1);
    }
    throw err;
  }
  const base = `http://${config.HOST}:${config.PORT}`;
  logger.info(
    { database: runtime.deps.database.kind, http: role.http && base, workers: role.workers || config.RUN_WORKERS },
    role.http ? `quarry started: API reference at ${base}/docs` : 'quarry worker started',
  );
}
