/**
 * The deal-campaigns module's face (docs/CONVENTIONS.md "A module's face"). Deal campaigns (who to sell to,
 * their rules and sources) are not outreach campaigns (sequences of mail, src/modules/outreach).
 */
export { campaignRoutes } from './campaigns.routes.ts';
export { ownedDealCampaignId } from './campaigns.service.ts';
