/**
 * The Streamable HTTP answer of a POST answered as one JSON document (no progress asked, not `initialize`), written
 * straight to the Fastify reply. The SDK's transport would take the same steps through a Node → Web `Request` →
 * Web `Response` → Node conversion (@hono/node-server) and per-stream bookkeeping; this one makes the same checks
 * with the same codes and messages (Accept, Content-Type, MCP-Protocol-Version, batch size, JSON-RPC shape), hands
 * the messages to the MCP server and answers when every request among them has its response: 202 for
 * notifications only, else 200 with the response (or the array of responses, for a batch). Like the SDK's stateless
 * transport it names no session in the answer (the session was checked before, against the database).
 *
 * A tool result whose text is the JSON of its structured content (mcp.invoke.ts `dataResult`) is written without
 * serializing the same data twice: the text is reused as the `structuredContent` JSON.
 */
import { MAX_BATCH_SIZE } from '@modelcontextprotocol/sdk/server/requestBody.js';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  type JSONRPCRequest,
  type JSONRPCResultResponse,
  type RequestId,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyReply, FastifyRequest } from 'fastify';

export interface JsonAnswerError {
  status: number;
  code: number;
  message: string;
}

/** The transport's checks of the request, in the SDK's order; undefined when the request may go on. */
export function checkJsonPost(request: FastifyRequest): JsonAnswerError | undefined {
  const accept = request.headers.accept;
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) {
    return {
      status: 406,
      code: -32000,
      message: 'Not Acceptable: Client must accept both application/json and text/event-stream',
    };
  }
  if (!isJsonContentType(request.headers['content-type'])) {
    return { status: 415, code: -32000, message: 'Unsupported Media Type: Content-Type must be application/json' };
  }
  return undefined;
}

/** Parses the messages of a POST (as the SDK's transport does); an error answer when they are not JSON-RPC. */
export function parseMessages(body: unknown): JSONRPCMessage[] | JsonAnswerError {
  if (Array.isArray(body) && body.length > MAX_BATCH_SIZE) {
    return { status: 400, code: -32600, message: `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages` };
  }
  try {
    return Array.isArray(body)
      ? body.map((message) => JSONRPCMessageSchema.parse(message))
      : [JSONRPCMessageSchema.parse(body)];
  } catch {
    return { status: 400, code: -32700, message: 'Parse error: Invalid JSON-RPC message' };
  }
}

export function checkProtocolVersion(request: FastifyRequest): JsonAnswerError | undefined {
  const version = request.headers['mcp-protocol-version'];
  if (version === undefined) return undefined;
  const value = Array.isArray(version) ? version.join(', ') : version;
  if (SUPPORTED_PROTOCOL_VERSIONS.includes(value)) return undefined;
  return {
    status: 400,
    code: -32000,
    message: `Bad Request: Unsupported protocol version: ${value} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
  };
}

// The kinds of messages already validated against JSONRPCMessageSchema, told apart by their members (the SDK's
// `isJSONRPC…` guards parse each message again with zod, several times per call).
/** A request: a method and an id (a notification has no id). */
export const isRequest = (message: JSONRPCMessage): message is JSONRPCRequest => 'method' in message && 'id' in message;
const isResult = (message: JSONRPCMessage): message is JSONRPCResultResponse => 'result' in message;
const isResponse = (message: JSONRPCMessage) => !('method' in message) && ('result' in message || 'error' in message);

/** Tool results whose text is exactly the JSON of their structured content, by the request they answer. */
export type SerializedResults = Map<RequestId, string>;

/**
 * The JSON of a response; a tool result registered in `serialized` reuses its text as the structured content's
 * JSON. Only the exact shape `dataResult` makes qualifies (one text block, the structured content, nothing else).
 */
export function responseJson(message: JSONRPCMessage, serialized: SerializedResults): string[] {
  if (!isResult(message)) return [JSON.stringify(message)];
  const text = serialized.get(message.id);
  if (text === undefined) return [JSON.stringify(message)];
  serialized.delete(message.id);
  const result = message.result as { content?: Array<Record<string, unknown>>; structuredContent?: unknown };
  const block = result.content?.[0];
  const shaped =
    Object.keys(message).length === 3 &&
    Object.keys(result).length === 2 &&
    result.structuredContent !== undefined &&
    result.content?.length === 1 &&
    Object.keys(block!).length === 2 &&
    block!.type === 'text' &&
    block!.text === text;
  if (!shaped) {
    // Not the shape the text stands for: the structured content (a stand-in) is the text's JSON, parsed.
    if (block?.text === text) result.structuredContent = JSON.parse(text);
    return [JSON.stringify(message)];
  }
  return dataResultJson(message.id, text);
}

/** The JSON of a response to `id` whose result is `dataResult`'s: `text` as its text block and structured content. */
export function dataResultJson(id: RequestId, text: string): string[] {
  return [
    '{"result":{"content":[{"type":"text","text":',
    JSON.stringify(text),
    '}],"structuredContent":',
    text,
    `},"jsonrpc":"2.0","id":${JSON.stringify(id)}}`,
  ];
}

/**
 * The answer's bytes, written piece by piece into one buffer: the pieces (tens of kilobytes for a page of leads) are
 * never joined into one more string on the heap first.
 */
export function bytesOf(parts: string[]): Buffer {
  let size = 0;
  for (const part of parts) size += Buffer.byteLength(part);
  const bytes = Buffer.allocUnsafe(size);
  let at = 0;
  for (const part of parts) at += bytes.write(part, at);
  return bytes;
}

/** Delivers one POST's messages to the MCP server and answers them on `reply`, once. */
export class JsonAnswerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  sessionId?: string;
  readonly serialized: SerializedResults = new Map();
  private readonly waiting = new Set<RequestId>();
  private readonly responses = new Map<RequestId, JSONRPCMessage>();
  private order: RequestId[] = [];
  private answer?: (body: Buffer) => void;
  private closed = false;

  async start(): Promise<void> {}

  /** Hands the messages over and resolves with the answer's body (undefined: notifications only, a 202). */
  handle(messages: JSONRPCMessage[], request: FastifyRequest): Promise<Buffer | undefined> {
    const requestInfo = { headers: request.headers as Record<string, string | string[] | undefined> };
    const requests = messages.filter(isRequest);
    if (!requests.length) {
      for (const message of messages) this.onmessage?.(message, { requestInfo });
      return Promise.resolve(undefined);
    }
    this.order = requests.map((m) => m.id);
    for (const id of this.order) this.waiting.add(id);
    const answered = new Promise<Buffer>((resolve) => {
      this.answer = resolve;
    });
    for (const message of messages) this.onmessage?.(message, { requestInfo });
    return answered;
  }

  /** Whether the answer is written (a close after it aborts nothing). */
  get answered(): boolean {
    return this.answer !== undefined && this.waiting.size === 0;
  }

  async send(message: JSONRPCMessage): Promise<void> {
    // Notifications (progress, logging) have nowhere to go on a JSON answer: the SDK's transport drops them too.
    if (!isResponse(message)) return;
    const id = (message as { id?: RequestId }).id;
    if (id === undefined || !this.waiting.delete(id)) {
      throw new Error(`No connection established for request ID: ${String(id)}`);
    }
    this.responses.set(id, message);
    if (this.waiting.size || !this.answer) return;
    // As the SDK's transport: one response is answered alone, even for a batch of one request.
    const parts: string[] = [];
    for (const id of this.order) {
      parts.push(parts.length ? ',' : '[');
      parts.push(...responseJson(this.responses.get(id)!, this.serialized));
    }
    if (this.order.length === 1) parts.shift();
    else parts.push(']');
    this.answer(bytesOf(parts));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
  }
}

/** A JSON-RPC error as the SDK's transport answers it. */
export function sendJsonError(reply: FastifyReply, error: JsonAnswerError) {
  return reply
    .code(error.status)
    .header('content-type', 'application/json')
    .send(JSON.stringify({ jsonrpc: '2.0', error: { code: error.code, message: error.message }, id: null }));
}
