/**
 * Several CDP clients over one Chromium pipe. Each client gets a browser session of its own
 * (`Target.attachToBrowserTarget`): its messages without a sessionId go to that session, its ids are remapped
 * to ids unique on the pipe and mapped back on the answer, events go to the owner of the session they arrive on
 * (a child session announced by `Target.attachedToTarget` belongs to whoever owns the session it arrived on), and
 * the client's own browser sessionId is stripped on the way back, so each client sees a browser of its own.
 */
import type { Readable, Writable } from 'node:stream';
import { type CommandPolicy, police } from './policy.ts';

/** What the multiplexer needs of a client connection (a WebSocket, or the service's own Playwright). */
export interface CdpSink {
  send(text: string): void;
  close(code: number, reason: string): void;
  /** Bytes queued and not yet sent; a client that stops reading is dropped instead of holding everyone's pipe. */
  readonly bufferedAmount: number;
}

export interface CdpClient {
  receive(text: string): void;
  /** Detaches the client's sessions; the browser and its pages stay. */
  close(): void;
}

interface Message {
  id?: number;
  method?: string;
  sessionId?: string;
  params?: Record<string, unknown> & { sessionId?: string };
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

interface ClientState {
  sink: CdpSink;
  browserSession: string;
  sessions: Set<string>;
  closed: boolean;
}

/** A client that leaves this much unsent is too slow for a shared pipe. */
const MAX_BUFFERED_BYTES = 256 * 1024 * 1024;

export class CdpMux {
  #input: Writable;
  #nextId = 1;
  #pending = new Map<number, { resolve: (m: Message) => void }>();
  #routes = new Map<number, { client: ClientState; id: number }>();
  #owners = new Map<string, ClientState>();
  #clients = new Set<ClientState>();
  #closed = false;
  /**
   * Clients' `Browser.close` commands not yet answered (by pipe id, whoever sent them, a client that left since
   * included), and whether Chromium accepted one: the browser then exits because it was asked to, which ends the
   * session as released by its client, not as a failure.
   */
  #closesUnanswered = new Set<number>();
  #closeAccepted = false;
  /** A browser session attached ahead of the first client (see `prepareAttach`). */
  #spare: Promise<Message> | undefined;
  /** Called on every message a client sends (idleness is measured by the session host). */
  onActivity: () => void = () => {};

  #policy: CommandPolicy;

  constructor(input: Writable, output: Readable, policy: CommandPolicy) {
    this.#input = input;
    this.#policy = policy;
    let chunks: Buffer[] = [];
    output.on('data', (data: Buffer) => {
      let start = 0;
      for (let end = data.indexOf(0); end >= 0; end = data.indexOf(0, start)) {
        chunks.push(data.subarray(start, end));
        const raw = Buffer.concat(chunks).toString('utf8');
        chunks = [];
        start = end + 1;
        this.#dispatch(raw);
      }
      if (start < data.length) chunks.push(data.subarray(start));
    });
    output.once('close', () => this.close('the browser closed'));
  }

  /** Whether a client closed the browser (`Browser.close`, accepted or still unanswered). */
  get closedByClient(): boolean {
    return this.#closeAccepted || this.#closesUnanswered.size > 0;
  }

  get clientCount(): number {
    return this.#clients.size;
  }

  #write(message: Message): void {
    if (!this.#closed) this.#input.write(`${JSON.stringify(message)}\0`);
  }

  /** A command of the service itself (not routed to any client). */
  call(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Message> {
    if (this.#closed) return Promise.reject(new Error('the browser closed'));
    return new Promise((resolve) => {
      const id = this.#nextId++;
      this.#pending.set(id, { resolve });
      this.#write({ id, method, params, ...(sessionId ? { sessionId } : {}) });
    });
  }

  #dispatch(raw: string): void {
    let message: Message;
    try {
      message = JSON.parse(raw) as Message;
    } catch {
      return;
    }
    if (!isObject(message)) return;
    if (message.id !== undefined) {
      const own = this.#pending.get(message.id);
      if (own) {
        this.#pending.delete(message.id);
        own.resolve(message);
        return;
      }
      if (this.#closesUnanswered.delete(message.id) && !message.error) this.#closeAccepted = true;
      const route = this.#routes.get(message.id);
      if (!route) return;
      this.#routes.delete(message.id);
      message.id = route.id;
      this.#deliver(route.client, message);
      return;
    }
    if (message.method === 'Target.attachedToTarget' && message.sessionId && message.params?.sessionId) {
      const owner = this.#owners.get(message.sessionId);
      if (owner) {
        this.#owners.set(message.params.sessionId, owner);
        owner.sessions.add(message.params.sessionId);
      }
    }
    const owner = message.sessionId ? this.#owners.get(message.sessionId) : undefined;
    if (message.method === 'Target.detachedFromTarget' && message.params?.sessionId) {
      const child = this.#owners.get(message.params.sessionId);
      this.#owners.delete(message.params.sessionId);
      child?.sessions.delete(message.params.sessionId);
    }
    if (owner) this.#deliver(owner, message);
  }

  #deliver(client: ClientState, message: Message): void {
    if (client.closed) return;
    if (message.sessionId === client.browserSession) delete message.sessionId;
    if (client.sink.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.#drop(client);
      client.sink.close(1013, 'the client does not read fast enough');
      return;
    }
    client.sink.send(JSON.stringify(message));
  }

  /**
   * Attaches a browser session now for the next client: a Chromium that has just started answers slowly for a
   * while (tens of ms a command), and the first client's connect then waits for one round trip less.
   */
  prepareAttach(): void {
    this.#spare ??= this.call('Target.attachToBrowserTarget');
  }

  /**
   * Gives a new client its own browser session: the one attached ahead for users' clients, unless `spare` is false
   * (the service's own clients leave it for the first user's connection).
   */
  async attach(sink: CdpSink, { spare: useSpare = true }: { spare?: boolean } = {}): Promise<CdpClient> {
    const spare = useSpare ? this.#spare : undefined;
    if (useSpare) this.#spare = undefined;
    const answer = await (spare ?? this.call('Target.attachToBrowserTarget'));
    const browserSession = answer.result?.sessionId;
    if (typeof browserSession !== 'string') throw new Error(answer.error?.message ?? 'no browser session');
    const client: ClientState = { sink, browserSession, sessions: new Set([browserSession]), closed: false };
    this.#owners.set(browserSession, client);
    this.#clients.add(client);
    return {
      receive: (text) => this.#receive(client, text),
      close: () => {
        if (client.closed) return;
        this.#drop(client);
        void this.call('Target.detachFromTarget', { sessionId: browserSession }).catch(() => {});
      },
    };
  }

  #receive(client: ClientState, text: string): void {
    if (client.closed) return;
    let message: Message;
    try {
      message = JSON.parse(text) as Message;
    } catch {
      client.sink.close(1007, 'not JSON');
      return;
    }
    // `null`, an array or a number parse as JSON too: none is a command (and reading a field of null would throw).
    if (!isObject(message) || typeof message.id !== 'number' || typeof message.method !== 'string') {
      client.sink.close(1007, 'not a CDP command');
      return;
    }
    this.onActivity();
    // A client drives its own sessions only, never another client's.
    if (message.sessionId !== undefined && !client.sessions.has(message.sessionId)) {
      const error = { code: -32001, message: `Session with given id not found: ${message.sessionId}` };
      client.sink.send(JSON.stringify({ id: message.id, sessionId: message.sessionId, error }));
      return;
    }
    const refused = police(message, this.#policy);
    if (refused) {
      client.sink.send(
        JSON.stringify({ id: message.id, sessionId: message.sessionId, error: { code: -32000, message: refused } }),
      );
      return;
    }
    const id = this.#nextId++;
    // Chromium answers Browser.close and exits right after: the exit must be known as asked for before it comes.
    if (message.method === 'Browser.close') this.#closesUnanswered.add(id);
    this.#routes.set(id, { client, id: message.id });
    this.#write({ ...message, id, sessionId: message.sessionId ?? client.browserSession });
  }

  #drop(client: ClientState): void {
    client.closed = true;
    this.#clients.delete(client);
    for (const session of client.sessions) if (this.#owners.get(session) === client) this.#owners.delete(session);
    for (const [id, route] of this.#routes) if (route.client === client) this.#routes.delete(id);
  }

  /** The browser went away (or is being closed): every client is told and dropped. */
  close(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const client of [...this.#clients]) {
      this.#drop(client);
      client.sink.close(1011, reason);
    }
    for (const { resolve } of this.#pending.values()) resolve({ error: { code: -32000, message: reason } });
    this.#pending.clear();
  }
}

const isObject = (value: unknown): value is Message =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
