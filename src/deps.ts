import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { Database, Db } from './db/client.ts';
import { type ApiKeyService, createApiKeyService } from './modules/api-keys/index.ts';
import { createCredits } from './modules/credits/index.ts';
import { createEmailValidator, type EmailValidator, type SentMail } from './modules/email-verification/index.ts';
import {
  ownedOutreachCampaign,
  sendsByCampaign,
  sendsByRecipientDomain,
  stopSequencesOf,
} from './modules/outreach/index.ts';
import { eventOutbox } from './modules/webhooks/index.ts';
import { type AiService, createAiService } from './shared/ai/ai.service.ts';
import { createSearchProvider, type SearchProvider } from './shared/ai/search.ts';
import type { Clock } from './shared/clock.ts';
import type { Credits } from './shared/credits.ts';
import { installEventOutbox } from './shared/events.ts';
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
  /** The AI layer every AI feature shares (structured output, concurrency bound, usage per user). */
  ai: AiService;
  /** Web search for source discovery (Brave Search API format). */
  search: SearchProvider;
  /** Metering: assert, spend and adjust credits inside the caller's transaction (docs/webhooks-and-credits.md "Credits"). */
  credits: Credits;
  /** Email validation (syntax, suppressions, bounces, DNS, SMTP probe), which the leads module stores per lead. */
  emailValidator: EmailValidator;
  /** Outreach's sends and sequences as email verification sees them (bounce rates; a hard bounce stops sequences). */
  sentMail: SentMail;
}

export function assembleDeps(
  parts: Omit<AppDeps, 'apiKeys' | 'db' | 'ai' | 'search' | 'credits' | 'emailValidator' | 'sentMail'>,
): AppDeps {
  const db = parts.database.db;
  // emitEvent (shared) writes through the webhooks module's outbox; the writer is stateless: once per process will do.
  installEventOutbox(eventOutbox);
  const credits = createCredits(parts.config, parts.clock);
  return {
    ...parts,
    db,
    credits,
    apiKeys: createApiKeyService({ db, clock: parts.clock, notifier: parts.notifier }),
    ai: createAiService({ config: parts.config, db, logger: parts.logger, clock: parts.clock, credits }),
    search: createSearchProvider(parts.config),
    emailValidator: createEmailValidator({ db, config: parts.config }),
    sentMail: {
      ownedCampaign: ownedOutreachCampaign,
      sendsByRecipientDomain,
      sendsByCampaign,
      stopEnrollmentsOf: stopSequencesOf,
    },
  };
}
