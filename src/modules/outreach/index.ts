/**
 * The outreach module's face (docs/outreach.md): what the app, the workers and other modules may use. Its rooms:
 * connections/ (accounts and mailboxes), campaigns/ (outreach campaigns and their enrollments), sequencer/ (sending),
 * inbox/ (replies and bounces read over IMAP), emails/ (one-off mails and the inbox view), unsubscribe/ (the public
 * links), providers/ (third-party platforms), messages/ (the mail records).
 */
export { stopSequencesOf } from './campaigns/enrollments.service.ts';
export { outreachCampaignRoutes } from './campaigns/outreach-campaigns.routes.ts';
export { outreachConnectionRoutes } from './connections/connections.routes.ts';
export { outreachEmailRoutes } from './emails/emails.routes.ts';
export { createInboxReader } from './inbox/inbox.reader.ts';
export { createInboxWatcher } from './inbox/inbox.watcher.ts';
export { ownedOutreachCampaign, sendsByCampaign, sendsByRecipientDomain } from './messages/sends.ts';
export { platformWebhookParser } from './providers/index.ts';
export { createPlatformEventService } from './providers/platform.events.ts';
export { PlatformError, type PlatformWebhookEvent } from './providers/platform.ts';
export { createSequencer } from './sequencer/sequencer.ts';
export { outreachUnsubscribeRoutes } from './unsubscribe/unsubscribe.routes.ts';
