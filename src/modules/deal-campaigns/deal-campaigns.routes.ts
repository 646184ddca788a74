import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { AppError } from '../../shared/errors.ts';
import { done, envelope, errorResponses, idParams, ok, successOnly } from '../../shared/http.ts';
import { nextCursor } from '../../shared/pagination.ts';
import {
  createDealCampaignBody,
  dealCampaignView,
  discoverSourcesBody,
  discoverSourcesView,
  listDealCampaignsQuery,
  rankedAccountsQuery,
  rankedAccountsView,
  suggestMatchingBody,
  suggestMatchingView,
  updateDealCampaignBody,
} from './deal-campaigns.schemas.ts';
import { createDealCampaignService } from './deal-campaigns.service.ts';

/** Aborts when the client goes away before the answer is sent, so a pending AI call stops costing tokens. */
function disconnectSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished)
      controller.abort(new AppError('SERVICE_UNAVAILABLE', 'The client closed the connection'));
  });
  return controller.signal;
}

const REFERENCES =
  'Every referenced id must be yours: `projectId`, `profileTypeId`, `sourceIds.<i>`, `ruleIds.<i>` / ' +
  '`rules.<i>.ruleId` otherwise answer 404 naming that field. When the campaign has a profile type, every rule must ' +
  "be of that type (400 naming the rule's field). Give rules either as `ruleIds` (weight 1 each) or as `rules: " +
  '[{ruleId, weight 1–100}]`. All or nothing: one transaction.';

export const dealCampaignRoutes: RouteModule = (app, deps) => {
  const campaigns = createDealCampaignService(deps);
  const tags = ['Deal Campaigns'];
  const one = envelope(z.object({ campaign: dealCampaignView }));
  const read = { scope: 'campaigns:read' };
  const write = { scope: 'campaigns:write' };

  app.get('/api/campaigns', {
    config: read,
    schema: {
      tags,
      summary: 'List deal campaigns, newest first',
      description: 'Filters: `status`, `projectId`. Cursor pagination (`limit`, `cursor` → `nextCursor`).',
      querystring: listDealCampaignsQuery,
      response: {
        200: envelope(z.object({ campaigns: z.array(dealCampaignView), nextCursor })),
        ...errorResponses(400, 401),
      },
    },
    handler: async (request) => ok(await campaigns.list(principalOf(request).userId, request.query)),
  });

  app.post('/api/campaigns', {
    config: write,
    schema: {
      tags,
      summary: 'Create a deal campaign',
      description:
        'A campaign describes the ideal customer (`target`: industries, locations, companySize {min, max} in ' +
        'employees, titles, keywords) and ties ' +
        `together sources, a profile type and weighted matching rules. \`status\` defaults to DRAFT. ${REFERENCES}`,
      body: createDealCampaignBody,
      response: { 201: one, ...errorResponses(400, 401, 404) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ campaign: await campaigns.create(principalOf(request).userId, request.body) });
    },
  });

  app.get('/api/campaigns/:id', {
    config: read,
    schema: {
      tags,
      summary: 'One deal campaign',
      params: idParams,
      response: { 200: one, ...errorResponses(401, 404) },
    },
    handler: async (request) => ok({ campaign: await campaigns.get(principalOf(request).userId, request.params.id) }),
  });

  app.patch('/api/campaigns/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Update a deal campaign',
      description:
        'Any field of creation. `target` keys given replace those keys (the others stay); `sourceIds` and ' +
        '`ruleIds`/`rules` replace the whole set. Changing `profileTypeId` while keeping rules of another type is a ' +
        '400 naming profileTypeId. ' +
        REFERENCES,
      params: idParams,
      body: updateDealCampaignBody,
      response: { 200: one, ...errorResponses(400, 401, 404) },
    },
    handler: async (request) =>
      ok({ campaign: await campaigns.update(principalOf(request).userId, request.params.id, request.body) }),
  });

  app.delete('/api/campaigns/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Delete a deal campaign (permanent)',
      description:
        'The campaign and its links to sources and rules are deleted for good; the sources and matching ' +
        'rules themselves stay.',
      params: idParams,
      response: { 200: successOnly, ...errorResponses(401, 404) },
    },
    handler: async (request) => {
      await campaigns.remove(principalOf(request).userId, request.params.id);
      return done('Campaign deleted');
    },
  });

  app.post('/api/campaigns/:id/discover-sources', {
    config: { scope: 'campaigns:write' },
    schema: {
      tags,
      summary: "Discover sources for the campaign's target (AI + web search)",
      description:
        'Builds a web-search query from the target (industries, titles, keywords, locations; `query` in the answer) ' +
        'and lets the AI model choose up to `count` (1–20, default 10) sources among the search results, so every ' +
        'URL comes from the search engine (`method` `ai+search`; if the search provider fails the model proposes the ' +
        'URLs itself and `method` is `ai`). Needs both providers: 503 AI_NOT_CONFIGURED without ' +
        'AI_BASE_URL/AI_MODEL, 503 SEARCH_NOT_CONFIGURED without SEARCH_API_KEY (the keyless, catalogue-based ' +
        'suggestions are `POST /api/sources/discover`). With `autoSave` the sources are created as DRAFT sources in ' +
        "the campaign's project (with its profile type) and linked to the campaign, in one transaction; each answer " +
        'item then carries `id` and `status`. 502 AI_PROVIDER_ERROR when the AI provider fails after its retries.',
      params: idParams,
      body: discoverSourcesBody,
      response: { 200: envelope(discoverSourcesView), ...errorResponses(400, 401, 404, 502, 503) },
    },
    handler: async (request, reply) =>
      ok(
        await campaigns.discoverSources(
          principalOf(request).userId,
          request.params.id,
          request.body ?? { count: 10, autoSave: false },
          disconnectSignal(reply),
        ),
      ),
  });

  app.post('/api/campaigns/:id/suggest-matching', {
    config: { scope: 'campaigns:write' },
    schema: {
      tags,
      summary: "Propose matching rules from the campaign's target",
      description:
        "Proposes FILTER, SCORED and AI rules (or the `types` asked for) over the campaign's profile type; a " +
        'campaign without one needs `profileTypeId` in the body (400 naming profileTypeId otherwise). Every proposal ' +
        'parses under the rule language and names only fields of the profile type or lead columns. With an AI ' +
        'provider the model proposes (`method` `ai`); its rules are checked, small mistakes repaired, unusable ' +
        'conditions or rules dropped, and a type it got wrong is filled with the rule-based proposal; `adjustments` ' +
        'says what happened and each rule says who proposed it. Without AI the proposal is rule-based (`method` ' +
        '`rule-based`): titles → lead.jobTitle contains, locations / industries / company size → profile fields ' +
        'found by their names (location, city, country…; industry, sector…; employees, headcount…), keywords → ' +
        'contains over text fields, SCORED weights round(base / √alternatives) (more specific criteria weigh more). ' +
        'With `save` the rules are created and linked to the campaign with weight 1 (and a body profileTypeId is set ' +
        'on the campaign), in one transaction.',
      params: idParams,
      body: suggestMatchingBody,
      response: { 200: envelope(suggestMatchingView), ...errorResponses(400, 401, 404, 502) },
    },
    handler: async (request, reply) =>
      ok(
        await campaigns.suggestMatching(
          principalOf(request).userId,
          request.params.id,
          request.body ?? { save: false },
          disconnectSignal(reply),
        ),
      ),
  });

  app.get('/api/campaigns/:id/ranked-accounts', {
    config: read,
    schema: {
      tags,
      summary: 'Accounts ranked by fit score',
      description:
        'Accounts (leads grouped by email domain, else normalized company) scored from the matching results of the ' +
        "campaign's rules, over the leads of the campaign's sources when it has any (all your leads otherwise). " +
        "Per rule the best matchScore among the account's profiles counts; `fitScore` = round(Σ best × weight ÷ Σ " +
        "weight of all the campaign's rules): a rule with no result for the account counts 0. `reasons` gives, per " +
        "rule, that best score, how many profiles matched and why (the model's reasoning for AI rules, the criteria " +
        'that held for SCORED ones). Best first (ties by account key); keyset pagination with `cursor`; `minScore` ' +
        'filters. `rulesWithoutResults` lists rules never executed. A campaign without rules: 400 NO_RULES.',
      params: idParams,
      querystring: rankedAccountsQuery,
      response: { 200: envelope(rankedAccountsView), ...errorResponses(400, 401, 404) },
    },
    handler: async (request) =>
      ok(await campaigns.rankedAccounts(principalOf(request).userId, request.params.id, request.query)),
  });
};
