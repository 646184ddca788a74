import type { LanguageModelMiddleware } from 'ai';
import { newId } from '../../shared/ids.ts';

/**
 * Gives every tool call the model makes a server-made unique id (UUIDv7), before the AI SDK sees it.
 * Providers do not guarantee unique ids (a model may say `call_1` in every turn, or twice in one step),
 * while the history, the approvals (unique per conversation and call) and the pairing of calls with
 * results all key on them. Rewritten at the source, the SDK pairs calls with results by the server id
 * in the loop, in the approval requests, in the SSE events and in the stored history, and replays
 * that history to the provider with matching call / result ids.
 * Provider-executed calls keep the provider's id: the provider pairs those itself.
 */
export const serverToolCallIds: LanguageModelMiddleware = {
  wrapGenerate: async ({ doGenerate }) => {
    const result = await doGenerate();
    return {
      ...result,
      content: result.content.map((part) =>
        part.type === 'tool-call' && !part.providerExecuted ? { ...part, toolCallId: newId() } : part,
      ),
    };
  },

  wrapStream: async ({ doStream }) => {
    const result = await doStream();
    // A streamed call is `tool-input-start/-delta/-end` then `tool-call`, all under the provider's id:
    // the id a call's input starts under stays its server id until its `tool-call` arrives.
    const open = new Map<string, string>();
    const serverIdOf = (providerId: string) => open.get(providerId) ?? open.set(providerId, newId()).get(providerId)!;
    type Part = typeof result.stream extends ReadableStream<infer P> ? P : never;
    const rewrite = new TransformStream<Part, Part>({
      transform(part, controller) {
        switch (part.type) {
          case 'tool-input-start':
            if (part.providerExecuted) break;
            open.set(part.id, newId());
            return controller.enqueue({ ...part, id: open.get(part.id)! });
          case 'tool-input-delta':
          case 'tool-input-end':
            if (open.has(part.id)) return controller.enqueue({ ...part, id: open.get(part.id)! });
            break;
          case 'tool-call': {
            if (part.providerExecuted) break;
            const toolCallId = serverIdOf(part.toolCallId);
            open.delete(part.toolCallId);
            return controller.enqueue({ ...part, toolCallId });
          }
        }
        controller.enqueue(part);
      },
    });
    return { ...result, stream: result.stream.pipeThrough(rewrite) };
  },
};
