/** The prompt "qualify these leads for this campaign": the tools wired into one pass a model can follow. */
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

export const qualifyLeadsPrompt = {
  name: 'qualify_leads',
  title: 'Qualify leads for a campaign',
  description:
    'Checks each lead (its fields and provenance, its email), compares its company with the accounts a deal ' +
    'campaign ranks, marks it QUALIFIED or DISQUALIFIED with tags saying why, and optionally enrolls the qualified ' +
    'ones in an outreach campaign.',
  arguments: [
    { name: 'leadIds', description: 'Lead ids, separated by commas', required: true },
    { name: 'campaignId', description: 'The deal campaign that says who to sell to', required: true },
    {
      name: 'outreachCampaignId',
      description: 'An outreach campaign to enroll the qualified leads in',
      required: false,
    },
  ],
};

export function qualifyLeadsPromptMessages(args: Record<string, string>) {
  const leadIds = (args.leadIds ?? '')
    .split(',')
    .map((id) => id.trim())
    .filter(Boolean);
  if (!leadIds.length) throw new McpError(ErrorCode.InvalidParams, 'leadIds: give at least one lead id');
  if (!args.campaignId) throw new McpError(ErrorCode.InvalidParams, 'campaignId is required');
  const enroll = args.outreachCampaignId
    ? `5. Enroll the QUALIFIED leads with enroll_leads (id ${args.outreachCampaignId}, their leadIds) and report what ` +
      'it enrolled and skipped.'
    : '5. Do not enroll anyone: no outreach campaign was given.';
  const text = [
    `Qualify these leads for the deal campaign ${args.campaignId}: ${leadIds.join(', ')}.`,
    '',
    '1. Read each lead with get_lead (its fields and where each came from).',
    '2. Validate their emails with validate_emails (leadIds) unless a lead is already VALID or INVALID.',
    `3. Fetch the campaign's ranked accounts with rank_accounts (id ${args.campaignId}); a lead whose company is ` +
      'among the well-ranked accounts and whose email is not INVALID qualifies.',
    '4. Mark each lead with update_leads: status QUALIFIED or DISQUALIFIED, and a tag saying why ' +
      '(e.g. "icp-match", "invalid-email", "no-matching-account").',
    enroll,
    '',
    'Answer with a table: lead, company, decision, reason.',
  ].join('\n');
  return {
    description: qualifyLeadsPrompt.description,
    messages: [{ role: 'user' as const, content: { type: 'text' as const, text } }],
  };
}
