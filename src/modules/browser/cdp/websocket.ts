/** A WebSocket client of a session's multiplexer: messages in, messages out, detach on close. */
import type { WebSocket } from 'ws';
import type { CdpMux } from './mux.ts';

/**
 * The largest message a client may send (what the service sends, screenshots of tens of MB, is not bounded by
 * it): enough for files a client hands a page as base64, small enough that no tenant makes the service buffer more.
 */
export const CDP_MAX_PAYLOAD = 64 * 1024 * 1024;

export interface AttachOptions {
  /** Whether the client counts as connected for idleness (users' clients do; the service's Playwright not). */
  counts: boolean;
  onOpen?: () => void;
  onClose?: () => void;
}

export function attachWebSocket(mux: CdpMux, ws: WebSocket, options: AttachOptions): void {
  // Messages that arrive while the browser session is being attached wait, in order.
  const early: string[] = [];
  let client: Awaited<ReturnType<CdpMux['attach']>> | undefined;
  let closed = false;
  ws.on('message', (data, isBinary) => {
    const text = isBinary ? Buffer.from(data as Buffer).toString('utf8') : String(data);
    if (client) client.receive(text);
    else early.push(text);
  });
  ws.on('error', () => ws.terminate());
  ws.once('close', () => {
    closed = true;
    client?.close();
    if (client && options.counts) options.onClose?.();
  });
  mux
    .attach({
      send: (text) => ws.send(text),
      close: (code, reason) => ws.close(code, reason),
      get bufferedAmount() {
        return ws.bufferedAmount;
      },
    })
    .then(
      (attached) => {
        if (closed) return attached.close();
        client = attached;
        if (options.counts) options.onOpen?.();
        for (const text of early.splice(0)) attached.receive(text);
      },
      () => ws.close(1011, 'the browser is gone'),
    );
}
