import { createHmac } from 'node:crypto';
import type { AppDeps } from '../../../deps.ts';
import { type createSecretBox, safeEqual, secretKeyMaterial } from '../../../shared/crypto.ts';
import { AppError } from '../../../shared/errors.ts';
import { escapeHtml } from '../../../shared/text.ts';
import type { OutreachLead } from '../../leads/index.ts';
import { leadTemplateVars, renderTemplate } from '../campaigns/templates.ts';
import type { ConnectionRow, MailboxRow } from '../connections/connections.repository.ts';
import { platformClient } from './index.ts';
import { type PlatformClient, PlatformError, type PlatformLead } from './platform.ts';

type Deps = Pick<AppDeps, 'config'>;
export type PlatformProvider = 'instantly' | 'smartlead';
type SecretBox = ReturnType<typeof createSecretBox>;

export const isPlatform = (provider: ConnectionRow['provider']): provider is PlatformProvider => provider !== 'smtp';

/** The client of a platform connection, its key unsealed for this call only. */
export function clientOf(deps: Deps, box: SecretBox, connection: ConnectionRow): PlatformClient {
  if (!isPlatform(connection.provider) || !connection.apiKeyEncrypted)
    throw new Error(`connection ${connection.id} is not a platform connection`);
  return platformClient(connection.provider, box.open(connection.apiKeyEncrypted), deps);
}

/**
 * A platform's failure as the API's error: at connect time 400 CONNECTION_FAILED naming the API key (the
 * platform refused it), afterwards 502 PLATFORM_ERROR. The platform's own reason is kept; the key never is.
 */
export function platformFailure(err: unknown, provider: PlatformProvider, field: string, connecting = false): never {
  if (!(err instanceof PlatformError)) throw err;
  const reason = `${provider}${err.status ? ` answered ${err.status}` : ''}: ${err.message}`.slice(0, 500);
  throw new AppError(connecting ? 'CONNECTION_FAILED' : 'PLATFORM_ERROR', reason, {
    details: [{ field, message: reason }],
  });
}

/**
 * The inbound webhook address of a platform connection (docs/outreach.md "Outreach", Platforms). The platforms sign nothing,
 * so the address carries a token: an HMAC of the connection id under SECRET_KEY, recomputed (never stored) and
 * compared in constant time when an event arrives.
 */
export function platformWebhookAddress(deps: Deps, provider: PlatformProvider, connectionId: string) {
  const base = deps.config.PUBLIC_URL?.replace(/\/+$/, '');
  const path = `/api/webhooks/inbound/${provider}?connection=${connectionId}&token=${webhookToken(deps, connectionId)}`;
  return { url: base ? `${base}${path}` : null, path };
}

const webhookToken = (deps: Deps, connectionId: string) =>
  createHmac('sha256', secretKeyMaterial(deps.config)).update(`platform-webhook:${connectionId}`).digest('base64url');

export const webhookTokenMatches = (deps: Deps, connectionId: string, token: string): boolean =>
  safeEqual(token, webhookToken(deps, connectionId));

/**
 * Steps as a platform receives them: the platform's variables `{{quarry_subject_N}}` / `{{quarry_body_N}}`, which
 * each lead carries already rendered (Quarry's variables, fallbacks and spintax mean the same on every provider).
 * A follow-up with an empty subject stays empty, so the platform sends it in the first mail's thread.
 */
export function platformSteps(steps: Array<{ subject: string; body: string; delayDays: number }>) {
  return steps.map((s, i) => ({
    subject: s.subject.trim() === '' ? '' : `{{${stepField('subject', i)}}}`,
    body: `{{${stepField('body', i)}}}`,
    delayDays: s.delayDays,
  }));
}

const stepField = (part: 'subject' | 'body', index: number) => `quarry_${part}_${index + 1}`;

/** A lead for the platform, with each step rendered for it (bodies as HTML: both platforms send HTML bodies). */
export function platformLead(
  lead: OutreachLead,
  email: string,
  steps: Array<{ subject: string; body: string }>,
  random: () => number = Math.random,
): PlatformLead {
  const vars = leadTemplateVars(lead);
  const customFields: Record<string, string> = {};
  steps.forEach((step, i) => {
    if (step.subject.trim() !== '')
      customFields[stepField('subject', i)] = renderTemplate(step.subject, vars, random).trim();
    customFields[stepField('body', i)] = escapeHtml(renderTemplate(step.body, vars, random)).replace(/\r?\n/g, '<br>');
  });
  return { email, firstName: lead.firstName, lastName: lead.lastName, company: lead.company, customFields };
}

/** What a platform account looks like to the calls that name one. */
export const accountRef = (mailbox: MailboxRow) => ({ externalId: mailbox.externalId ?? '', email: mailbox.email });
