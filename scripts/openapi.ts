/**
 * Builds the OpenAPI document without starting a server (the app on a throwaway in-memory PGlite) and
 * prints it, or writes it to the file named by `--out`. `npm run lint:openapi` lints its output.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { buildApp } from '../src/app.ts';
import { assembleDeps } from '../src/assemble-deps.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/client.ts';
import { migrate } from '../src/db/migrate.ts';
import { startBoss } from '../src/queue/queues.ts';
import { systemClock } from '../src/shared/clock.ts';
import { createLogger } from '../src/shared/logger.ts';
import { createMailer } from '../src/shared/mail.ts';
import { createNotifier } from '../src/shared/notify.ts';

/** The document the service serves at `/api/openapi.json`, built from the route schemas. */
export async function buildOpenApiDocument(): Promise<Record<string, unknown>> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-openapi-'));
  const config = loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir });
  const database = await openDatabase({});
  try {
    await migrate(database);
    const boss = await startBoss(database, { schedule: false });
    const notifier = createNotifier(database);
    const logger = createLogger('silent');
    const mailer = createMailer({ from: config.MAIL_FROM, dataDir, logger });
    const deps = assembleDeps({ config, database, clock: systemClock, mailer, boss, notifier, logger });
    const app = await buildApp(deps);
    try {
      await app.ready();
      return app.swagger() as unknown as Record<string, unknown>;
    } finally {
      await app.close();
      await boss.stop({ graceful: false });
      await notifier.close();
      mailer.close();
    }
  } finally {
    await database.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { out: { type: 'string' } } });
  const json = `${JSON.stringify(await buildOpenApiDocument(), null, 2)}\n`;
  if (values.out) {
    fs.mkdirSync(path.dirname(values.out), { recursive: true });
    fs.writeFileSync(values.out, json);
  } else process.stdout.write(json);
}
