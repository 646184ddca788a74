import type { AppDeps } from './deps.ts';
import { createApiKeyService } from './modules/api-keys/index.ts';
import { createCredits } from './modules/credits/index.ts';
import { createEmailValidator } from './modules/email-verification/index.ts';
import {
  ownedOutreachCampaign,
  sendsByCampaign,
  sendsByRecipientDomain,
  stopSequencesOf,
} from './modules/outreach/index.ts';
import { eventOutbox } from './modules/webhooks/index.ts';
import { createAiService } from './shared/ai/ai.service.ts';
import { createSearchProvider } from './shared/ai/search.ts';
import { installEventOutbox } from './shared/events.ts';

/** Builds AppDeps from the process's parts: the modules' own services, the shared ports wired to them. */
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
