import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { disconnectSignal, done, envelope, errorResponses, idParams, ok, successOnly } from '../../shared/http.ts';
import { nextCursor } from '../../shared/pagination.ts';
import {
  createRuleBody,
  executeBody,
  listRulesQuery,
  PREVIEW_MAX_AI_SAMPLE,
  previewBody,
  previewResultView,
  resultsQuery,
  resultView,
  ruleView,
  runView,
  updateRuleBody,
} from './matching.schemas.ts';
import { createMatchingService } from './matching.service.ts';

const SEMANTICS =
  "Conditions name `profile.<field>` (a field of the rule's profile type), `lead.<column>` (firstName, lastName, " +
  'fullName, email, emailDomain, phone, company, jobTitle, status, tags, sourceUrl, createdAt) or ' +
  '`lead.customFields.<key>`. Operators: equals, not_equals, in, not_in, contains, not_contains, gt, gte, lt, lte, ' +
  'exists, not_exists, regex (PostgreSQL syntax). Text compares ignore case unless `caseSensitive`; a number value ' +
  'compares numerically (with numbers and numeric text); gt…lte take a number or an ISO date (no offset = UTC). ' +
  'Array values (tags, array fields) match when any element does; each `not_*` operator is the exact negation of its ' +
  'positive form, so it holds when the value is absent (e.g. a profile without a lead). exists: not null, "", [] or ' +
  '{}. FILTER: the condition group passes (matchScore 100) or not (0). SCORED: matchScore = round(100 × weights of ' +
  'the criteria that hold ÷ all weights); matched when ≥ threshold (default 50). AI: the model answers {match, ' +
  'score, reasoning} per profile; matched when it says match (and score ≥ threshold when one is set).';

export const matchingRoutes: RouteModule = (app, deps) => {
  const matching = createMatchingService(deps);
  const tags = ['Matching Engine'];
  const read = { scope: 'matching:read' };
  const write = { scope: 'matching:write' };
  const one = envelope(z.object({ rule: ruleView }));

  app.get('/api/matching/rules', {
    config: read,
    schema: {
      tags,
      summary: 'List matching rules, newest first',
      description:
        'Filters: `type`, `profileTypeId`. Cursor pagination (`limit`, `cursor` → `nextCursor`). Each ' +
        'rule carries its latest run.',
      querystring: listRulesQuery,
      response: { 200: envelope(z.object({ rules: z.array(ruleView), nextCursor })), ...errorResponses(400, 401) },
    },
    handler: async (request) => ok(await matching.list(principalOf(request).userId, request.query)),
  });

  app.post('/api/matching/rules', {
    config: write,
    schema: {
      tags,
      summary: 'Create a matching rule (FILTER, SCORED or AI)',
      description:
        `${SEMANTICS} \`profileTypeId\` must be yours (404 naming it). ` +
        'A profile field that is not on the type, an unknown lead column, ' +
        'a value that does not fit its operator or a regex PostgreSQL cannot compile is a 400 naming the field (e.g. ' +
        '`conditions.conditions.1.field`).',
      body: createRuleBody,
      response: { 201: one, ...errorResponses(400, 401, 404) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ rule: await matching.create(principalOf(request).userId, request.body) });
    },
  });

  app.get('/api/matching/rules/:id', {
    config: read,
    schema: {
      tags,
      summary: 'One matching rule, with its latest run',
      params: idParams,
      response: { 200: one, ...errorResponses(401, 404) },
    },
    handler: async (request) => ok({ rule: await matching.get(principalOf(request).userId, request.params.id) }),
  });

  app.patch('/api/matching/rules/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Update a matching rule',
      description:
        'name and description change freely. `conditions`, `criteria`, `aiPrompt` replace that part of a rule of the ' +
        "same type; `type` switches to another type and then needs that type's whole definition. A definition " +
        'change deletes the stored results (they no longer describe the rule); a `threshold` change alone re-derives ' +
        '`matched` of the stored results. Either is a 409 CONFLICT while a run of the rule is PENDING or RUNNING. An ' +
        'empty body changes nothing.',
      params: idParams,
      body: updateRuleBody,
      response: { 200: one, ...errorResponses(400, 401, 404, 409) },
    },
    handler: async (request) =>
      ok({ rule: await matching.update(principalOf(request).userId, request.params.id, request.body) }),
  });

  app.delete('/api/matching/rules/:id', {
    config: write,
    schema: {
      tags,
      summary: 'Delete a matching rule with its runs and results',
      description: 'A run in progress stops at its next chunk.',
      params: idParams,
      response: { 200: successOnly, ...errorResponses(401, 404) },
    },
    handler: async (request) => {
      await matching.remove(principalOf(request).userId, request.params.id);
      return done('Matching rule deleted');
    },
  });

  app.post('/api/matching/preview', {
    config: read,
    schema: {
      tags,
      summary: 'Try a rule on a sample of profiles without storing anything',
      description:
        'Give a saved rule (`ruleId`) or an unsaved one (`rule`: {profileTypeId, type, …definition}, checked like ' +
        'creation, fields named `rule.…`). The sample is the newest `sampleSize` profiles of the type, or exactly ' +
        "`profileIds` (yours, of that type: another user's or unknown id is a 404 naming `profileIds.<i>`). " +
        `AI rules evaluate at most ${PREVIEW_MAX_AI_SAMPLE} profiles through the ` +
        'model (503 AI_NOT_CONFIGURED without one; 502 AI_PROVIDER_ERROR when every call failed; otherwise a failed ' +
        "call shows in that result's `error`). FILTER and SCORED run the same SQL as execute.",
      body: previewBody,
      response: {
        200: envelope(
          z.object({
            type: z.enum(['FILTER', 'SCORED', 'AI']),
            results: z.array(previewResultView),
            summary: z.object({ evaluated: z.number().int(), matched: z.number().int() }),
          }),
        ),
        ...errorResponses(400, 401, 404, 502, 503),
      },
    },
    handler: async (request, reply) => {
      // The client going away cancels the model calls still waiting.
      return ok(await matching.preview(principalOf(request).userId, request.body, disconnectSignal(reply)));
    },
  });

  app.post('/api/matching/execute', {
    config: write,
    schema: {
      tags,
      summary: 'Run a rule over every profile of its type, storing results',
      description:
        'Answers 202 with the new run (PENDING); a background job evaluates the profiles (FILTER and SCORED as ' +
        'set-based SQL in chunks, AI through the model with bounded concurrency), updating `processed`, `matched`, ' +
        '`failed` and `progress` as it goes, and ends COMPLETED or FAILED. Follow it with GET ' +
        '/api/matching/rules/{id} (lastRun) or GET /api/matching/results. Results of an earlier run are replaced; ' +
        'profiles gone since are dropped. When the rule already has a PENDING or RUNNING run, that run is answered ' +
        '(200, `started: false`) instead of starting a second one. An AI rule without an AI provider is a 503 ' +
        'AI_NOT_CONFIGURED.',
      body: executeBody,
      response: {
        200: envelope(z.object({ run: runView, started: z.literal(false) })),
        202: envelope(z.object({ run: runView, started: z.literal(true) })),
        ...errorResponses(400, 401, 404, 503),
      },
    },
    handler: async (request, reply) => {
      const { run, started } = await matching.execute(principalOf(request).userId, request.body.ruleId);
      reply.code(started ? 202 : 200);
      return ok({ run, started }) as never;
    },
  });

  app.get('/api/matching/results', {
    config: read,
    schema: {
      tags,
      summary: 'Stored results of a rule, best first',
      description:
        'Ordered by matchScore (highest first, results without a score last), then id. Filters: `minScore`, ' +
        "`maxScore` (0–100), `matched`. Cursor pagination (`limit`, `cursor` → `nextCursor`). `run` is the rule's " +
        'latest run. `error` is set on profiles the AI provider could not evaluate. `ruleId` must be yours (404 ' +
        'naming it).',
      querystring: resultsQuery,
      response: {
        200: envelope(
          z.object({
            rule: z.object({ id: z.string(), name: z.string(), type: z.enum(['FILTER', 'SCORED', 'AI']) }),
            run: runView.nullable(),
            results: z.array(resultView),
            nextCursor,
          }),
        ),
        ...errorResponses(400, 401, 404),
      },
    },
    handler: async (request) => ok(await matching.results(principalOf(request).userId, request.query)),
  });
};
