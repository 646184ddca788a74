import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { Database, Db } from './db/client.ts';
import type { AiService } from './shared/ai/ai.service.ts';
import type { SearchProvider } from './shared/ai/search.ts';
import type { Clock } from './shared/clock.ts';
import type { Credits } from './shared/credits.ts';
import type { Mailer } from './shared/mail.ts';
import type { Notifier } from './shared/notify.ts';

/**
 * Everything a service may need, passed in (never imported as a singleton) so tests can swap parts. A module that
 * provides a part adds its field from its own file (`declare module '../../deps.ts' { interface AppDeps { … } }`:
 * `apiKeys`, `emailValidator`, `sentMail`), so this file imports no module and modules can import it;
 * src/assemble-deps.ts builds the whole.
 */
export interface AppDeps {
  config: Config;
  database: Database;
  db: Db;
  clock: Clock;
  mailer: Mailer;
  boss: PgBoss;
  notifier: Notifier;
  logger: Logger;
  /** The AI layer every AI feature shares (structured output, concurrency bound, usage per user). */
  ai: AiService;
  /** Web search for source discovery (Brave Search API format). */
  search: SearchProvider;
  /** Metering: assert, spend and adjust credits inside the caller's transaction (docs/webhooks-and-credits.md "Credits"). */
  credits: Credits;
}
