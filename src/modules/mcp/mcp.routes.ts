/**
 * `POST/GET/DELETE /mcp`: the Model Context Protocol over Streamable HTTP, on the API's own server and port,
 * authenticated with the same `Authorization: Bearer <API key>`.
 *
 * Sessions follow the protocol (`Mcp-Session-Id` answered to `initialize`, required after it, `DELETE` ends it) but
 * live in the database, not in the process: every request builds its MCP server and transport afresh for the
 * caller, so on PostgreSQL a client may land on any API process. A request asking for progress is answered as an
 * SSE stream (progress notifications, then the result) and `initialize` as JSON, both by the SDK's transport; any
 * other POST as JSON by ours (mcp.json-transport.ts: the same checks and answers, straight on the reply). `GET`
 * opens the session's stream of resource change notifications (the jobs it subscribed to).
 */
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { newId } from '../../db/ids.ts';
import type { RouteModule, TypedApp } from '../../route-module.ts';
import type { Principal } from '../../shared/auth.ts';
import { AppError } from '../../shared/errors.ts';
import { JOB_UPDATE_CHANNEL } from '../jobs/index.ts';
import { captureRoutes, type RouteCatalog } from './mcp.catalog.ts';
import {
  checkJsonPost,
  checkProtocolVersion,
  isRequest,
  JsonAnswerTransport,
  parseMessages,
  sendJsonError,
} from './mcp.json-transport.ts';
import { createMcpServer, type McpCallerContext, type SubscriptionStore, type ToolSet } from './mcp.server.ts';
import { createMcpSessions } from './mcp.sessions.ts';
import { answerToolCall, plainToolCall } from './mcp.tool-call.ts';
import { planTool, type ToolPlan } from './mcp.tool-schemas.ts';
import { routeTools } from './mcp.tools.ts';

/** The tools, planned once from the captured routes (after every route module registered its routes). */
export function buildToolSet(catalog: RouteCatalog): ToolSet {
  const plans = new Map<string, ToolPlan>();
  for (const tool of routeTools) {
    const route = catalog.get(tool.operationId);
    if (!route) throw new Error(`MCP tool ${tool.name}: no route with operationId ${tool.operationId}`);
    plans.set(tool.operationId, planTool(tool, route));
  }
  const extra = (operationId: string) => {
    const route = catalog.get(operationId);
    if (!route) throw new Error(`MCP: no route with operationId ${operationId}`);
    return planTool(
      { name: operationId, title: operationId, operationId, annotations: routeTools[0]!.annotations },
      route,
    );
  };
  const helpers = new Map<string, ToolPlan>();
  return {
    plans,
    byName: new Map([...plans.values()].map((plan) => [plan.tool.name, plan])),
    get(operationId) {
      const plan = plans.get(operationId) ?? helpers.get(operationId) ?? extra(operationId);
      helpers.set(operationId, plan);
      return plan;
    },
  };
}

const SUBSCRIPTIONS_FRESH_MS = 2_000;

type JsonRpcMessage = { method?: string; params?: { _meta?: { progressToken?: unknown } } };
const messagesOf = (body: unknown): JsonRpcMessage[] =>
  (Array.isArray(body) ? body : body && typeof body === 'object' ? [body] : []) as JsonRpcMessage[];

/** A JSON-RPC error as the transport itself would answer it (the client reads `error.message`). */
function rpcError(reply: FastifyReply, status: number, code: number, message: string) {
  return reply.code(status).send({ jsonrpc: '2.0', error: { code, message }, id: null });
}

export const mcpRoutes: RouteModule = (app, deps) => {
  // First of the route modules: it sees every route registered after it.
  const catalog = captureRoutes(app);
  let tools: ToolSet | undefined;
  const sessions = createMcpSessions(deps);
  const subscriptions: SubscriptionStore = {
    subscribe: async (id, uri) => {
      if (!(await sessions.repo.subscribe(id, uri))) {
        throw new AppError('VALIDATION_ERROR', 'This session follows too many resources: unsubscribe some first');
      }
    },
    unsubscribe: (id, uri) => sessions.repo.unsubscribe(id, uri),
  };

  const authenticate = async (request: FastifyRequest, reply: FastifyReply): Promise<Principal | undefined> => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    let principal: Principal | undefined;
    try {
      principal = match ? await deps.apiKeys.authenticate(match[1]!) : undefined;
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      reply.code(err.status).send({ success: false, error: { code: err.code, message: err.message } });
      return undefined;
    }
    if (!principal) {
      reply
        .code(401)
        .header('www-authenticate', 'Bearer')
        .send({
          success: false,
          error: { code: 'UNAUTHORIZED', message: 'Send Authorization: Bearer <API key> (an API key of yours)' },
        });
    }
    return principal;
  };

  const handle = async (request: FastifyRequest, reply: FastifyReply) => {
    const principal = await authenticate(request, reply);
    if (!principal) return reply;
    const toolSet = (tools ??= buildToolSet(catalog));
    const messages = request.method === 'POST' ? messagesOf(request.body) : [];
    const initializing = messages.some((m) => m.method === 'initialize');
    const header = request.headers['mcp-session-id'];
    const sessionId = typeof header === 'string' ? header : undefined;

    if (!initializing) {
      if (!sessionId) return rpcError(reply, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      const session = await sessions.find(sessionId, principal.keyId);
      if (!session) return rpcError(reply, 404, -32001, 'Session not found');
      if (request.method === 'DELETE') {
        await sessions.close(session);
        return reply.code(200).send();
      }
    }

    const wantsStream = messages.some((m) => m.params?._meta?.progressToken !== undefined);
    const clientRef = request.headers['x-client-ref'];
    const caller = {
      authorization: request.headers.authorization!,
      principal,
      clientRef: typeof clientRef === 'string' ? clientRef : undefined,
      host: request.headers.host,
    };

    // Built only when the SDK's server serves the request.
    const context = (): McpCallerContext => ({
      app: app as unknown as McpCallerContext['app'],
      tools: toolSet,
      principal,
      caller,
      notifier: deps.notifier,
      sessionId: sessionId?.toLowerCase(),
      subscriptions,
    });

    if (request.method === 'POST' && !initializing && !wantsStream) {
      // The common case, a JSON answer: written by our own transport, straight to the reply.
      const refused = checkJsonPost(request);
      if (refused) return sendJsonError(reply, refused);
      // One plain call of a route tool needs neither zod to tell its shape nor the SDK to dispatch it.
      const call = plainToolCall(request.body, toolSet.byName);
      const parsed = call ? ([] as JSONRPCMessage[]) : parseMessages(request.body);
      if (!Array.isArray(parsed)) return sendJsonError(reply, parsed);
      const versionRefused = checkProtocolVersion(request);
      if (versionRefused) return sendJsonError(reply, versionRefused);
      if (call) {
        const body = await answerToolCall(app as unknown as McpCallerContext['app'], call, caller);
        // As the SDK's path: a client gone before its answer gets none.
        if (request.raw.socket?.destroyed) return reply;
        return reply.code(200).header('content-type', 'application/json').send(body);
      }
      const transport = new JsonAnswerTransport();
      const methods = new Set(parsed.filter(isRequest).map((message) => message.method));
      const server = createMcpServer({ ...context(), serialized: transport.serialized, methods });
      await server.connect(transport);
      // A client gone before its answer stops the work (a wait, a progress loop); after it, nothing is left to stop.
      reply.raw.on('close', () => {
        if (transport.answered) return;
        void transport.close();
        void server.close();
      });
      const body = await transport.handle(parsed, request);
      if (body === undefined) return reply.code(202).send();
      return reply.code(200).header('content-type', 'application/json').send(body);
    }

    const transport = new StreamableHTTPServerTransport(
      initializing
        ? {
            sessionIdGenerator: newId,
            enableJsonResponse: true,
            onsessioninitialized: async (id) => {
              const client = (request.body as { params?: { clientInfo?: { name?: string } } }).params?.clientInfo;
              await sessions.create({
                id,
                userId: principal.userId,
                keyId: principal.keyId,
                clientName: client?.name?.slice(0, 200) ?? null,
              });
            },
          }
        : { sessionIdGenerator: undefined, enableJsonResponse: !wantsStream },
    );
    const server = createMcpServer(context());
    await server.connect(transport);
    reply.hijack();
    let unsubscribe: (() => void) | undefined;
    reply.raw.on('close', () => {
      unsubscribe?.();
      void transport.close();
      void server.close();
    });
    if (request.method === 'GET' && sessionId) {
      // The session's stream: announce changes of the jobs it subscribed to, wherever they run.
      const id = sessionId.toLowerCase();
      // Every job update of every tenant arrives here: the session's subscriptions are read at most once per
      // SUBSCRIPTIONS_FRESH_MS, not once per update (a subscription made on another process shows within that).
      let subscribed: { uris: Set<string>; at: number } | undefined;
      let reading: Promise<Set<string>> | undefined;
      const subscriptionsNow = async () => {
        if (subscribed && Date.now() - subscribed.at < SUBSCRIPTIONS_FRESH_MS) return subscribed.uris;
        reading ??= sessions.repo
          .find(id)
          .then((row) => {
            subscribed = { uris: new Set(row?.subscriptions ?? []), at: Date.now() };
            return subscribed.uris;
          })
          .finally(() => {
            reading = undefined;
          });
        return reading;
      };
      unsubscribe = await deps.notifier.subscribe(JOB_UPDATE_CHANNEL, (payload) => {
        void (async () => {
          const uri = `quarry://jobs/${(JSON.parse(payload) as { id?: string }).id}`;
          if ((await subscriptionsNow()).has(uri)) await server.sendResourceUpdated({ uri });
        })().catch(() => {});
      });
      if (reply.raw.destroyed) unsubscribe();
    }
    await transport.handleRequest(request.raw, reply.raw, request.body);
  };

  for (const method of ['POST', 'GET', 'DELETE'] as const) {
    (app as TypedApp).route({
      method,
      url: '/mcp',
      config: { public: true },
      schema: { hide: true },
      handler: handle,
    });
  }
};
