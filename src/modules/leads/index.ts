/**
 * The leads module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * workers may use of it.
 */
export { createLeadValidationService, type EmailValidationJob } from './lead-validation.service.ts';
export { domainsFirstSeen, leadsForTrapCheck, markLeadsHardBounced, visibilityOfEmails } from './leads.bounces.ts';
export {
  type LeadToSend,
  leadsForOutreach,
  leadsForSending,
  mergeLeadCustomFields,
  moveLeadsForOutreach,
  type OutreachLead,
} from './leads.outreach.ts';
export { leadRoutes } from './leads.routes.ts';
export { bulkUpdateBody, LEAD_LIMITS, listLeadsQuery } from './leads.schemas.ts';
export { createLeadCopyOut, createLeadService, distinctIds, type LeadCopyOut } from './leads.service.ts';
export { createLeadWriter, type LeadWriter } from './leads.writer.ts';
