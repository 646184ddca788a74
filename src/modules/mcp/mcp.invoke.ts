/**
 * A tool call is its route called in-process with the caller's own `Authorization` (and `X-Client-Ref`): the route
 * authenticates, checks the scope, validates, charges credits and answers exactly as over HTTP. Reads go straight to
 * the route's handler when they can (mcp.direct.ts: the same decisions without a second HTTP pass); anything else,
 * and any read the direct path steps aside from, runs through `app.inject`. The answer becomes a tool result: `data` as structured content (and as JSON text for clients that read
 * text only), an image block for a screenshot, and every error envelope as `isError: true` with its code.
 */
import type { FastifyInstance } from 'fastify';
import type { Principal } from '../../shared/auth.ts';
import { type DirectRoute, directRoute, type RouteAnswer } from './mcp.direct.ts';
import { argumentsToRequest, type ToolPlan } from './mcp.tool-schemas.ts';

/** The credentials a tool call carries into its route. */
export interface ToolCaller {
  authorization: string;
  /** What `authorization` authenticated to, when the caller already knows (it spares the route a second look). */
  principal?: Principal;
  clientRef?: string;
  /** The Host the client reached: URLs the routes answer (a session's cdpUrl) name it. */
  host?: string;
}

export interface ToolResult {
  [key: string]: unknown;
  content: Array<{ type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

interface ErrorBody {
  code: string;
  message: string;
  details?: Array<{ field: string; message: string }>;
}

/** A failed call as MCP wants it: a result the model reads, never a protocol error. */
export function errorResult(error: ErrorBody, status?: number): ToolResult {
  const details = error.details?.map((d) => `${d.field}: ${d.message}`).join('; ');
  const text = `${error.code}${status ? ` (HTTP ${status})` : ''}: ${error.message}${details ? ` [${details}]` : ''}`;
  // No structuredContent: clients validate it against the tool's output schema even on errors. The code and
  // details travel in `_meta` for programs, in the text for models.
  return { content: [{ type: 'text', text }], _meta: { 'quarry/error': error }, isError: true };
}

/** `json`: the JSON of `data` when the caller holds it already (the route's own serialization). */
export function dataResult(data: unknown, wrap: boolean, json?: string): ToolResult {
  const structured = wrap || data === null || typeof data !== 'object' ? { result: data } : data;
  return {
    content: [{ type: 'text', text: json ?? JSON.stringify(data) }],
    structuredContent: structured as Record<string, unknown>,
  };
}

const DATA_PREFIX = '{"success":true,"data":';
/** The JSON text of `data` inside a route's `{"success":true,"data":…}` answer, when it is written that way. */
function dataJsonOf(text: string, body: object): string | undefined {
  if (!text.startsWith(DATA_PREFIX) || text.charCodeAt(text.length - 1) !== 0x7d) return undefined;
  const keys = Object.keys(body);
  if (keys.length !== 2 || keys[1] !== 'data') return undefined;
  return text.slice(DATA_PREFIX.length, -1);
}

export async function callRouteTool(
  app: FastifyInstance,
  plan: ToolPlan,
  args: Record<string, unknown>,
  caller: ToolCaller,
): Promise<ToolResult> {
  const called = await answerOf(app, plan, args, caller);
  return 'answer' in called ? resultOf(plan, called.answer) : called.result;
}

/**
 * As `callRouteTool`, for a transport that writes the answer itself: when the route's data is an object whose JSON
 * the route wrote (a direct read), `json` is that JSON and the result's text; its `structuredContent` is then only
 * a stand-in, and the transport writes `json` in its place (the data is never parsed back into objects).
 */
export async function callRouteToolAsText(
  app: FastifyInstance,
  plan: ToolPlan,
  args: Record<string, unknown>,
  caller: ToolCaller,
): Promise<{ result: ToolResult; json?: string }> {
  const called = await answerOf(app, plan, args, caller);
  if (!('answer' in called)) return { result: called.result };
  const answer = called.answer;
  const json = answer.dataJson;
  if (json !== undefined && answer.status < 400 && !plan.wrapResult && json.charCodeAt(0) === 0x7b) {
    return { result: { content: [{ type: 'text', text: json }], structuredContent: {} }, json };
  }
  return { result: resultOf(plan, answer) };
}

/** The route's answer, or a tool error found before calling it. */
async function answerOf(
  app: FastifyInstance,
  plan: ToolPlan,
  args: Record<string, unknown>,
  caller: ToolCaller,
): Promise<{ answer: RouteAnswer } | { result: ToolResult }> {
  const request = argumentsToRequest(plan, args);
  if ('invalid' in request) {
    return {
      result: errorResult({
        code: 'VALIDATION_ERROR',
        message: `${request.invalid} names nothing`,
        details: [{ field: request.invalid, message: 'not an id' }],
      }),
    };
  }
  const missing = /:(\w+)/.exec(request.url.split('?')[0]!);
  if (missing) {
    return {
      result: errorResult({
        code: 'VALIDATION_ERROR',
        message: `${missing[1]} is required`,
        details: [{ field: missing[1]!, message: 'required' }],
      }),
    };
  }
  const headers: Record<string, string> = { authorization: caller.authorization };
  if (caller.clientRef) headers['x-client-ref'] = caller.clientRef;
  if (caller.host) headers.host = caller.host;
  const direct = caller.principal ? directOf(app, plan) : undefined;
  const answer =
    (direct &&
      (await direct.call({
        params: request.params,
        query: request.query,
        headers,
        url: request.url,
        principal: caller.principal!,
      }))) ||
    (await injectRoute(app, request, headers));
  return { answer };
}

const directs = new WeakMap<ToolPlan, DirectRoute | null>();
function directOf(app: FastifyInstance, plan: ToolPlan): DirectRoute | undefined {
  let direct = directs.get(plan);
  if (direct === undefined) {
    direct = (!plan.tool.image && directRoute(app, plan.route)) || null;
    directs.set(plan, direct);
  }
  return direct ?? undefined;
}

async function injectRoute(
  app: FastifyInstance,
  request: { method: string; url: string; body?: unknown },
  baseHeaders: Record<string, string>,
): Promise<RouteAnswer> {
  const headers = { ...baseHeaders };
  if (request.body !== undefined) headers['content-type'] = 'application/json';
  const response = await app.inject({
    method: request.method as 'GET',
    url: request.url,
    headers,
    payload: request.body === undefined ? undefined : JSON.stringify(request.body),
  });
  const type = String(response.headers['content-type'] ?? '');
  return type.startsWith('image/')
    ? { status: response.statusCode, type, body: '', raw: response.rawPayload }
    : { status: response.statusCode, type, body: response.body };
}

function resultOf(plan: ToolPlan, response: RouteAnswer): ToolResult {
  if (plan.tool.image && response.status === 200 && response.type.startsWith('image/') && response.raw) {
    return {
      content: [{ type: 'image', data: response.raw.toString('base64'), mimeType: response.type.split(';')[0]! }],
    };
  }
  let body: { success?: boolean; data?: unknown; message?: string; error?: ErrorBody } | undefined;
  try {
    body = response.body ? JSON.parse(response.body) : undefined;
  } catch {
    body = undefined;
  }
  if (response.status >= 400 || body?.success === false) {
    return errorResult(
      body?.error ?? { code: 'INTERNAL_ERROR', message: `the route answered HTTP ${response.status}` },
      response.status,
    );
  }
  if (body && 'data' in body) return dataResult(body.data, plan.wrapResult, dataJsonOf(response.body, body));
  return { content: [{ type: 'text', text: body?.message ?? 'done' }] };
}
