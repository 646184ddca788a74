import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

/** Headers of the inner answer that belong to its own exchange, not to the one relayed. */
const EXCHANGE_HEADERS = new Set(['content-length', 'connection', 'transfer-encoding', 'keep-alive', 'date']);

/**
 * The page makes no request off the machine and shows only Quarry's reference: no fonts from the
 * vendor's host (the system's fonts instead), none of the vendor's hosted services (its AI agent, MCP generator,
 * developer tools with their "Deploy" button, telemetry), and no "Powered by" link.
 */
const REFERENCE_CONFIGURATION = {
  url: '/api/openapi.json',
  withDefaultFonts: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: 'never',
  telemetry: false,
  customCss: '.darklight-reference a[href*="scalar.com"] { display: none; }',
} as const;

/**
 * `/docs`: the Scalar API reference, rendered in the browser from `/api/openapi.json` with a script the service
 * serves itself (self-hosted installs may be offline). Its Fastify plugin carries a 4 MB script and an OpenAPI
 * parser, so it is loaded by the first request for the page, into a Fastify instance of its own that answers
 * through `inject`: a start does not pay for a page few requests need (docs/scaling-out.md, "Start-up").
 */
export function serveReferencePage(app: FastifyInstance): void {
  let reference: Promise<FastifyInstance> | undefined;
  const load = async () => {
    const { default: scalar } = await import('@scalar/fastify-api-reference');
    const inner = Fastify();
    await inner.register(scalar, { routePrefix: '/docs', configuration: REFERENCE_CONFIGURATION });
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
