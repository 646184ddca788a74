/**
 * One MCP server per HTTP request (or per stdio connection), for one caller: it holds no state a second API process
 * would lack (the session row and its subscriptions are in the database), so on PostgreSQL a client may land on any
 * process. Tools are the route tools the caller's key may use plus `wait_for_job`; resources are a lead and a job;
 * one prompt wires the tools into a qualification pass.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import type { FastifyInstance } from 'fastify';
import type { Principal } from '../../shared/auth.ts';
import { authorize } from '../../shared/authorization.ts';
import type { Notifier } from '../../shared/notify.ts';
import { callRouteTool, callRouteToolAsText, errorResult, type ToolCaller } from './mcp.invoke.ts';
import { waitForJob, waitForJobTool } from './mcp.jobs.ts';
import type { SerializedResults } from './mcp.json-transport.ts';
import { qualifyLeadsPrompt, qualifyLeadsPromptMessages } from './mcp.prompts.ts';
import type { ToolPlan } from './mcp.tool-schemas.ts';

export const SERVER_INFO = { name: 'quarry', title: 'Quarry', version: '0.1.0' };

/** What the tools stand on, built once per process from the routes. */
export interface ToolSet {
  plans: Map<string, ToolPlan>;
  /** The route tools by tool name. */
  byName: ReadonlyMap<string, ToolPlan>;
  get(operationId: string): ToolPlan;
}

/** Subscriptions of a session, kept in the database so any process serves them. */
export interface SubscriptionStore {
  subscribe(sessionId: string, uri: string): Promise<void>;
  unsubscribe(sessionId: string, uri: string): Promise<void>;
}

export interface McpCallerContext {
  app: FastifyInstance;
  tools: ToolSet;
  principal: Principal;
  caller: ToolCaller;
  notifier: Notifier;
  sessionId?: string;
  subscriptions: SubscriptionStore;
  /**
   * Set by our JSON transport: a tool result whose text is its structured content's JSON is registered here (by
   * request id) and the transport writes that text as the structured content.
   */
  serialized?: SerializedResults;
  /** The request methods this server will be asked (undefined: any); a handler for no other is registered. */
  methods?: ReadonlySet<string>;
}

const RESOURCE_PATTERN = /^quarry:\/\/(leads|jobs)\/([^/?#]+)$/;
const resourceRoutes = { leads: 'getLead', jobs: 'getJob' } as const;

/** The routes' own decision (scopes, and an organization key's role): a tool it would refuse is not listed. */
const allowed = (principal: Principal, plan: ToolPlan) =>
  !plan.route.scope || authorize(principal, plan.route.scope).allowed;

/** One per process: a Server would otherwise build its own Ajv (costly) on every request, for features we do not use. */
let jsonSchemaValidator: AjvJsonSchemaValidator | undefined;

export function createMcpServer(ctx: McpCallerContext): Server {
  jsonSchemaValidator ??= new AjvJsonSchemaValidator();
  const server = new Server(SERVER_INFO, {
    jsonSchemaValidator,
    capabilities: { tools: {}, resources: { subscribe: true }, prompts: {} },
    instructions:
      'Quarry finds leads on public sites, qualifies them and contacts them. A typical path: discover_sources → ' +
      'create_source → activate_source → start_job → wait_for_job → search_leads → update_leads → enroll_leads. ' +
      'Every tool acts as the API key you connected with, within its scopes; failures come back as tool errors ' +
      'with the API error code (NOT_FOUND, VALIDATION_ERROR, INSUFFICIENT_CREDITS…).',
  });
  // Only the handlers this request can reach (our JSON transport knows its methods before the server exists).
  const wanted = (method: string) => !ctx.methods || ctx.methods.has(method);
  const getJob = ctx.tools.get('getJob');
  const visible = () => [...ctx.tools.plans.values()].filter((plan) => allowed(ctx.principal, plan));
  const canReadJobs = () => allowed(ctx.principal, getJob);

  if (wanted('tools/list'))
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [...visible().map((plan) => plan.definition), ...(canReadJobs() ? [waitForJobTool(getJob)] : [])],
    }));

  if (wanted('tools/call'))
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const { name } = request.params;
      const args = (request.params.arguments ?? {}) as Record<string, unknown>;
      if (name === 'wait_for_job' && canReadJobs()) {
        const token = request.params._meta?.progressToken;
        return waitForJob(args, {
          app: ctx.app,
          getJob,
          caller: ctx.caller,
          notifier: ctx.notifier,
          signal: extra.signal,
          progress:
            token === undefined
              ? undefined
              : (job) =>
                  extra.sendNotification({
                    method: 'notifications/progress',
                    params: {
                      progressToken: token,
                      // Pages visited only grow, as the protocol wants of `progress`; the percentage is in the message.
                      progress: job.pagesVisited,
                      message: `${job.status} ${job.progress}%: ${job.pagesVisited} pages visited, ${job.leadsFound} leads found`,
                    },
                  }),
        });
      }
      const plan = ctx.tools.byName.get(name);
      if (!plan) return errorResult({ code: 'NOT_FOUND', message: `No tool named ${name}` });
      // A tool the key may not use is still called: its route refuses it with the same code and message as over HTTP.
      if (!ctx.serialized) return callRouteTool(ctx.app, plan, args, ctx.caller);
      // Our JSON transport writes the route's JSON as the structured content: the data is never parsed back.
      const { result, json } = await callRouteToolAsText(ctx.app, plan, args, ctx.caller);
      if (json !== undefined) ctx.serialized.set(extra.requestId, json);
      return result;
    });

  if (wanted('resources/templates/list'))
    server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
      resourceTemplates: [
        {
          uriTemplate: 'quarry://leads/{id}',
          name: 'lead',
          title: 'A lead',
          description: 'A lead with the provenance of its fields (as get_lead)',
          mimeType: 'application/json',
        },
        {
          uriTemplate: 'quarry://jobs/{id}',
          name: 'job',
          title: 'A scraping job',
          description: 'A job and its progress (as get_job); subscribe to be told when it changes',
          mimeType: 'application/json',
        },
      ],
    }));

  if (wanted('resources/list'))
    server.setRequestHandler(ListResourcesRequestSchema, async () => {
      const listJobs = ctx.tools.get('listJobs');
      if (!allowed(ctx.principal, listJobs)) return { resources: [] };
      const result = await callRouteTool(ctx.app, listJobs, { limit: 20 }, ctx.caller);
      const jobs = ((result.structuredContent as { jobs?: Array<{ id: string; name: string; status: string }> })
        ?.jobs ?? []) as Array<{ id: string; name: string; status: string }>;
      return {
        resources: jobs.map((job) => ({
          uri: `quarry://jobs/${job.id}`,
          name: job.name,
          description: `Job ${job.status}`,
          mimeType: 'application/json',
        })),
      };
    });

  const resolve = (uri: string) => {
    const match = RESOURCE_PATTERN.exec(uri);
    if (!match)
      throw new McpError(
        ErrorCode.InvalidParams,
        `Unknown resource ${uri}: use quarry://leads/{id} or quarry://jobs/{id}`,
      );
    return {
      plan: ctx.tools.get(resourceRoutes[match[1] as keyof typeof resourceRoutes]),
      id: decodeURIComponent(match[2]!),
    };
  };

  if (wanted('resources/read'))
    server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
      const { plan, id } = resolve(request.params.uri);
      const result = await callRouteTool(ctx.app, plan, { id }, ctx.caller);
      if (result.isError) {
        // -32002: the protocol's "resource not found".
        throw new McpError(-32002, (result.content[0] as { text: string }).text, { uri: request.params.uri });
      }
      return {
        contents: [
          { uri: request.params.uri, mimeType: 'application/json', text: JSON.stringify(result.structuredContent) },
        ],
      };
    });

  const sessionOf = () => {
    if (!ctx.sessionId) throw new McpError(ErrorCode.InvalidRequest, 'Subscriptions need a session (Mcp-Session-Id)');
    return ctx.sessionId;
  };
  if (wanted('resources/subscribe'))
    server.setRequestHandler(SubscribeRequestSchema, async (request) => {
      const { plan, id } = resolve(request.params.uri);
      // Only what the caller may read: the route answers 404 for another user's id.
      const result = await callRouteTool(ctx.app, plan, { id }, ctx.caller);
      if (result.isError) throw new McpError(-32002, (result.content[0] as { text: string }).text);
      await ctx.subscriptions.subscribe(sessionOf(), request.params.uri);
      return {};
    });
  if (wanted('resources/unsubscribe'))
    server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
      await ctx.subscriptions.unsubscribe(sessionOf(), request.params.uri);
      return {};
    });

  if (wanted('prompts/list'))
    server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: [qualifyLeadsPrompt] }));
  if (wanted('prompts/get'))
    server.setRequestHandler(GetPromptRequestSchema, async (request) => {
      if (request.params.name !== qualifyLeadsPrompt.name) {
        throw new McpError(ErrorCode.InvalidParams, `No prompt named ${request.params.name}`);
      }
      return qualifyLeadsPromptMessages(request.params.arguments ?? {});
    });
  return server;
}
