import { z } from 'zod';
import type { RouteModule } from '../../route-module.ts';
import { principalOf } from '../../shared/auth.ts';
import { envelope, errorResponses, idParams, ok } from '../../shared/http.ts';
import { nextCursor } from '../../shared/pagination.ts';
import {
  conversationDetail,
  conversationListItem,
  conversationView,
  createConversationBody,
  decideApprovalBody,
  decisionResult,
  describeStream,
  listConversationsQuery,
  sendMessageBody,
  turnResult,
} from './chat.schemas.ts';
import { createChatService } from './chat.service.ts';
import { respondWithTurn } from './chat.sse.ts';

export const chatRoutes: RouteModule = (app, deps) => {
  const chat = createChatService(deps);
  const tags = ['Chat'];
  const read = { scope: 'chat:read' };
  // A turn's answer is produced live (and streamed): replaying it under an Idempotency-Key is not offered.
  const write = { scope: 'chat:write' };
  const turnWrite = { scope: 'chat:write', idempotency: false as const };

  app.post('/api/chat/conversations', {
    config: write,
    schema: {
      tags,
      summary: 'Start a conversation with the assistant',
      description:
        'Works without an AI provider; only sending messages needs one. Without `title` the first message names it.',
      body: createConversationBody.nullish(),
      response: { 201: envelope(z.object({ conversation: conversationView })), ...errorResponses(400, 401, 403) },
    },
    handler: async (request, reply) => {
      reply.code(201);
      return ok({ conversation: await chat.create(principalOf(request).userId, request.body?.title) });
    },
  });

  app.get('/api/chat/conversations', {
    config: read,
    schema: {
      tags,
      summary: 'List your conversations, newest first',
      description:
        'Each with `lastMessageAt` and the number of write actions awaiting approval. Cursor pagination ' +
        '(`limit`, `cursor` → `nextCursor`).',
      querystring: listConversationsQuery,
      response: {
        200: envelope(z.object({ conversations: z.array(conversationListItem), nextCursor })),
        ...errorResponses(400, 401, 403),
      },
    },
    handler: async (request) => ok(await chat.list(principalOf(request).userId, request.query)),
  });

  app.get('/api/chat/conversations/:id', {
    config: read,
    schema: {
      tags,
      summary: 'A conversation: messages, tool calls and pending approvals',
      description:
        'Assistant messages cover every model step between two user messages; each tool call shows its input, status ' +
        'and result. Write actions (create or activate a source, start or cancel a job, update leads) wait in ' +
        '`pendingApprovals` until decided.',
      params: idParams,
      response: { 200: envelope(conversationDetail), ...errorResponses(401, 403, 404) },
    },
    handler: async (request) => ok(await chat.get(principalOf(request).userId, request.params.id)),
  });

  app.post('/api/chat/conversations/:id/messages', {
    config: turnWrite,
    schema: {
      tags,
      summary: 'Send a message; the assistant answers (JSON, or Server-Sent Events)',
      description: describeStream(
        'The server keeps the history: only `content` is sent. The assistant may call read tools (leads, sources, ' +
          "jobs, stats), which run at once with your key's scopes, and write tools, which stop the turn with a " +
          'PENDING approval (`pendingApprovals`). While an approval is pending a new message is `409 ' +
          'APPROVAL_PENDING` naming it; while the assistant is still answering, `409 CONFLICT`. Without an AI ' +
          'provider: `503 AI_NOT_CONFIGURED` (nothing stored). If the provider fails (`502 AI_PROVIDER_ERROR`), ' +
          'nothing of the turn is stored.',
      ),
      params: idParams,
      body: sendMessageBody,
      response: { 200: envelope(turnResult), ...errorResponses(400, 401, 403, 404, 409, 502, 503) },
    },
    handler: async (request, reply) => {
      const turn = await chat.beginMessage(principalOf(request), request.params.id, request.body.content);
      return respondWithTurn(request, reply, turn);
    },
  });

  app.post('/api/chat/conversations/:id/approvals', {
    config: turnWrite,
    schema: {
      tags,
      summary: 'Approve or reject a pending write action',
      description: describeStream(
        'Only a PENDING approval of this conversation (else 404; already decided: 409 CONFLICT). Approved, the ' +
          'stored action runs through the same service as its HTTP route, as you, and only if your key holds its ' +
          'scope (e.g. `sources:write`; otherwise the approval is FAILED and nothing happens). Rejected, the ' +
          'assistant is told so (with `note`). Once nothing of the conversation is pending, the assistant replies to ' +
          'the outcome. The body cannot name a tool or an input.',
      ),
      params: idParams,
      body: decideApprovalBody,
      response: { 200: envelope(decisionResult), ...errorResponses(400, 401, 403, 404, 409, 502, 503) },
    },
    handler: async (request, reply) => {
      const turn = await chat.beginDecision(principalOf(request), request.params.id, request.body);
      return respondWithTurn(request, reply, turn);
    },
  });
};
