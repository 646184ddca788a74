import type { Config } from '../../../config.ts';
import { sharedGuardedDispatcher } from '../../../shared/ssrf.ts';
import { createInstantlyClient, parseInstantlyWebhook } from './instantly.ts';
import type { PlatformClient, PlatformWebhookParser } from './platform.ts';
import { createSmartleadClient, parseSmartleadWebhook } from './smartlead.ts';

export type PlatformProvider = 'instantly' | 'smartlead';

/** The client of a connected platform; its calls go through the SSRF guard like any outbound request. */
export function platformClient(
  provider: PlatformProvider,
  apiKey: string,
  deps: { config: Pick<Config, 'INSTANTLY_API_URL' | 'SMARTLEAD_API_URL' | 'ALLOW_PRIVATE_NETWORK'> },
): PlatformClient {
  const dispatcher = sharedGuardedDispatcher(deps.config.ALLOW_PRIVATE_NETWORK);
  return provider === 'instantly'
    ? createInstantlyClient({ baseUrl: deps.config.INSTANTLY_API_URL, apiKey, dispatcher })
    : createSmartleadClient({ baseUrl: deps.config.SMARTLEAD_API_URL, apiKey, dispatcher });
}

export function platformWebhookParser(provider: PlatformProvider): PlatformWebhookParser {
  return provider === 'instantly' ? parseInstantlyWebhook : parseSmartleadWebhook;
}
