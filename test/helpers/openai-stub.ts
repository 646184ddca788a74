import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback server speaking the OpenAI chat-completions wire format (`POST /v1/chat/completions`):
 * plain and `response_format` (json_schema / json_object) answers, `tools` → `tool_calls`, SSE streaming
 * (`stream: true`: `data: {chunk}\n\n` … `data: [DONE]\n\n`, usage in a last chunk when
 * `stream_options.include_usage`), and OpenAI-shaped errors. Scripted per test: a queue of replies,
 * then a function of the request, then a default. Every request is recorded.
 */

export interface StubToolCall {
  id?: string;
  name: string;
  /** An object is JSON-encoded; a string is sent as is (e.g. to send malformed arguments). */
  arguments: unknown;
}

export interface StubUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

export interface StubSuccess {
  /** Assistant text. */
  content?: string;
  /** Shorthand for `content: JSON.stringify(json)` (structured output). */
  json?: unknown;
  toolCalls?: StubToolCall[];
  /** Default: estimated from the request and answer length (about 4 characters a token). */
  usage?: StubUsage;
  /** Default `tool_calls` when there are tool calls, else `stop`. */
  finishReason?: string;
  /** Wait this long before answering (timeouts, concurrency). */
  delayMs?: number;
}

export interface StubFailure {
  /** HTTP status of the failure, e.g. 500, 429, 401. */
  status: number;
  message?: string;
  headers?: Record<string, string>;
  delayMs?: number;
}

export type StubReply = StubSuccess | StubFailure;

export interface ChatRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The parsed JSON body: model, messages, response_format, tools, stream… */
  body: any;
}

export interface OpenAiStub {
  /** `http://127.0.0.1:<port>/v1`: the AI_BASE_URL. */
  baseURL: string;
  /** Every chat-completions request, in arrival order. */
  requests: ChatRequest[];
  /** Requests being answered right now, and the most there ever were at once. */
  readonly inFlight: number;
  readonly maxInFlight: number;
  /** Queue replies, answered in order before the responder is asked. */
  enqueue(...replies: StubReply[]): void;
  /** Answer requests the queue does not cover (default: a 500 saying nothing was scripted). */
  respond(fn: (request: ChatRequest) => StubReply | Promise<StubReply>): void;
  /** Empties the queue, the responder and the records. */
  reset(): void;
  close(): Promise<void>;
}

export interface OpenAiStubOptions {
  /** When set, requests without `Authorization: Bearer <apiKey>` answer 401. */
  apiKey?: string;
}

const isFailure = (r: StubReply): r is StubFailure => typeof (r as StubFailure).status === 'number';
const estimateTokens = (value: unknown) => Math.max(1, Math.ceil(JSON.stringify(value ?? '').length / 4));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startOpenAiStub(options: OpenAiStubOptions = {}): Promise<OpenAiStub> {
  const queue: StubReply[] = [];
  let responder: ((request: ChatRequest) => StubReply | Promise<StubReply>) | undefined;
  const requests: ChatRequest[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  let ids = 0;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      res.on('close', () => inFlight--);
      handle(req, res, Buffer.concat(chunks).toString('utf8')).catch((error: Error) => {
        if (!res.headersSent) sendError(res, 500, `stub failure: ${error.message}`);
        else res.end();
      });
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string) {
    const path = (req.url ?? '/').split('?')[0]!;
    if (options.apiKey && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      return sendError(res, 401, 'Incorrect API key provided', 'invalid_api_key');
    }
    if (req.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, {
        object: 'list',
        data: [{ id: 'stub-model', object: 'model', owned_by: 'quarry-tests' }],
      });
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions')
      return sendError(res, 404, `Unknown route ${req.method} ${path}`);
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      return sendError(res, 400, 'Request body is not valid JSON', 'invalid_request_error');
    }
    if (!Array.isArray(body?.messages))
      return sendError(res, 400, "'messages' is a required property", 'invalid_request_error');
    const request: ChatRequest = { path, headers: req.headers, body };
    requests.push(request);
    const reply: StubReply =
      queue.shift() ??
      (responder
        ? await responder(request)
        : { status: 500, message: 'openai-stub: no reply scripted for this request' });
    if (reply.delayMs) await sleep(reply.delayMs);
    if (res.destroyed) return;
    if (isFailure(reply))
      return sendError(res, reply.status, reply.message ?? `stub error ${reply.status}`, undefined, reply.headers);

    const id = `chatcmpl-stub-${++ids}`;
    const model = String(body.model ?? 'stub-model');
    const content =
      reply.json !== undefined ? JSON.stringify(reply.json) : (reply.content ?? (reply.toolCalls?.length ? null : ''));
    const toolCalls = (reply.toolCalls ?? []).map((t, i) => ({
      id: t.id ?? `call_${ids}_${i}`,
      type: 'function' as const,
      function: {
        name: t.name,
        arguments: typeof t.arguments === 'string' ? t.arguments : JSON.stringify(t.arguments ?? {}),
      },
    }));
    const finishReason = reply.finishReason ?? (toolCalls.length ? 'tool_calls' : 'stop');
    const u = reply.usage ?? {
      prompt_tokens: estimateTokens(body.messages),
      completion_tokens: estimateTokens(content ?? toolCalls),
    };
    const usage = { ...u, total_tokens: u.prompt_tokens + u.completion_tokens };
    const created = Math.floor(Date.now() / 1000);

    if (!body.stream) {
      const message = { role: 'assistant', content, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) };
      return sendJson(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message, finish_reason: finishReason }],
        usage,
      });
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const chunk = (delta: object, finish: string | null = null, extra: object = {}) => {
      const payload = {
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        choices: [{ index: 0, delta, finish_reason: finish }],
        ...extra,
      };
      return res.write(`data: ${JSON.stringify(payload)}\n\n`);
    };
    chunk({ role: 'assistant', content: '' });
    // Text in a few pieces, so clients see real incremental deltas.
    const text = content ?? '';
    const step = Math.max(1, Math.ceil(text.length / 4));
    for (let i = 0; i < text.length; i += step) chunk({ content: text.slice(i, i + step) });
    toolCalls.forEach((call, index) => {
      const args = call.function.arguments;
      const half = Math.ceil(args.length / 2);
      chunk({
        tool_calls: [
          {
            index,
            id: call.id,
            type: 'function',
            function: { name: call.function.name, arguments: args.slice(0, half) },
          },
        ],
      });
      chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] });
    });
    chunk({}, finishReason);
    if (body.stream_options?.include_usage) {
      res.write(
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`,
      );
    }
    res.end('data: [DONE]\n\n');
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    enqueue: (...replies) => void queue.push(...replies),
    respond: (fn) => void (responder = fn),
    reset() {
      queue.length = 0;
      responder = undefined;
      requests.length = 0;
      maxInFlight = inFlight;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** OpenAI's error body: `{error: {message, type, param, code}}`. */
function sendError(
  res: http.ServerResponse,
  status: number,
  message: string,
  code?: string,
  headers: Record<string, string> = {},
) {
  const type = status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error';
  sendJson(res, status, { error: { message, type, param: null, code: code ?? null } }, headers);
}

/** The JSON schema a request asked the answer to follow (`response_format.json_schema.schema`), if any. */
export const requestedSchema = (request: ChatRequest): any => request.body?.response_format?.json_schema?.schema;

/** All the text of a request's messages (system and user), for assertions on what the model was told. */
export const promptText = (request: ChatRequest): string =>
  (request.body.messages as Array<{ content: unknown }>)
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join('\n');
