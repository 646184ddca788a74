import type { Transformer } from 'node:stream/web';
import {
  APICallError,
  generateText,
  type LanguageModelUsage,
  type ModelMessage,
  RetryError,
  type StepResult,
  stepCountIs,
  streamText,
  type ToolSet,
  wrapLanguageModel,
} from 'ai';
import type { AppDeps } from '../../deps.ts';
import { AppError } from '../../shared/errors.ts';
import { serverToolCallIds } from './chat.ids.ts';
import { buildTools, type ChatToolDeps, readToolNames, type ToolActor, writeTools } from './chat.tools.ts';

/** Model calls (steps) one turn may make: tool round trips plus the final answer. */
export const MAX_STEPS = 8;

export type AgentDeps = ChatToolDeps & Pick<AppDeps, 'ai' | 'config'>;

/** Live progress of a turn, for the SSE stream (the JSON answer ignores it). */
export interface AgentEvents {
  textDelta(delta: string): void;
  toolCall(call: { toolCallId: string; toolName: string; input: unknown }): void;
  toolResult(result: { toolCallId: string; toolName: string; output: unknown; isError?: boolean }): void;
}

/** A write-tool call the model made; the turn stops there until the user decides. */
export interface ApprovalRequest {
  toolCallId: string;
  toolName: string;
  input: unknown;
}

export interface AgentResult {
  /** The assistant and tool messages of the turn, as the AI SDK gives them (stored verbatim). */
  messages: ModelMessage[];
  approvalRequests: ApprovalRequest[];
}

export function systemPrompt(now: Date): string {
  return [
    'You are the assistant of Quarry, a lead-scraping service. Users define scraping sources (a start URL,',
    'a scrape type STATIC/DYNAMIC/API and CSS/XPath/JSONPath selectors), activate them, run jobs that crawl',
    'them, and work with the leads (people: name, email, company, job title, status, tags) the jobs find.',
    `Today is ${now.toISOString().slice(0, 10)}.`,
    '',
    `Read tools, which run at once: ${readToolNames.join(', ')}.`,
    `Write tools: ${Object.keys(writeTools).join(', ')}. Write actions need the user's approval: when you call`,
    'one, nothing happens until the user approves it in the app, and the conversation pauses. Once they decide,',
    'you receive the outcome as the tool result (or a rejection); then report it briefly.',
    'Only call a write tool when the user asked for that change. Use tools to look things up rather than guessing',
    'ids; never invent data. Answer concisely in the language of the user.',
  ].join('\n');
}

/**
 * The configured model with each call (step) inside the shared AI concurrency bound (a streamed
 * call holds its slot until its stream ends or is abandoned), and server-made tool-call ids.
 */
function boundedModel(deps: Pick<AppDeps, 'ai'>) {
  return wrapLanguageModel({
    model: deps.ai.model(),
    middleware: [
      {
        wrapGenerate: ({ doGenerate, params }) => deps.ai.limit(async () => doGenerate(), params.abortSignal),
        wrapStream: async ({ doStream, params }) => {
          let release!: () => void;
          const held = new Promise<void>((resolve) => (release = resolve));
          const result = await new Promise<Awaited<ReturnType<typeof doStream>>>((resolve, reject) => {
            deps.ai
              .limit(async () => {
                try {
                  resolve(await doStream());
                } catch (error) {
                  reject(error);
                  return;
                }
                await held;
              }, params.abortSignal)
              .catch(reject);
          });
          params.abortSignal?.addEventListener('abort', () => release(), { once: true });
          const done = new TransformStream({ flush: () => release(), cancel: () => release() } as Transformer);
          return { ...result, stream: result.stream.pipeThrough(done) };
        },
      },
      serverToolCallIds,
    ],
  });
}

/** Provider failures as the API reports them (502, no provider text); an abort stays an abort. */
export function toAgentError(error: unknown, signal?: AbortSignal): unknown {
  if (signal?.aborted) return signal.reason ?? error;
  if (error instanceof AppError) return error;
  const cause = RetryError.isInstance(error) ? error.lastError : error;
  if (APICallError.isInstance(cause)) {
    const what = cause.statusCode ? `answered HTTP ${cause.statusCode}` : 'could not be reached';
    return new AppError('AI_PROVIDER_ERROR', `The AI provider ${what}`);
  }
  if ((cause as Error)?.name === 'TimeoutError' || (cause as Error)?.name === 'AbortError') {
    return new AppError('AI_PROVIDER_ERROR', 'The AI provider did not answer in time');
  }
  return new AppError('AI_PROVIDER_ERROR', 'The AI provider call failed');
}

/** Write-tool calls the turn stopped on: the SDK's `tool-approval-request` parts with their calls. */
function approvalRequestsOf(messages: ModelMessage[]): ApprovalRequest[] {
  const calls = new Map<string, { toolName: string; input: unknown }>();
  const requests: ApprovalRequest[] = [];
  for (const message of messages) {
    if (message.role !== 'assistant' || typeof message.content === 'string') continue;
    for (const part of message.content) {
      if (part.type === 'tool-call') calls.set(part.toolCallId, { toolName: part.toolName, input: part.input });
    }
    for (const part of message.content) {
      if (part.type !== 'tool-approval-request') continue;
      const call = calls.get(part.toolCallId);
      if (call) requests.push({ toolCallId: part.toolCallId, ...call });
    }
  }
  return requests;
}

export interface RunAgentOptions {
  actor: ToolActor;
  history: ModelMessage[];
  signal: AbortSignal;
  /** Streams the turn (SSE) when given; otherwise one generateText call. */
  events?: AgentEvents;
}

/**
 * One agent turn over the server-side history: read tools run inside the loop, a write-tool call
 * ends it with an approval request. Tokens are recorded per step, so a turn that fails later still counts.
 */
export async function runAgent(deps: AgentDeps, options: RunAgentOptions): Promise<AgentResult> {
  const { actor, history, signal, events } = options;
  const common = {
    model: boundedModel(deps),
    system: systemPrompt(deps.clock.now()),
    messages: history,
    tools: buildTools(deps, actor),
    stopWhen: stepCountIs(MAX_STEPS),
    maxRetries: deps.config.AI_MAX_RETRIES,
    timeout: { stepMs: deps.config.AI_TIMEOUT_MS },
    abortSignal: signal,
    onStepFinish: (step: StepResult<ToolSet>) => deps.ai.recordUsage(actor.userId, 'chat', usageOf(step.usage)),
  };
  try {
    if (!events) {
      const result = await generateText(common);
      return { messages: result.responseMessages, approvalRequests: approvalRequestsOf(result.responseMessages) };
    }
    const result = streamText({ ...common, onError: () => {} });
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') events.textDelta(part.text);
      else if (part.type === 'tool-call')
        events.toolCall({ toolCallId: part.toolCallId, toolName: part.toolName, input: part.input });
      else if (part.type === 'tool-result')
        events.toolResult({ toolCallId: part.toolCallId, toolName: part.toolName, output: part.output });
      else if (part.type === 'tool-error') {
        events.toolResult({
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          output: { error: errorText(part.error) },
          isError: true,
        });
      } else if (part.type === 'error') throw part.error;
      else if (part.type === 'abort') throw signal.reason ?? new Error('aborted');
    }
    const messages = await result.responseMessages;
    return { messages, approvalRequests: approvalRequestsOf(messages) };
  } catch (error) {
    throw toAgentError(error, signal);
  }
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

const usageOf = (u: LanguageModelUsage) => ({
  inputTokens: u.inputTokens,
  outputTokens: u.outputTokens,
  totalTokens: u.totalTokens,
});
