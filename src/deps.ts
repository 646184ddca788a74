import type { Logger } from 'pino';
import type { PgBoss } from 'pg-boss';
import type { Config } from './config.ts';
import type { Database, Db } from './db/client.ts';
import { createApiKeyService, type ApiKeyService } from './modules/api-keys/api-keys.service.ts';
import type { Clock } from './shared/clock.ts';
import type { Mailer } from './shared/mail.ts';
import type { Notifier } from './shared/notify.ts';

/** Everything a service may need, passed in (never imported as a singleton) so tests can swap parts. */
export interface AppDeps {
  config: Config;
  database: Database;
  db: Db;
  clock: Clock;
  mailer: Mailer;
  boss: PgBoss;
  notifier: Notifier;
  logger: Logger;
  apiKeys: ApiKeyService;
}

export function assembleDeps(parts: Omit<AppDeps, 'apiKeys' | 'db'>): AppDeps {
  const db = parts.database.db;
  return { ...parts, db, apiKeys: createApiKeyService({ db, clock: parts.clock, notifier: parts.notifier }) };
}
