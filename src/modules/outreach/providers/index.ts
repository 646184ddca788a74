import type { Config } from '../../../config.ts';
import type { OutreachProvider } from '../../../db/schema/index.ts';
import { type PlatformClient, PlatformError } from './platform.ts';

export type { PlatformClient } from './platform.ts';
export { PlatformError } from './platform.ts';

/** The client of a connected platform (README "Outreach", Platforms). */
export function platformClient(
  provider: Exclude<OutreachProvider, 'smtp'>,
  _apiKey: string,
  _config: Pick<Config, 'INSTANTLY_API_URL' | 'SMARTLEAD_API_URL' | 'ALLOW_PRIVATE_NETWORK'>,
): PlatformClient {
  // Replaced by the instantly and smartlead clients (feat/outreach-platforms) before any route uses it.
  throw new PlatformError(`${provider} is not available yet`);
}
