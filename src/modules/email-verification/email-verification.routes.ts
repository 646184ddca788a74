import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { envelope, errorResponses, ok } from '../../shared/http.ts';
import {
  bounceList,
  ingestQuery,
  ingestResult,
  jsonBounceBody,
  listBouncesQuery,
  trapCheckBody,
  trapCheckResult,
} from './email-verification.schemas.ts';
import { createEmailVerificationService } from './email-verification.service.ts';
import { createSpamTrapChecker } from './spam-traps.ts';

/** A DSN with the returned message is small; this bounds what is buffered. */
const MAX_DSN = 2 * 1024 * 1024;
const DSN_TYPES = ['message/rfc822', 'multipart/report'];

const rawDsn = z
  .string()
  .describe('`message/rfc822` (a whole bounce message) or `multipart/report` (its body; boundary in Content-Type)');

const INGEST_DESCRIPTION =
  'Either a raw RFC 3464 delivery status notification (`Content-Type: message/rfc822`, or `multipart/report; ' +
  'report-type=delivery-status; boundary=…`): every recipient block of its `message/delivery-status` part ' +
  '(Final-Recipient, Action, Status, Diagnostic-Code) is one bounce, `delivered`/`relayed`/`expanded` ones are ' +
  'skipped; or JSON `{email, smtpCode, enhancedStatus, diagnostic, campaignId?, sender?, messageId?}`.\n\n' +
  'Classification by the RFC 3463 status: **hard** for 5.1.x, 5.2.1, 5.4.4, and 5.0.0 (or another 5.x.x) whose ' +
  'diagnostic says the user is unknown; **soft** for 4.x.x, 5.2.2 (mailbox full) and other 5.x.x; **block** for ' +
  '5.7.x and any 5.x.x whose diagnostic names spam, a block list, reputation or policy. A code RFC 3463 and the ' +
  'IANA registry do not define is a 400 naming `enhancedStatus` (`body.recipients.N.status` in a DSN).\n\n' +
  'A hard bounce marks every lead of yours with that address INVALID (its validation `errors` gain ' +
  '`hard_bounced`) and suppresses the address (source `hard_bounce`). A block counts against the sender (the ' +
  'returned message’s From domain, else the report’s To; `sender` in JSON) and the campaign, never the ' +
  'recipient: it is not suppressed. Every new bounce emits `email.bounced`.\n\n' +
  'Idempotent: the same bounce twice counts once (`duplicate: true`, nothing changes, no event). The key of a ' +
  'DSN recipient is the sha256 of its Original-Envelope-Id (else the returned Message-ID, else the whole ' +
  'report), the recipient and its Status; of a JSON report, of messageId, email, status, smtpCode, diagnostic ' +
  'and campaignId. Bad DSNs are a 400 naming `body`, nothing stored.';

export const emailVerificationRoutes: RouteModule = (app, deps) => {
  const service = createEmailVerificationService(deps);
  const traps = createSpamTrapChecker(deps);
  const tags = ['Email verification'];
  const read = { scope: 'email:read' };
  const write = { scope: 'email:write' };

  // Raw DSNs: parsed as text in this scope only; the JSON parser of every route still applies to JSON.
  app.register(async (instance: FastifyInstance) => {
    const scope = instance.withTypeProvider<ZodTypeProvider>();
    scope.addContentTypeParser(DSN_TYPES, { parseAs: 'string', bodyLimit: MAX_DSN }, (_request, body, done) =>
      done(null, body),
    );
    scope.post('/api/email-verification/bounces', {
      // The idempotency fingerprint covers JSON bodies only; bounces are idempotent by their own key.
      config: { ...write, idempotency: false },
      // Two body shapes: checked in the handler, so a JSON field error names the field itself.
      validatorCompiler: () => (value) => ({ value }),
      schema: {
        tags,
        summary: 'Ingest a bounce: a raw DSN or a JSON report',
        description: INGEST_DESCRIPTION,
        consumes: ['application/json', ...DSN_TYPES],
        querystring: ingestQuery,
        body: z.union([jsonBounceBody, rawDsn]),
        response: { 200: envelope(ingestResult), ...errorResponses(400, 401, 403, 404, 413, 415) },
      },
      handler: async (request) => {
        const userId = principalOf(request).userId;
        if (typeof request.body === 'string') {
          const { campaignId } = ingestQuery.parse(request.query);
          const contentType = String(request.headers['content-type'] ?? '');
          return ok(await service.ingestDsn(userId, Buffer.from(request.body, 'utf8'), contentType, campaignId));
        }
        return ok(await service.ingestJson(userId, jsonBounceBody.parse(request.body)));
      },
    });
  });

  app.get('/api/email-verification/bounces', {
    config: read,
    schema: {
      tags,
      summary: 'Bounces, with counts and rates by recipient domain, campaign and sender',
      description:
        'Newest first, filtered by `type`, recipient `domain`, `campaignId` (another user’s: 404) and the time ' +
        'received (`from` inclusive, `to` exclusive); cursor pagination. `rates` cover every bounce matching the ' +
        'filters (top 100 groups each): hard/soft/block counts per recipient domain and per campaign, and blocks ' +
        'per sending domain. `sends` are the outreach mails sent in the same time window to that domain, or in ' +
        'that outreach campaign (deal campaigns send nothing: null); `rate` is bounces ÷ sends, null without ' +
        'sends. `campaignId` may name an outreach campaign (its mails’ bounces) or a deal campaign.',
      querystring: listBouncesQuery,
      response: { 200: envelope(bounceList), ...errorResponses(400, 401, 403, 404) },
    },
    handler: async (request) => ok(await service.list(principalOf(request).userId, request.query)),
  });

  app.post('/api/email-verification/spam-traps/check', {
    config: write,
    schema: {
      tags,
      summary: 'Spam-trap risk of up to 1000 addresses or leads',
      description:
        'Give `emails` and/or `leadIds` (1000 together at most: 400 naming the field). A malformed address is a ' +
        '400 naming it (`emails.3`); a lead id that is not yours, or a lead without a valid email, is answered ' +
        'in `skipped` (`not_found`, `no_email`, `invalid_email`), never 404, so one stale id does not fail a ' +
        'batch. Each distinct address gets `reasons`, each adding its weight to `score` (capped at 100):\n\n' +
        '| reason | weight | signal |\n|---|---|---|\n' +
        '| known_trap_pattern | 70 | local part spamtrap, spam-trap, honeypot, spambait, blackhole, trap, bait, ' +
        'donotemail, do-not-contact (digits may follow), or a domain whose first label is spamtrap/honeypot |\n' +
        '| hard_bounced | 50 | the address hard-bounced before |\n' +
        '| invisible_element | 45 | every lead with it was scraped from an invisible element (provenance ' +
        '`visible: false`) |\n' +
        '| domain_not_found | 45 | NXDOMAIN |\n| null_mx | 45 | RFC 7505 null MX |\n' +
        '| no_mx | 35 | neither MX nor A/AAAA |\n| typo_domain | 35 | one edit from a major mailbox provider |\n' +
        '| suppressed | 30 | on your suppression list (address, domain or parent domain) |\n' +
        '| disposable_domain | 25 | a disposable-mail domain |\n| role_account | 15 | info@, sales@, … |\n' +
        '| recently_seen_domain | 10 | your leads first showed the domain in the last 14 days, while you have ' +
        'older leads (registration dates are not looked up) |\n\n' +
        'Risk: `high` from 60, `medium` from 30, `low` above 0, `none` at 0. DNS answers are cached per process.',
      body: trapCheckBody,
      response: { 200: envelope(trapCheckResult), ...errorResponses(400, 401, 403) },
    },
    handler: async (request) => ok(await traps.check(principalOf(request).userId, request.body)),
  });
};
