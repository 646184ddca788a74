import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../shared/errors.ts';
import { clientClosedError } from '../../shared/http.ts';
import { openEventStream } from '../../shared/sse.ts';
import type { Turn, TurnEvents } from './chat.service.ts';

const KEEPALIVE_MS = 15_000;

export const wantsEventStream = (request: FastifyRequest) =>
  /\btext\/event-stream\b/i.test(request.headers.accept ?? '');

/**
 * Runs a turn for one HTTP request: JSON (the `{success, data}` envelope) or, with
 * `Accept: text/event-stream`, Server-Sent Events as it happens (see chatStreamEvents). A client
 * that goes away aborts the model call; nothing of an aborted turn is stored.
 */
export async function respondWithTurn<T extends { message: { id: string } }>(
  request: FastifyRequest,
  reply: FastifyReply,
  turn: Turn<T>,
) {
  const controller = new AbortController();
  // An AppError reason: on the JSON path the abort reaches the error handler, which must not log it as a 500.
  const onClose = () => {
    if (!reply.raw.writableFinished) controller.abort(clientClosedError());
  };
  reply.raw.on('close', onClose);
  // Gone while the request was read and authenticated: 'close' has fired already, so stop before the model runs.
  if (reply.raw.destroyed) onClose();
  if (!wantsEventStream(request)) {
    try {
      return { success: true as const, data: await turn.run(controller.signal) };
    } finally {
      reply.raw.off('close', onClose);
    }
  }

  const { raw, send, keepAlive } = openEventStream(reply);
  const stopKeepAlive = keepAlive(KEEPALIVE_MS);
  const events: TurnEvents = {
    textDelta: (delta) => send('text-delta', { delta }),
    toolCall: (call) => send('tool-call', call),
    toolResult: (result) => send('tool-result', result),
    approvalRequired: (approval) => send('approval-required', approval),
  };
  try {
    const result = await turn.run(controller.signal, events);
    send('done', { messageId: result.message.id });
  } catch (error) {
    if (!controller.signal.aborted) {
      if (!(error instanceof AppError)) request.log.error({ err: error, reqId: request.id }, 'chat turn failed');
      const e = error instanceof AppError ? error : new AppError('INTERNAL_ERROR', 'Internal server error');
      send('error', { code: e.code, message: e.message });
    }
  } finally {
    stopKeepAlive();
    raw.off('close', onClose);
    raw.end();
  }
}
