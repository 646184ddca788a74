/**
 * How the service's own Playwright reaches a session: `connectOverCDP` wants a WebSocket URL, so a WebSocket
 * server on loopback whose path carries a random secret made for this process (docs/CONVENTIONS.md, Listeners).
 * It opens on first use and closes with the host.
 */
import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import type { CdpMux } from './mux.ts';
import { attachWebSocket, CDP_MAX_PAYLOAD } from './websocket.ts';

export class InternalCdpServer {
  #server?: Promise<{ wss: WebSocketServer; base: string }>;
  #secret = crypto.randomBytes(24).toString('base64url');
  #find: (sessionId: string) => CdpMux | undefined;

  constructor(find: (sessionId: string) => CdpMux | undefined) {
    this.#find = find;
  }

  /** ws://127.0.0.1:port/<secret>/<sessionId> */
  async urlOf(sessionId: string): Promise<string> {
    this.#server ??= this.#listen();
    const { base } = await this.#server;
    return `${base}/${this.#secret}/${sessionId}`;
  }

  async #listen(): Promise<{ wss: WebSocketServer; base: string }> {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: CDP_MAX_PAYLOAD });
    // A bad frame from any local process is a socket error of that connection, never the service's.
    wss.on('error', () => {});
    wss.on('connection', (ws, request) => {
      ws.on('error', () => ws.terminate());
      const [, secret, sessionId] = (request.url ?? '').split('/');
      const mux = secret === this.#secret && sessionId ? this.#find(sessionId) : undefined;
      if (!mux) return ws.close(1008, 'unknown');
      attachWebSocket(mux, ws, { counts: false });
    });
    await new Promise<void>((resolve) => wss.once('listening', resolve));
    const { port } = wss.address() as AddressInfo;
    return { wss, base: `ws://127.0.0.1:${port}` };
  }

  async close(): Promise<void> {
    const server = await this.#server;
    if (!server) return;
    for (const ws of server.wss.clients) ws.terminate();
    await new Promise<void>((resolve) => server.wss.close(() => resolve()));
  }
}
