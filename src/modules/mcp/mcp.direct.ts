/**
 * The cheap way to call a read route from a tool: its own handler, in-process, without a second HTTP pass
 * (`app.inject` costs as much CPU as a whole REST request: a fake socket pair, routing, the hook chain, a serialized
 * answer read back). It takes the same decisions as the HTTP pass, in the same order, or steps aside:
 *
 * - only GET routes with no route-level hook (a write carries idempotency hooks, a forwarded browser route its
 *   forwarder), registered on the app itself (a child scope may hold hooks of its own, a plugin's): the global
 *   chain is the auth hook, the NUL check and the route's zod validation, done here;
 * - the caller's principal is the one the `/mcp` request authenticated with the same key; the route's scope goes
 *   through the same `authorize`;
 * - the query and path parameters are what Fastify would parse from the URL `argumentsToRequest` builds;
 * - the answer is serialized by the route's own response serializer (only declared fields leave);
 * - a refused scope, a NUL, a validation failure, an unusual path segment or an error that is not an `AppError`
 *   answers `undefined`: the caller then runs the route through `app.inject`, which answers it exactly as over
 *   HTTP (a read runs again at worst, only on those paths).
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import type { Principal } from '../../shared/auth.ts';
import { authorize } from '../../shared/authorization.ts';
import { AppError } from '../../shared/errors.ts';
import { responseSerializerCompiler } from '../../shared/serializer.ts';
import type { CatalogRoute } from './mcp.catalog.ts';

/** What a route answered, as the tool result is made from it (either path). */
export interface RouteAnswer {
  status: number;
  /** Content type. */
  type: string;
  body: string;
  /** The raw bytes when the answer is binary (an image). */
  raw?: Buffer;
  /** Set when `body` is exactly `{"success":true,"data":<dataJson>}` (a success envelope, as the serializer wrote it). */
  dataJson?: string;
}

export interface DirectRequest {
  params: Record<string, string>;
  query: Record<string, string | string[]>;
  headers: Record<string, string>;
  url: string;
  principal: Principal;
}

type Handler = (this: FastifyInstance, request: unknown, reply: unknown) => unknown;

const HOOKS = [
  'onRequest',
  'preParsing',
  'preValidation',
  'preHandler',
  'preSerialization',
  'onSend',
  'onResponse',
  'onError',
  'onTimeout',
  'onRequestAbort',
] as const;

/** Path segments Fastify hands to the handler exactly as written (no decoding, no 404 for length). */
const PLAIN_SEGMENT = /^[A-Za-z0-9_~-][A-Za-z0-9_.~-]{0,499}$/;

export interface DirectRoute {
  /** The answer, or undefined: run the route through `app.inject` instead. */
  call(request: DirectRequest): Promise<RouteAnswer | undefined>;
}

/** Whether a query value holds U+0000 (the app's preValidation hook refuses it: inject then answers that). */
function hasNul(value: unknown): boolean {
  // A lone surrogate would not survive the URL either (it becomes U+FFFD): leave that to the HTTP pass too.
  if (typeof value === 'string') return value.includes('\u0000') || !value.isWellFormed();
  if (Array.isArray(value)) return value.some(hasNul);
  return false;
}

/** What a handler does with its reply, recorded (the part of Fastify's reply the route handlers use). */
class ReplyRecorder {
  statusCode = 200;
  sent = false;
  payload: unknown;
  readonly recorded: Record<string, string> = {};
  code(code: number) {
    this.statusCode = code;
    return this;
  }
  status(code: number) {
    this.statusCode = code;
    return this;
  }
  header(name: string, value: unknown) {
    this.recorded[name.toLowerCase()] = String(value);
    return this;
  }
  headers(values: Record<string, unknown>) {
    for (const [name, value] of Object.entries(values)) this.recorded[name.toLowerCase()] = String(value);
    return this;
  }
  getHeader(name: string) {
    return this.recorded[name.toLowerCase()];
  }
  hasHeader(name: string) {
    return name.toLowerCase() in this.recorded;
  }
  type(value: string) {
    this.recorded['content-type'] = value;
    return this;
  }
  send(payload?: unknown) {
    this.sent = true;
    this.payload = payload;
    return this;
  }
}

let sequence = 0;
const DATA_PREFIX = '{"success":true,"data":';

/** The direct path of a route, or undefined when only `app.inject` may call it. */
export function directRoute(app: FastifyInstance, route: CatalogRoute): DirectRoute | undefined {
  const options = route.options as RouteOptions & { schema?: { headers?: unknown } };
  if (route.method !== 'GET' || route.scoped || route.body || options.schema?.headers) return undefined;
  if (typeof options.handler !== 'function') return undefined;
  for (const hook of HOOKS) {
    const value = options[hook as keyof RouteOptions];
    if (value !== undefined && (!Array.isArray(value) || value.length > 0)) return undefined;
  }
  const handler = options.handler as Handler;
  const serializers = new Map<number, { serialize: (data: unknown) => string; envelope: boolean }>();
  const serializerFor = (status: number) => {
    let serializer = serializers.get(status);
    if (!serializer) {
      const schema = route.response[status] ?? route.response[`${String(status)[0]}xx`];
      const shape = (schema as { shape?: Record<string, unknown> } | undefined)?.shape;
      serializer = {
        serialize: schema
          ? responseSerializerCompiler({ schema, method: route.method, url: route.url, httpStatus: String(status) })
          : JSON.stringify,
        // `{ success, data }` and nothing else: the serializer writes `{"success":true,"data":…}`.
        envelope: shape !== undefined && Object.keys(shape).join() === 'success,data',
      };
      serializers.set(status, serializer);
    }
    return serializer;
  };
  const routeOptions = { method: route.method, url: route.url, config: options.config ?? {} };

  return {
    async call(input) {
      if (route.scope && !authorize(input.principal, route.scope).allowed) return undefined;
      for (const value of Object.values(input.params)) if (!PLAIN_SEGMENT.test(value)) return undefined;
      for (const value of Object.values(input.query)) if (hasNul(value)) return undefined;
      let params: unknown = input.params;
      let query: unknown = input.query;
      if (route.params) {
        const parsed = route.params.safeParse(params);
        if (!parsed.success) return undefined;
        params = parsed.data;
      }
      if (route.querystring) {
        const parsed = route.querystring.safeParse(query);
        if (!parsed.success) return undefined;
        query = parsed.data;
      }

      const reply = new ReplyRecorder();
      const request = {
        id: `mcp-${++sequence}`,
        method: route.method,
        url: input.url,
        params,
        query,
        body: undefined,
        headers: input.headers,
        principal: input.principal,
        routeOptions,
        log: app.log,
        server: app,
      };

      let payload: unknown;
      try {
        const returned = await handler.call(app, request, reply);
        payload = reply.sent ? reply.payload : returned;
      } catch (err) {
        if (!(err instanceof AppError)) return undefined;
        const details = err.details?.map(({ field, message }) => ({ field, message }));
        const error = { code: err.code, message: err.message, ...(details ? { details } : {}) };
        return { status: err.status, type: 'application/json', body: JSON.stringify({ success: false, error }) };
      }
      if (payload === undefined) return undefined;
      const { statusCode: status, recorded: headers } = reply;
      if (Buffer.isBuffer(payload)) {
        return { status, type: headers['content-type'] ?? 'application/octet-stream', body: '', raw: payload };
      }
      if (typeof payload === 'string') return { status, type: headers['content-type'] ?? 'text/plain', body: payload };
      if (
        typeof payload !== 'object' ||
        payload === null ||
        typeof (payload as { pipe?: unknown }).pipe === 'function'
      ) {
        return undefined;
      }
      const serializer = serializerFor(status);
      const body = serializer.serialize(payload);
      const answer: RouteAnswer = { status, type: headers['content-type'] ?? 'application/json', body };
      const data = (payload as { success?: unknown; data?: unknown }).data;
      if (serializer.envelope && (payload as { success?: unknown }).success === true && data !== undefined) {
        if (body.startsWith(DATA_PREFIX) && body.charCodeAt(body.length - 1) === 0x7d) {
          answer.dataJson = body.slice(DATA_PREFIX.length, -1);
        }
      }
      return answer;
    },
  };
}
