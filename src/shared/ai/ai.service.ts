import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  APICallError,
  generateText,
  type LanguageModel,
  type LanguageModelUsage,
  NoObjectGeneratedError,
  Output,
} from 'ai';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/client.ts';
import { aiUsage } from '../../db/schema/index.ts';
import { type Clock, systemClock } from '../clock.ts';
import type { Credits } from '../credits.ts';
import { AppError } from '../errors.ts';
import { createLimiter } from './limiter.ts';
import { withRetries } from './retry.ts';

/** A model object (not a gateway id string): what the OpenAI-compatible provider gives. */
export type AiModel = Exclude<LanguageModel, string>;

/** Token counts as the AI SDK reports them; missing counts are stored as 0. */
export type AiUsage = Partial<Pick<LanguageModelUsage, 'inputTokens' | 'outputTokens' | 'totalTokens'>>;

export interface GenerateObjectRequest<T> {
  /** Whose credits the tokens count against. */
  userId: string;
  /** What asked, recorded with the usage: `sources.discover`, `matching.ai`… */
  feature: string;
  /**
   * The answer must parse and validate against this schema (keep it strict-mode friendly: no optional keys, use
   * nullable).
   */
  schema: z.ZodType<T>;
  /** json_schema name shown to the model (letters, digits, `_`, `-`). */
  schemaName?: string;
  system?: string;
  prompt: string;
  /** The caller's cancellation (e.g. the HTTP client went away); not retried. */
  signal?: AbortSignal;
}

export interface AiService {
  /** AI_BASE_URL and AI_MODEL are set. */
  readonly configured: boolean;
  readonly modelId: string | undefined;
  /**
   * Structured output validated by `schema` (then NUL stripped from its strings), inside the concurrency bound, with
   * timeout, retries and usage recording.
   */
  generateObject<T>(request: GenerateObjectRequest<T>): Promise<T>;
  /** The model itself, for callers that drive the SDK directly (tool calling, streaming chat). */
  model(): AiModel;
  /**
   * 402 INSUFFICIENT_CREDITS unless `userId` can pay for at least one block of AI tokens; `generateObject`
   * checks it itself, callers that drive the model directly (chat) call it before they start.
   */
  assertCredits(userId: string): Promise<void>;
  /**
   * Records one call's tokens for `userId` and `feature` and charges them as credits, in one transaction
   * (never throws: a failed write is logged). Tokens already used are charged down to a zero balance.
   */
  recordUsage(userId: string, feature: string, usage: AiUsage | undefined, modelId?: string): Promise<void>;
  /** Runs `fn` inside the same process-wide concurrency bound as `generateObject`. */
  limit<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T>;
}

export interface AiServiceDeps {
  config: Config;
  db: Db;
  logger: Logger;
  clock?: Clock;
  /** Metering of AI tokens; without it nothing is charged. */
  credits?: Credits;
}

export interface AiServiceOverrides {
  /** Ceiling of the first retry backoff, ms (default 500; doubles per attempt, capped at 8 s). */
  retryBaseDelayMs?: number;
}

/** Thrown inside an attempt when AI_TIMEOUT_MS ran out (not retried: the caller is already waiting). */
class AttemptTimeout extends Error {}

const notConfigured = () =>
  new AppError(
    'AI_NOT_CONFIGURED',
    'No AI provider is configured: set AI_BASE_URL and AI_MODEL (and AI_API_KEY if the endpoint needs one)',
  );

const isRetryable = (error: unknown) => APICallError.isInstance(error) && error.isRetryable;

/**
 * The value with NUL (U+0000) removed from every string, keys included, however deep. Model output is
 * often stored, and PostgreSQL text/jsonb cannot hold NUL: the insert would fail long after the call.
 */
export function withoutNul<T>(value: T): T {
  if (typeof value === 'string') return (value.includes('\u0000') ? value.replaceAll('\u0000', '') : value) as T;
  if (Array.isArray(value)) return value.map(withoutNul) as T;
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [withoutNul(k), withoutNul(v)])) as T;
  }
  return value;
}

export function createAiService(deps: AiServiceDeps, overrides: AiServiceOverrides = {}): AiService {
  const { config, db, logger } = deps;
  const clock = deps.clock ?? systemClock;
  const model: AiModel | undefined =
    config.AI_BASE_URL && config.AI_MODEL
      ? createOpenAICompatible({
          name: 'openai-compatible',
          baseURL: config.AI_BASE_URL,
          apiKey: config.AI_API_KEY,
          // json_schema response formats (vLLM, Ollama, OpenAI and most compatible servers accept them).
          supportsStructuredOutputs: true,
          includeUsage: true,
        }).chatModel(config.AI_MODEL)
      : undefined;
  const modelId = config.AI_MODEL;
  const limiter = createLimiter(config.AI_CONCURRENCY);
  const baseDelayMs = overrides.retryBaseDelayMs ?? 500;
  const secret = config.AI_API_KEY;
  // Provider messages may quote what they were sent; the key never reaches a log line.
  const redact = (text: string) => (secret ? text.split(secret).join('[redacted]') : text);

  async function recordUsage(
    userId: string,
    feature: string,
    usage: AiUsage | undefined,
    usedModel?: string,
  ): Promise<void> {
    if (!usage) return;
    const inputTokens = usage.inputTokens ?? 0;
    const outputTokens = usage.outputTokens ?? 0;
    const totalTokens = usage.totalTokens ?? inputTokens + outputTokens;
    try {
      await db.transaction(async (tx) => {
        await tx.insert(aiUsage).values({
          userId,
          feature,
          model: usedModel ?? modelId ?? 'unknown',
          inputTokens,
          outputTokens,
          totalTokens,
          createdAt: clock.now(),
        });
        await deps.credits?.spend(tx, userId, 'ai_tokens', totalTokens, { partial: true, reason: feature });
      });
    } catch (err) {
      logger.error({ err, userId, feature }, 'could not record AI usage');
    }
  }

  async function assertCredits(userId: string): Promise<void> {
    await deps.credits?.assert(db, userId, 'ai_tokens', 1);
  }

  function toAppError(error: unknown, attempts: number): AppError {
    if (error instanceof AppError) return error;
    const after = attempts > 1 ? ` after ${attempts} attempts` : '';
    if (error instanceof AttemptTimeout)
      return new AppError('AI_PROVIDER_ERROR', `The AI provider did not answer within ${config.AI_TIMEOUT_MS} ms`);
    if (NoObjectGeneratedError.isInstance(error))
      return new AppError('AI_PROVIDER_ERROR', "The AI provider's answer did not match the expected structure");
    if (APICallError.isInstance(error)) {
      const what = error.statusCode ? `answered HTTP ${error.statusCode}` : 'could not be reached';
      return new AppError('AI_PROVIDER_ERROR', `The AI provider ${what}${after}`);
    }
    return new AppError('AI_PROVIDER_ERROR', `The AI provider call failed${after}`);
  }

  return {
    configured: model !== undefined,
    modelId,

    async generateObject<T>(request: GenerateObjectRequest<T>): Promise<T> {
      if (!model) throw notConfigured();
      const { userId, feature, schema, schemaName, system, prompt, signal } = request;
      await assertCredits(userId);
      let attempts = 0;
      try {
        return await withRetries(
          async () => {
            // The slot is held per attempt (not across the backoff), and the timeout starts once the slot is ours.
            const result = await limiter
              .run(async () => {
                attempts++;
                const timeout = AbortSignal.timeout(config.AI_TIMEOUT_MS);
                const abortSignal = signal ? AbortSignal.any([signal, timeout]) : timeout;
                try {
                  return await generateText({
                    model,
                    system,
                    prompt,
                    output: Output.object({ schema, name: schemaName }),
                    maxRetries: 0,
                    abortSignal,
                  });
                } catch (error) {
                  if (timeout.aborted && !signal?.aborted) throw new AttemptTimeout();
                  throw error;
                }
              }, signal)
              .catch(async (error: unknown) => {
                // A malformed answer still cost tokens.
                if (NoObjectGeneratedError.isInstance(error)) await recordUsage(userId, feature, error.usage);
                throw error;
              });
            await recordUsage(userId, feature, result.totalUsage);
            return withoutNul(result.output as T);
          },
          {
            retries: config.AI_MAX_RETRIES,
            baseDelayMs,
            maxDelayMs: 8_000,
            shouldRetry: isRetryable,
            signal,
            onRetry: (error, attempt, delayMs) =>
              logger.warn(
                { feature, attempt, delayMs, status: APICallError.isInstance(error) ? error.statusCode : undefined },
                'AI call failed, retrying',
              ),
          },
        );
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        const mapped = toAppError(error, attempts);
        logger.warn(
          {
            feature,
            attempts,
            code: mapped.code,
            status: APICallError.isInstance(error) ? error.statusCode : undefined,
            cause: redact(String((error as Error)?.message ?? error)),
          },
          'AI call failed',
        );
        throw mapped;
      }
    },

    model() {
      if (!model) throw notConfigured();
      return model;
    },

    assertCredits,

    recordUsage,

    limit: (fn, signal) => limiter.run(fn, signal),
  };
}
