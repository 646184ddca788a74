import { z } from 'zod';
import type { RouteModule } from '../../../route-module.ts';
import { principalOf } from '../../../shared/auth.ts';
import { done, envelope, errorResponses, idParams, ok, successOnly } from '../../../shared/http.ts';
import { nextCursor } from '../../../shared/pagination.ts';
import { warmupDomainView } from '../../warmup/index.ts';
import { createAccountWarmupService } from './accounts.warmup.ts';
import {
  accountTestBody,
  accountTestView,
  accountWarmupBody,
  connectionView,
  createConnectionBody,
  listAccountsQuery,
  listConnectionsQuery,
  mailboxView,
} from './connections.schemas.ts';
import { createConnectionService } from './connections.service.ts';

export const OUTREACH_TAGS = ['Outreach'];
export const outreachRead = { scope: 'outreach:read' };
export const outreachWrite = { scope: 'outreach:write' };

export const outreachConnectionRoutes: RouteModule = (app, deps) => {
  const connections = createConnectionService(deps);
  const accountWarmup = createAccountWarmupService(deps);
  const warmupState = envelope(
    z.object({
      enabled: z.boolean().describe('The mailbox is warming now'),
      warmupDomain: warmupDomainView
        .nullable()
        .describe('`smtp`: its domain in Warmup domains: day, target, sent, rates; null on platforms'),
      platform: z
        .object({
          email: z.string(),
          enabled: z.boolean().nullable(),
          sent: z.number().int(),
          landedInbox: z.number().int(),
          landedSpam: z.number().int(),
          received: z.number().int(),
          healthScore: z.number().nullable().describe('The platform’s own score, 0–100, when it gives one'),
        })
        .nullable()
        .describe('`instantly`, `smartlead`: the platform’s warmup analytics of the account; null for `smtp`'),
    }),
  );
  const tags = OUTREACH_TAGS;

  app.post('/api/outreach/connections', {
    config: outreachWrite,
    schema: {
      tags,
      summary:
        'Connect mailboxes (smtp) or a platform (instantly, smartlead): credentials are checked before anything is stored',
      description:
        '`smtp`, the built-in provider: 1–50 mailboxes, each with an SMTP URL (sending) and an IMAP URL (replies ' +
        'and bounces are read from its INBOX), a daily limit and a From name. Every mailbox is verified first: SMTP ' +
        '`EHLO` and `AUTH`, IMAP `LOGIN`; a refusal is `400 CONNECTION_FAILED`, the message carrying the server’s ' +
        'reason and `details` naming the field (`mailboxes.0.smtpUrl`), and nothing is stored. Hosts on private ' +
        'networks are refused unless ALLOW_PRIVATE_NETWORK. Credentials are stored encrypted and never returned. ' +
        '`instantly` (Instantly API v2, Bearer key) and `smartlead` (`api_key`): the platform’s auth check and its ' +
        'sending accounts are read first (they become this connection’s accounts); a refused key is `400 ' +
        'CONNECTION_FAILED` with the platform’s reason, naming `apiKey`. The key is stored encrypted and shown ' +
        'masked. `webhook.url` (shown in this answer only) is where the platform posts its events (replies, ' +
        'bounces, unsubscribes, sends); with PUBLIC_URL set, Instantly’s webhook is registered at once and ' +
        'Smartlead’s with each campaign.',
      body: createConnectionBody,
      response: { 201: envelope(z.object({ connection: connectionView })), ...errorResponses(400, 401, 403) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ connection: await connections.create(principalOf(request).userId, request.body) });
    },
  });

  app.get('/api/outreach/connections', {
    config: outreachRead,
    schema: {
      tags,
      summary: 'Your outreach connections with their mailboxes, newest first (credentials masked)',
      querystring: listConnectionsQuery,
      response: {
        200: envelope(z.object({ connections: z.array(connectionView), nextCursor })),
        ...errorResponses(400, 401),
      },
    },
    handler: async (request) => ok(await connections.list(principalOf(request).userId, request.query)),
  });

  app.delete('/api/outreach/connections/:id', {
    config: outreachWrite,
    schema: {
      tags,
      summary: 'Delete a connection with its mailboxes and campaigns (sent mail history goes with them)',
      params: idParams,
      response: { 200: successOnly, ...errorResponses(401, 403, 404) },
    },
    handler: async (request) => {
      await connections.remove(principalOf(request).userId, request.params.id);
      return done('Connection deleted');
    },
  });

  app.get('/api/outreach/accounts', {
    config: outreachRead,
    schema: {
      tags,
      summary: 'Sending mailboxes, newest first; `connectionId` narrows to one connection',
      description: 'Each with its daily limit, mails sent today (UTC) and the state of its inbox reading.',
      querystring: listAccountsQuery,
      response: {
        200: envelope(z.object({ accounts: z.array(mailboxView), nextCursor })),
        ...errorResponses(400, 401, 404),
      },
    },
    handler: async (request) => ok(await connections.listAccounts(principalOf(request).userId, request.query)),
  });

  app.post('/api/outreach/accounts/:id/test', {
    config: outreachRead,
    schema: {
      tags,
      summary: 'DNS vitals of the mailbox’s domain: MX, SPF, DKIM, DMARC',
      description:
        'Read through DNS_SERVERS. MX: the domain has mail exchangers (a null MX fails: replies and bounces would ' +
        'be lost). SPF: the domain’s record authorizes the mailbox’s SMTP host. DKIM: a key record under ' +
        '`dkimSelector`, or else under a common selector (the one found is named). DMARC: `_dmarc.<domain>` holds ' +
        'a policy (`p=none` passes with a note). Each check with what DNS answered.',
      params: idParams,
      body: accountTestBody,
      response: { 200: envelope(accountTestView), ...errorResponses(400, 401, 404) },
    },
    handler: async (request) =>
      ok(await connections.testAccount(principalOf(request).userId, request.params.id, request.body?.dkimSelector)),
  });

  app.post('/api/outreach/accounts/:id/warmup', {
    config: outreachWrite,
    schema: {
      tags,
      summary: 'Enable or disable warmup of a mailbox',
      description:
        'Enabling makes the mailbox’s domain a warmup domain sending through this mailbox (see Warmup domains; ' +
        '`dkimSelector` needed the first time) and starts it: SPF and DKIM are checked (`400 DNS_NOT_READY` ' +
        'naming the record; the domain stays in DRAFT, linked, so a later call starts it), or resumes a paused ' +
        'one (an auto-paused one only with its rates within the limits: `400 INVALID_STATE`). `409 CONFLICT` when ' +
        'the domain is already warming through another mailbox. Disabling pauses it. On `instantly` and ' +
        '`smartlead` accounts, the platform’s own warmup is enabled or disabled (`502 PLATFORM_ERROR` when it ' +
        'refuses) and its analytics answered.',
      params: idParams,
      body: accountWarmupBody,
      response: { 200: warmupState, ...errorResponses(400, 401, 403, 404, 409) },
    },
    handler: async (request) =>
      ok(await accountWarmup.set(principalOf(request).userId, request.params.id, request.body)),
  });

  app.get('/api/outreach/accounts/:id/warmup', {
    config: outreachRead,
    schema: {
      tags,
      summary: 'Warmup of a mailbox: state, schedule day, today’s target and sent count, latest rates',
      params: idParams,
      response: { 200: warmupState, ...errorResponses(401, 404) },
    },
    handler: async (request) => ok(await accountWarmup.get(principalOf(request).userId, request.params.id)),
  });
};
