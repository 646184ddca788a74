import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { disconnectSignal, envelope, errorResponses, ok } from '../../shared/http.ts';
import { nextCursor } from '../../shared/pagination.ts';
import { createAccountCommonalities } from './accounts.commonalities.ts';
import {
  accountDetailView,
  accountParams,
  accountView,
  commonalitiesView,
  listAccountsQuery,
  updateAccountBody,
} from './accounts.schemas.ts';
import { createAccountService } from './accounts.service.ts';

const GROUPING =
  'Accounts are grouped from your leads, exact at every read: a lead belongs to the account of its email ' +
  'domain unless that is a free-mail provider (gmail.com…), else to the account of its normalized company ' +
  'name (case, punctuation and legal suffixes such as Inc or GmbH ignored); a lead with neither belongs to ' +
  'none. The id is stable. An account disappears when its last lead is deleted.';

export const accountRoutes: RouteModule = (app, deps) => {
  const accounts = createAccountService(deps);
  const commonalities = createAccountCommonalities(deps);
  const tags = ['Accounts'];
  const one = envelope(z.object({ account: accountDetailView }));
  const read = { scope: 'accounts:read' };
  const write = { scope: 'accounts:write' };

  app.get('/api/accounts', {
    config: read,
    schema: {
      tags,
      summary: 'List accounts (companies) computed from your leads',
      description:
        `${GROUPING} Filters: \`q\` (name or domain contains, case-insensitive), \`tag\`, \`minLeads\`. ` +
        'Sorted by `sort`; cursor pagination (`limit`, `cursor` → `nextCursor`); a cursor is only valid with the ' +
        'sort it came from (else 400 naming `cursor`).',
      querystring: listAccountsQuery,
      response: {
        200: envelope(z.object({ accounts: z.array(accountView), nextCursor })),
        ...errorResponses(400, 401),
      },
    },
    handler: async (request) => ok(await accounts.list(principalOf(request).userId, request.query)),
  });

  app.get('/api/accounts/:accountId', {
    config: read,
    schema: {
      tags,
      summary: 'One account with its latest leads',
      description: `${GROUPING} 404 when none of your leads belongs to the account.`,
      params: accountParams,
      response: { 200: one, ...errorResponses(401, 404) },
    },
    handler: async (request) =>
      ok({ account: await accounts.get(principalOf(request).userId, request.params.accountId) }),
  });

  app.patch('/api/accounts/:accountId', {
    config: write,
    schema: {
      tags,
      summary: 'Set notes and tags of an account',
      description:
        'Stored beside the computed account (they stay when leads change, and show again if the account comes back). ' +
        '`tags` replaces the tags; `notes` null or "" clears them; an empty body changes nothing. 404 when none of ' +
        'your leads belongs to the account.',
      params: accountParams,
      body: updateAccountBody,
      response: { 200: one, ...errorResponses(400, 401, 404) },
    },
    handler: async (request) =>
      ok({ account: await accounts.update(principalOf(request).userId, request.params.accountId, request.body) }),
  });

  app.get('/api/accounts/:accountId/commonalities', {
    config: read,
    schema: {
      tags,
      summary: "What the account's leads have in common (AI, with web search)",
      description:
        "The AI model reads the account's leads (job titles, statuses, custom fields, profile data; " +
        'no names or emails) and the top ' +
        '5 web search results for the company, and answers shared `traits` and `companyFacts`; a fact citing a URL ' +
        'that is not one of ' +
        'the search results (`sources`) is dropped. Needs web search (503 SEARCH_NOT_CONFIGURED without ' +
        'SEARCH_API_KEY) and an AI ' +
        'provider (503 AI_NOT_CONFIGURED), both checked before anything is sent. 502 AI_PROVIDER_ERROR / ' +
        'SEARCH_PROVIDER_ERROR when a provider fails.',
      params: accountParams,
      response: { 200: envelope(commonalitiesView), ...errorResponses(401, 404, 502, 503) },
    },
    handler: async (request, reply) =>
      ok(await commonalities.analyze(principalOf(request).userId, request.params.accountId, disconnectSignal(reply))),
  });
};
