/**
 * Webhook destinations: each batch of leads is POSTed as JSON, signed as the service's webhooks are (Standard
 * Webhooks, docs/webhooks-and-credits.md), through the outbound client (SSRF guard, no redirects followed). The
 * webhook-id is `<pushId>_<part>`, so a batch sent again after a crash can be recognised by the receiver.
 */
import type { Config } from '../../config.ts';
import { createOutboundClient, OutboundError, outboundSettings } from '../../shared/outbound-http.ts';
import { signatureHeader } from '../webhooks/index.ts';
import type { WebhookConfig } from './destinations.schemas.ts';
import { type PushContext, type PushLead, type Target, TargetError } from './destinations.target.ts';

const TIMEOUT_MS = 30_000;
const ATTEMPTS = 3;

type Settings = Pick<Config, 'ALLOW_PRIVATE_NETWORK' | 'SCRAPER_PROXY_URL' | 'SCRAPER_USER_AGENT'>;

export function webhookSender(config: WebhookConfig & { secret: string }, settings: Settings) {
  const client = createOutboundClient(outboundSettings(settings));
  return async (messageId: string, type: string, data: Record<string, unknown>): Promise<void> => {
    let last = '';
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      const sentAt = new Date();
      const body = JSON.stringify({ type, timestamp: sentAt.toISOString(), data });
      try {
        const answer = await client.send({
          url: config.url,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': settings.SCRAPER_USER_AGENT,
            'webhook-id': messageId,
            'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
            'webhook-signature': signatureHeader([config.secret], messageId, sentAt, body),
          },
          body,
          timeoutMs: TIMEOUT_MS,
          keepBytes: 512,
        });
        if (answer.status >= 200 && answer.status < 300) return;
        last = `the endpoint answered ${answer.status}`;
        // A client error will not change on a second try (a 408 or 429 might).
        if (answer.status >= 400 && answer.status < 500 && answer.status !== 408 && answer.status !== 429) break;
      } catch (error) {
        if (!(error instanceof OutboundError)) throw error;
        last = error.message;
        if (error.reason === 'blocked' || error.reason === 'unsupported_url') break;
      }
      if (attempt < ATTEMPTS) await new Promise((r) => setTimeout(r, 500 * attempt));
    }
    throw new TargetError(`Webhook ${config.url}: ${last}`);
  };
}

export function webhookTarget(
  config: WebhookConfig & { secret: string },
  settings: Settings,
  context: PushContext,
): Target<PushLead[]> {
  const send = webhookSender(config, settings);
  return {
    batchSize: 500,
    open: async () => {},
    encode: (leads) => leads,
    write: (leads, part) =>
      send(`${context.pushId}_${part}`, 'destination.push.batch', {
        destinationId: context.destinationId,
        pushId: context.pushId,
        mode: context.mode,
        part,
        leads,
      }),
    close: async () => {},
  };
}
