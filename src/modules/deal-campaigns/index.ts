/**
 * The deal-campaigns module's face (docs/CONVENTIONS.md "A module's face"). Deal campaigns (who to sell to,
 * their rules and sources) are not outreach campaigns (sequences of mail, src/modules/outreach).
 */
export { dealCampaignRoutes } from './deal-campaigns.routes.ts';
export { ownedDealCampaignId } from './deal-campaigns.service.ts';
