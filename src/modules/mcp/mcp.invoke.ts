/**
 * A tool call is its route called in-process (`app.inject`) with the caller's own `Authorization` (and
 * `X-Client-Ref`): the route authenticates, checks the scope, validates, charges credits and answers exactly as over
 * HTTP. The answer becomes a tool result: `data` as structured content (and as JSON text for clients that read
 * text only), an image block for a screenshot, and every error envelope as `isError: true` with its code.
 */
import type { FastifyInstance } from 'fastify';
import { argumentsToRequest, type ToolPlan } from './mcp.tool-schemas.ts';

/** The credentials a tool call carries into its route. */
export interface ToolCaller {
  authorization: string;
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

export function dataResult(data: unknown, wrap: boolean): ToolResult {
  const structured = wrap || data === null || typeof data !== 'object' ? { result: data } : data;
  return {
    content: [{ type: 'text', text: JSON.stringify(data) }],
    structuredContent: structured as Record<string, unknown>,
  };
}

export async function callRouteTool(
  app: FastifyInstance,
  plan: ToolPlan,
  args: Record<string, unknown>,
  caller: ToolCaller,
): Promise<ToolResult> {
  const request = argumentsToRequest(plan, args);
  if ('invalid' in request) {
    return errorResult({
      code: 'VALIDATION_ERROR',
      message: `${request.invalid} names nothing`,
      details: [{ field: request.invalid, message: 'not an id' }],
    });
  }
  const missing = /:(\w+)/.exec(request.url.split('?')[0]!);
  if (missing) {
    return errorResult({
      code: 'VALIDATION_ERROR',
      message: `${missing[1]} is required`,
      details: [{ field: missing[1]!, message: 'required' }],
    });
  }
  const headers: Record<string, string> = { authorization: caller.authorization };
  if (caller.clientRef) headers['x-client-ref'] = caller.clientRef;
  if (caller.host) headers.host = caller.host;
  if (request.body !== undefined) headers['content-type'] = 'application/json';
  const response = await app.inject({
    method: request.method as 'GET',
    url: request.url,
    headers,
    payload: request.body === undefined ? undefined : JSON.stringify(request.body),
  });
  const type = String(response.headers['content-type'] ?? '');
  if (plan.tool.image && response.statusCode === 200 && type.startsWith('image/')) {
    return {
      content: [{ type: 'image', data: response.rawPayload.toString('base64'), mimeType: type.split(';')[0]! }],
    };
  }
  let body: { success?: boolean; data?: unknown; message?: string; error?: ErrorBody } | undefined;
  try {
    body = response.body ? JSON.parse(response.body) : undefined;
  } catch {
    body = undefined;
  }
  if (response.statusCode >= 400 || body?.success === false) {
    return errorResult(
      body?.error ?? { code: 'INTERNAL_ERROR', message: `the route answered HTTP ${response.statusCode}` },
      response.statusCode,
    );
  }
  if (body && 'data' in body) return dataResult(body.data, plan.wrapResult);
  return { content: [{ type: 'text', text: body?.message ?? 'done' }] };
}
