import { createTestContext, type TestContext, type TestUser } from './app.ts';
import { type OpenAiStub, startOpenAiStub } from './openai-stub.ts';
import { type SearchStub, startSearchStub } from './search-stub.ts';

export interface AiContextOptions<S extends boolean = false> {
  /** The key the OpenAI stub demands and the service sends (AI_API_KEY); none when omitted. */
  apiKey?: string;
  /** Also start the web-search stub and point SEARCH_API_URL / SEARCH_API_KEY at it. */
  search?: S;
  /** More environment, over the defaults (AI_MODEL=stub-model, AI_MAX_RETRIES=0, …). */
  env?: Record<string, string>;
  /** Run pg-boss workers in this process (default false). */
  workers?: boolean;
}

export interface AiContext<S extends boolean = false> {
  ctx: TestContext;
  /** The loopback OpenAI-compatible server the service is configured with. */
  ai: OpenAiStub;
  /** The loopback search server, with `search: true`. */
  search: S extends true ? SearchStub : undefined;
  /** Closes the service, then the stubs. */
  close(): Promise<void>;
}

export interface AiTwoUserContext<S extends boolean = false> extends AiContext<S> {
  alice: TestUser;
  bob: TestUser;
}

/** The service configured against the loopback OpenAI stub (and, with `search: true`, the search stub). */
export async function createAiContext<S extends boolean = false>(
  options: AiContextOptions<S> = {},
): Promise<AiContext<S>> {
  const { apiKey } = options;
  const ai = await startOpenAiStub({ apiKey });
  let search: SearchStub | undefined;
  let ctx: TestContext;
  try {
    if (options.search) search = await startSearchStub();
    ctx = await createTestContext({
      workers: options.workers ?? false,
      env: {
        AI_BASE_URL: ai.baseURL,
        AI_MODEL: 'stub-model',
        ...(apiKey ? { AI_API_KEY: apiKey } : {}),
        AI_MAX_RETRIES: '0',
        ...(search ? { SEARCH_API_URL: search.url, SEARCH_API_KEY: search.key } : {}),
        ...options.env,
      },
    });
  } catch (error) {
    await Promise.all([ai.close(), search?.close()]);
    throw error;
  }
  const close = async () => {
    await ctx.close();
    await Promise.all([ai.close(), search?.close()]);
  };
  return { ctx, ai, search: search as AiContext<S>['search'], close };
}

/** `createAiContext` with two signed-up users, alice and bob. */
export async function createAiTwoUserContext<S extends boolean = false>(
  options: AiContextOptions<S> = {},
): Promise<AiTwoUserContext<S>> {
  const context = await createAiContext(options);
  try {
    const [alice, bob] = await Promise.all([context.ctx.signup(), context.ctx.signup()]);
    return { ...context, alice, bob };
  } catch (error) {
    await context.close();
    throw error;
  }
}
