/**
 * The common POST /mcp: one `tools/call` of a route tool, answered as JSON without the SDK's JSON-RPC dispatch. That
 * dispatch costs a `Server` built for the caller and connected, three zod guards telling the message's kind, the
 * request parsed twice more against `CallToolRequestSchema`, an AbortController and a chain of promises, for a
 * message whose shape a few property checks decide.
 *
 * `plainToolCall` says yes only to what every one of those parses accepts (so nothing they would refuse or strip
 * changes the call): exactly `jsonrpc: "2.0"`, a string or safe-integer `id`, `method: "tools/call"` and `params` of a
 * string `name` naming a route tool and an optional plain-object `arguments`, nothing else (no `_meta`, no `task`).
 * Anything else, and `wait_for_job` (its cancellation signal and progress are the SDK's), takes the SDK's path, whose
 * answer and errors stay the reference. The answer is the one the SDK path writes, byte for byte: a result with the
 * route's JSON is written as mcp.json-transport.ts writes it; any other result is validated against
 * `CallToolResultSchema` as the SDK's `Server` does; a thrown error becomes the SDK's JSON-RPC error response.
 *
 * Nothing here outlives the request: the shared parts (the tool set, the schemas) hold no caller.
 */
import { safeParse } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import {
  CallToolResultSchema,
  ErrorCode,
  type JSONRPCMessage,
  McpError,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance } from 'fastify';
import { callRouteToolAsText, type ToolCaller } from './mcp.invoke.ts';
import { bytesOf, dataResultJson } from './mcp.json-transport.ts';
import type { ToolPlan } from './mcp.tool-schemas.ts';

export interface PlainToolCall {
  id: RequestId;
  plan: ToolPlan;
  args: Record<string, unknown>;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The call when `body` is one plain `tools/call` of a route tool (see above); undefined: the SDK's path decides. */
export function plainToolCall(body: unknown, byName: ReadonlyMap<string, ToolPlan>): PlainToolCall | undefined {
  if (!isPlainObject(body)) return undefined;
  let keys = 0;
  for (const key in body) {
    if (key !== 'jsonrpc' && key !== 'id' && key !== 'method' && key !== 'params') return undefined;
    keys++;
  }
  const { jsonrpc, id, method, params } = body;
  if (keys !== 4 || jsonrpc !== '2.0' || method !== 'tools/call' || !isPlainObject(params)) return undefined;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
  for (const key in params) if (key !== 'name' && key !== 'arguments') return undefined;
  const { name, arguments: args = {} } = params;
  if (typeof name !== 'string' || !isPlainObject(args)) return undefined;
  const plan = byName.get(name);
  return plan && { id: id as RequestId, plan, args };
}

/** The JSON-RPC response the SDK's `Protocol` makes of a handler's error. */
export function errorResponseOf(id: RequestId, error: unknown): JSONRPCMessage {
  const { code, message, data } = (error ?? {}) as { code?: unknown; message?: string; data?: unknown };
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: Number.isSafeInteger(code) ? (code as number) : ErrorCode.InternalError,
      message: message ?? 'Internal error',
      ...(data !== undefined && { data }),
    },
  };
}

/** Calls the tool and answers the body the SDK's path would (see above). */
export async function answerToolCall(app: FastifyInstance, call: PlainToolCall, caller: ToolCaller): Promise<Buffer> {
  let message: JSONRPCMessage;
  try {
    const { result, json } = await callRouteToolAsText(app, call.plan, call.args, caller);
    // The SDK's validation of this result is known to pass: `{ content: [{ type: 'text', text }], structuredContent }`.
    if (json !== undefined) return bytesOf(dataResultJson(call.id, json));
    const validated = safeParse(CallToolResultSchema, result);
    if (!validated.success) {
      const error = validated.error;
      throw new McpError(
        ErrorCode.InvalidParams,
        `Invalid tools/call result: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    message = { result: validated.data, jsonrpc: '2.0', id: call.id };
  } catch (error) {
    message = errorResponseOf(call.id, error);
  }
  return bytesOf([JSON.stringify(message)]);
}
