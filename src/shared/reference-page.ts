import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

/** Headers of the inner answer that belong to its own exchange, not to the one relayed. */
const EXCHANGE_HEADERS = new Set(['content-length', 'connection', 'transfer-encoding', 'keep-alive', 'date']);

/**
 * `/docs`: the Scalar API reference, rendered in the browser from `/api/openapi.json` with a script the service
 * serves itself (self-hosted installs may be offline). Its Fastify plugin carries a 4 MB script and an OpenAPI
 * parser, so it is loaded by the first request for the page, into a Fastify instance of its own that answers
 * through `inject`: a start does not pay for a page few requests need (README "Start-up").
 */
export function serveReferencePage(app: FastifyInstance): void {
  let reference: Promise<FastifyInstance> | undefined;
  const load = async () => {
    const { default: scalar } = await import('@scalar/fastify-api-reference');
    const inner = Fastify();
    await inner.register(scalar, { routePrefix: '/docs', configuration: { url: '/api/openapi.json' } });
    await inner.ready();
    return inner;
  };
  const relay = async (request: FastifyRequest, reply: FastifyReply) => {
    reference ??= load().catch((error: unknown) => {
      reference = undefined;
      throw error;
    });
    const answer = await (await reference).inject({ method: 'GET', url: request.url });
    reply.code(answer.statusCode);
    for (const [name, value] of Object.entries(answer.headers))
      if (value !== undefined && !EXCHANGE_HEADERS.has(name)) reply.header(name, value);
    return reply.send(answer.rawPayload);
  };
  const options = { config: { public: true }, schema: { hide: true } } as const;
  app.get('/docs', options, relay);
  app.get('/docs/*', options, relay);
  app.addHook('onClose', async () => {
    await (await reference?.catch(() => undefined))?.close();
  });
}
