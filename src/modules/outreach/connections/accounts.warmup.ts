import type { AppDeps } from '../../../deps.ts';
import { createSecretBox, secretKeyMaterial } from '../../../shared/crypto.ts';
import { validationError } from '../../../shared/errors.ts';
import { findOwned } from '../../../shared/ids.ts';
import { domainOf } from '../../../shared/mail/address.ts';
import { createWarmupBody, createWarmupService, type WarmupDomainView } from '../../warmup/index.ts';
import type { PlatformWarmupAnalytics } from '../providers/platform.ts';
import { accountRef, clientOf, isPlatform, platformFailure } from '../providers/platforms.ts';
import { connectionsRepository, type MailboxRow } from './connections.repository.ts';

type Deps = Pick<AppDeps, 'db' | 'clock' | 'config'>;

export interface AccountWarmup {
  enabled: boolean;
  warmupDomain: WarmupDomainView | null;
  platform: PlatformWarmupAnalytics | null;
}

/**
 * Warmup of an `smtp` mailbox (docs/outreach.md "Outreach", Accounts) is the mailbox's domain in Warmup domains, sending
 * through this mailbox: enabling creates and starts it (SPF and DKIM checked: 400 DNS_NOT_READY), or resumes it;
 * disabling pauses it. The warmup module keeps the schedule and the states.
 */
export function createAccountWarmupService(deps: Deps) {
  const repo = connectionsRepository(deps.db);
  const warmup = createWarmupService(deps);
  const box = createSecretBox(secretKeyMaterial(deps.config));

  const owned = (userId: string, id: string) => findOwned(id, 'Account', (key) => repo.findMailbox(userId, key));
  const stateOf = (view: WarmupDomainView): AccountWarmup => ({
    enabled: view.status === 'WARMING',
    warmupDomain: view,
    platform: null,
  });
  const none: AccountWarmup = { enabled: false, warmupDomain: null, platform: null };

  /** A platform's account: the platform warms it (docs/outreach.md "Outreach", Platforms); undefined for `smtp`. */
  async function platformOf(mailbox: MailboxRow) {
    const connection = (await repo.find(mailbox.userId, mailbox.connectionId))!;
    if (!isPlatform(connection.provider)) return undefined;
    const provider = connection.provider;
    const client = clientOf(deps, box, connection);
    const account = accountRef(mailbox);
    const analytics = async (): Promise<AccountWarmup> => {
      const figures = await client.warmupAnalytics(account).catch((err) => platformFailure(err, provider, 'id'));
      return { enabled: figures.enabled ?? false, warmupDomain: null, platform: figures };
    };
    return {
      analytics,
      async set(enabled: boolean) {
        await client.setWarmup(account, enabled).catch((err) => platformFailure(err, provider, 'enabled'));
        return analytics();
      },
    };
  }

  return {
    async get(userId: string, id: string): Promise<AccountWarmup> {
      const mailbox = await owned(userId, id);
      const platform = await platformOf(mailbox);
      if (platform) return platform.analytics();
      if (!mailbox.warmupDomainId) return none;
      return stateOf(await warmup.get(userId, mailbox.warmupDomainId));
    },

    async set(userId: string, id: string, input: { enabled: boolean; dkimSelector?: string }): Promise<AccountWarmup> {
      const mailbox = await owned(userId, id);
      const platform = await platformOf(mailbox);
      if (platform) return platform.set(input.enabled);
      if (!input.enabled) {
        if (!mailbox.warmupDomainId) return none;
        const view = await warmup.get(userId, mailbox.warmupDomainId);
        if (view.status !== 'WARMING') return stateOf(view);
        return stateOf(await warmup.update(userId, view.id, { status: 'PAUSED' }));
      }
      let domainId = mailbox.warmupDomainId;
      if (!domainId) {
        if (!input.dkimSelector) throw validationError('dkimSelector', 'required to start warming this mailbox');
        if (!mailbox.smtpUrlEncrypted) throw validationError('id', 'this mailbox sends through its platform');
        const parsed = createWarmupBody.safeParse({
          domain: domainOf(mailbox.email),
          dkimSelector: input.dkimSelector,
          smtpUrl: box.open(mailbox.smtpUrlEncrypted),
          fromAddress: mailbox.email,
        });
        if (!parsed.success) {
          const issue = parsed.error.issues[0]!;
          throw validationError(String(issue.path[0] ?? 'dkimSelector'), issue.message);
        }
        const created = await warmup.create(userId, parsed.data);
        domainId = created.id;
        await repo.updateMailbox(mailbox.id, { warmupDomainId: domainId, updatedAt: deps.clock.now() });
      }
      const view = await warmup.get(userId, domainId);
      if (view.status === 'DRAFT') return stateOf(await warmup.start(userId, domainId));
      if (view.status === 'PAUSED' || view.status === 'AUTO_PAUSED')
        return stateOf(await warmup.update(userId, domainId, { status: 'WARMING' }));
      return stateOf(view);
    },
  };
}
