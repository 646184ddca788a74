import { z } from 'zod';
import type { RouteModule } from '../../../route-module.ts';
import { principalOf } from '../../../shared/auth.ts';
import { envelope, errorResponses, idParams, ok } from '../../../shared/http.ts';
import { nextCursor } from '../../../shared/pagination.ts';
import { OUTREACH_TAGS, outreachRead, outreachWrite } from '../connections/connections.routes.ts';
import {
  analyticsView,
  campaignStatusBody,
  createOutreachCampaignBody,
  enrollBody,
  enrollResult,
  listOutreachCampaignsQuery,
  outreachCampaignView,
} from './outreach-campaigns.schemas.ts';
import { createOutreachCampaignService } from './outreach-campaigns.service.ts';
import { TEMPLATE_VARIABLES } from './templates.ts';

const one = envelope(z.object({ campaign: outreachCampaignView }));

const TEMPLATES =
  `Templates: \`{{variable}}\` (${TEMPLATE_VARIABLES.join(', ')}, or \`custom.<field>\` of the lead), ` +
  '`{{variable|fallback}}`, spintax `{Hi|Hello}` (one option at random per mail), `\\{` and `\\}` for literal ' +
  'braces. A template with an unknown variable or unbalanced braces is a 400 naming the step, the field and ' +
  'the line and column.';

export const outreachCampaignRoutes: RouteModule = (app, deps) => {
  const campaigns = createOutreachCampaignService(deps);
  const tags = OUTREACH_TAGS;

  app.post('/api/outreach/campaigns', {
    config: outreachWrite,
    schema: {
      tags,
      summary: 'Create a campaign (DRAFT): a sequence of 1–10 steps, a sending window, limits, mailboxes',
      description:
        `${TEMPLATES} Each follow-up goes \`delayDays\` after the previous mail, from the mailbox of the lead's ` +
        'first mail, in its thread; an empty follow-up subject is "Re: <first subject>". Mails go out inside ' +
        '`window` (local days and hours in its time zone), at most `dailyLimit` per mailbox per day from this ' +
        'campaign (and each mailbox’s own daily limit over all campaigns), with a random gap of ' +
        '`minGapSeconds`–`maxGapSeconds` between two mails of one mailbox; mailboxes are rotated.',
      body: createOutreachCampaignBody,
      response: { 201: one, ...errorResponses(400, 401, 403, 404) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ campaign: await campaigns.create(principalOf(request).userId, request.body) });
    },
  });

  app.get('/api/outreach/campaigns', {
    config: outreachRead,
    schema: {
      tags,
      summary: 'Your outreach campaigns, newest first; `connectionId` narrows to one connection',
      querystring: listOutreachCampaignsQuery,
      response: {
        200: envelope(z.object({ campaigns: z.array(outreachCampaignView), nextCursor })),
        ...errorResponses(400, 401, 404),
      },
    },
    handler: async (request) => ok(await campaigns.list(principalOf(request).userId, request.query)),
  });

  app.get('/api/outreach/campaigns/:id', {
    config: outreachRead,
    schema: {
      tags,
      summary: 'A campaign with its steps, state and enrolled leads by state',
      params: idParams,
      response: { 200: one, ...errorResponses(401, 404) },
    },
    handler: async (request) => ok({ campaign: await campaigns.get(principalOf(request).userId, request.params.id) }),
  });

  app.post('/api/outreach/campaigns/:id/status', {
    config: outreachWrite,
    schema: {
      tags,
      summary: 'Start, pause or resume sending',
      description:
        '`active`: DRAFT or PAUSED → ACTIVE; `paused`: ACTIVE → PAUSED (mails already handed to SMTP are not ' +
        'recalled). Any other move is `400 INVALID_STATE`.',
      params: idParams,
      body: campaignStatusBody,
      response: { 200: one, ...errorResponses(400, 401, 403, 404) },
    },
    handler: async (request) =>
      ok({
        campaign: await campaigns.setStatus(principalOf(request).userId, request.params.id, request.body.status),
      }),
  });

  app.post('/api/outreach/campaigns/:id/leads', {
    config: outreachWrite,
    schema: {
      tags,
      summary: 'Enroll up to 1000 leads; those the gates stop are counted by reason',
      description:
        'Gates, in this order: `not_found` (not your lead), `duplicate` (listed twice or already enrolled), ' +
        '`unsubscribed` (lead status UNSUBSCRIBED), `invalid_email` (none, malformed, or validated invalid), ' +
        '`suppressed` (the address, its domain or a parent domain is on your suppression list), `unvalidated` ' +
        '(validate the email first: POST /api/leads/validate-bulk), `missing_variable` (a template needs a value ' +
        'without fallback the lead lacks; `detail` names it). The others are enrolled with their first step due ' +
        'at once (the sequencer waits for the window).',
      params: idParams,
      body: enrollBody,
      response: { 200: envelope(enrollResult), ...errorResponses(400, 401, 403, 404) },
    },
    handler: async (request) =>
      ok(await campaigns.enroll(principalOf(request).userId, request.params.id, request.body.leadIds)),
  });

  app.get('/api/outreach/campaigns/:id/analytics', {
    config: outreachRead,
    schema: {
      tags,
      summary: 'Sent, opened, replied, bounced, unsubscribed: in total, per step and per mailbox',
      description:
        '`sent` counts mails the mail server accepted (and those whose answer was lost in a crash, never sent ' +
        'again); `opened` mails whose tracking image was loaded (campaigns with `trackOpens`); `replied` leads ' +
        'who answered a mail (auto-replies not counted); `bounced` bounces traced to a mail; `unsubscribed` ' +
        'unsubscribes through a mail’s link. Rates are ÷ sent, null before the first mail.',
      params: idParams,
      response: { 200: envelope(analyticsView), ...errorResponses(401, 404) },
    },
    handler: async (request) => ok(await campaigns.analytics(principalOf(request).userId, request.params.id)),
  });
};
