import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { migrate, openDatabase, type Database } from './db/client.ts';
import { DataDirLockedError } from './db/lock.ts';
import { assembleDeps, type AppDeps } from './deps.ts';
import { startBoss } from './jobs/queues.ts';
import { registerSchedules, registerWorkers, type Workers } from './jobs/workers.ts';
import { systemClock } from './shared/clock.ts';
import { createLogger } from './shared/logger.ts';
import { createMailer } from './shared/mail.ts';
import { createNotifier } from './shared/notify.ts';

export interface Runtime {
  deps: AppDeps;
  app?: FastifyInstance;
  stop(): Promise<void>;
}

/**
 * lower() follows the database's locale: on a cluster created with `--locale=C` it folds ASCII only,
 * so 'MÜLLER' would not equal 'müller' in matching rules or account grouping. Warn once at startup.
 */
export async function warnOnAsciiOnlyCaseFolding(database: Pick<Database, 'query'>, logger: Pick<Logger, 'warn'>): Promise<boolean> {
  const [row] = await database.query<{ ok: boolean }>(`SELECT lower('ÀÉÜ') = 'àéü' AS ok`);
  if (row?.ok) return true;
  logger.warn(
    'case-insensitive matching and account grouping fold only ASCII letters on this database (its lower() follows a C or ' +
      'non-UTF-8 locale); a UTF-8 locale (e.g. C.UTF-8 or en_US.UTF-8) is needed to fold letters such as Ü',
  );
  return false;
}

/** Opens the database, migrates, starts pg-boss, and (as asked) the HTTP API and the workers. */
export async function startRuntime(config: Config, role: { http: boolean; workers: boolean }): Promise<Runtime> {
  const logger = createLogger(config.LOG_LEVEL);
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.dataDir, poolSize: config.DATABASE_POOL_SIZE });
  await migrate(database);
  await warnOnAsciiOnlyCaseFolding(database, logger);
  const boss = await startBoss(database, { databaseUrl: config.DATABASE_URL, poolSize: config.DATABASE_POOL_SIZE });
  boss.on('error', (err) => logger.error({ err }, 'pg-boss error'));
  const notifier = createNotifier(database, config.DATABASE_URL);
  const mailer = createMailer({ smtpUrl: config.SMTP_URL, from: config.MAIL_FROM, dataDir: config.dataDir, logger });
  const deps = assembleDeps({ config, database, clock: systemClock, mailer, boss, notifier, logger });

  let workers: Workers | undefined;
  if (role.workers) {
    workers = await registerWorkers(deps);
    await registerSchedules(deps);
  }
  let app: FastifyInstance | undefined;
  if (role.http) {
    app = await buildApp(deps);
    await app.listen({ port: config.PORT, host: config.HOST });
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
  let runtime: Runtime;
  try {
    runtime = await startRuntime(config, { http: role.http, workers: role.http ? config.RUN_WORKERS : true });
  } catch (err) {
    if (err instanceof DataDirLockedError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  const { logger } = runtime.deps;
  logger.info(
    { database: runtime.deps.database.kind, http: role.http ? `http://${config.HOST}:${config.PORT}` : false, workers: role.workers || config.RUN_WORKERS },
    'quarry started',
  );
  const shutdown = (signal: string) => {
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    runtime.stop().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}
