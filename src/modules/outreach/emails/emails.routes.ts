import { z } from 'zod';
import type { RouteModule } from '../../../route-module.ts';
import { principalOf } from '../../../shared/auth.ts';
import { envelope, errorResponses, ok } from '../../../shared/http.ts';
import { nextCursor } from '../../../shared/pagination.ts';
import { OUTREACH_TAGS, outreachRead, outreachWrite } from '../connections/connections.routes.ts';
import { emailView, listEmailsQuery, sendEmailBody, threadView } from './emails.schemas.ts';
import { createEmailService } from './emails.service.ts';
import { createPersonalizer, personalizeBody, personalizeResult } from './personalize.ts';

export const outreachEmailRoutes: RouteModule = (app, deps) => {
  const emails = createEmailService(deps);
  const personalizer = createPersonalizer(deps);
  const tags = OUTREACH_TAGS;

  app.post('/api/outreach/emails', {
    config: outreachWrite,
    schema: {
      tags,
      summary: 'Send one mail, or a reply in a thread, from one of your mailboxes',
      description:
        'With `inReplyTo` (a Message-ID of one of your mails or of a reply in your inbox) the mail goes in that ' +
        'thread (`In-Reply-To`, `References`, "Re: " subject) to whoever wrote it. A suppressed recipient is `422 SUPPRESSED` ' +
        'naming `to` and the list entry; the mail costs one `emails_sent` credit (402 before anything is sent). A mail server that ' +
        'refuses it is `400 CONNECTION_FAILED` with its reason. The mail carries the one-click unsubscribe ' +
        'headers like sequence mail.',
      body: sendEmailBody,
      response: { 201: envelope(z.object({ email: emailView })), ...errorResponses(400, 401, 402, 403, 404, 422) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ email: await emails.send(principalOf(request).userId, request.body) });
    },
  });

  app.get('/api/outreach/emails', {
    config: outreachRead,
    schema: {
      tags,
      summary: 'The inbox: threads with replies, most recently answered first, by lead, campaign or mailbox',
      description:
        'Replies and auto-replies read from your mailboxes over IMAP, each thread with every mail in it (yours ' +
        'and theirs) oldest first. Bounces are under GET /api/email-verification/bounces.',
      querystring: listEmailsQuery,
      response: {
        200: envelope(z.object({ threads: z.array(threadView), nextCursor })),
        ...errorResponses(400, 401),
      },
    },
    handler: async (request) => ok(await emails.inbox(principalOf(request).userId, request.query)),
  });

  app.post('/api/outreach/personalize', {
    config: outreachWrite,
    schema: {
      tags,
      summary: 'AI personalization: a subject and a first line per lead (up to 100; dry run option)',
      description:
        'The model writes from the lead (name, title, company, email domain, custom fields) and its profiles, ' +
        'guided by `instructions`. Unless `dryRun`, each answer is stored on the lead as the custom fields ' +
        '`personalizedSubject` and `personalizedFirstLine`, for templates: `{{custom.personalizedFirstLine}}`. ' +
        'A lead the model gave no answer for carries `error`. Tokens are charged as AI credits (402 before the ' +
        'first call when the balance is empty); without an AI provider: `503 AI_NOT_CONFIGURED`.',
      body: personalizeBody,
      response: { 200: envelope(personalizeResult), ...errorResponses(400, 401, 402, 403, 503) },
    },
    handler: async (request) => ok(await personalizer.personalize(principalOf(request).userId, request.body)),
  });
};
