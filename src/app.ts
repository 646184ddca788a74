import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, LogController } from 'fastify';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from './deps.ts';
import { accountDeletionRoutes } from './modules/account-deletion/index.ts';
import { accountRoutes } from './modules/accounts/index.ts';
import { adminRoutes } from './modules/admin/index.ts';
import { analyticsRoutes } from './modules/analytics/index.ts';
import { apiKeyRoutes } from './modules/api-keys/index.ts';
import { authRoutes, consoleSessionRoutes } from './modules/auth/index.ts';
import {
  browserCdpRoutes,
  browserExtensionRoutes,
  browserLiveRoutes,
  browserOperationRoutes,
  browserProfileRoutes,
  browserSessionRoutes,
  browserUsageRoutes,
} from './modules/browser/index.ts';
import { chatRoutes } from './modules/chat/index.ts';
import { consentRoutes } from './modules/consent/index.ts';
import { consoleRoutes } from './modules/console/index.ts';
import { creditRoutes } from './modules/credits/index.ts';
import { dataExportRoutes } from './modules/data-export/index.ts';
import { dealCampaignRoutes } from './modules/deal-campaigns/index.ts';
import { destinationRoutes } from './modules/destinations/index.ts';
import { emailVerificationRoutes } from './modules/email-verification/index.ts';
import { healthRoutes } from './modules/health/index.ts';
import { jobRoutes } from './modules/jobs/index.ts';
import { leadRoutes } from './modules/leads/index.ts';
import { markdownExportRoutes } from './modules/markdown-exports/index.ts';
import { matchingRoutes } from './modules/matching/index.ts';
import { mcpRoutes } from './modules/mcp/index.ts';
import { organizationRoutes } from './modules/organizations/index.ts';
import {
  outreachCampaignRoutes,
  outreachConnectionRoutes,
  outreachEmailRoutes,
  outreachUnsubscribeRoutes,
} from './modules/outreach/index.ts';
import { professionalNetworkRoutes } from './modules/professional-network/index.ts';
import { profileTypeRoutes } from './modules/profile-types/index.ts';
import { profileRoutes } from './modules/profiles/index.ts';
import { projectRoutes } from './modules/projects/index.ts';
import { proxyProfileRoutes } from './modules/proxy-profiles/index.ts';
import { sourceDiscoveryRoutes } from './modules/source-discovery/index.ts';
import { sourceRoutes, sourceTemplateRoutes } from './modules/sources/index.ts';
import { suppressionRoutes } from './modules/suppressions/index.ts';
import { userRoutes } from './modules/users/index.ts';
import { warmupRoutes } from './modules/warmup/index.ts';
import { webhookRoutes } from './modules/webhooks/index.ts';
import { inboundWebhookRoutes } from './modules/webhooks-inbound/index.ts';
import type { RouteModule, TypedApp } from './route-module.ts';
import { registerAuth } from './shared/auth.ts';
import { answerClientError } from './shared/client-error.ts';
import { registerErrorHandling } from './shared/error-handler.ts';
import { registerIdempotency } from './shared/idempotency.ts';
import { registerJsonBodyParser } from './shared/json-body.ts';
import { registerOpenApi } from './shared/openapi.ts';
import { responseSerializerCompiler } from './shared/serializer.ts';

const typed = (app: FastifyInstance): TypedApp => app.withTypeProvider<ZodTypeProvider>();

/** Route modules in registration order; each feature adds its own line. */
const routeModules: RouteModule[] = [
  // First: its tools stand on the routes the others register after it.
  mcpRoutes,
  healthRoutes,
  authRoutes,
  consoleSessionRoutes,
  apiKeyRoutes,
  organizationRoutes,
  userRoutes,
  consentRoutes,
  dataExportRoutes,
  accountDeletionRoutes,
  projectRoutes,
  sourceRoutes,
  sourceTemplateRoutes,
  sourceDiscoveryRoutes,
  jobRoutes,
  profileTypeRoutes,
  profileRoutes,
  leadRoutes,
  chatRoutes,
  accountRoutes,
  dealCampaignRoutes,
  matchingRoutes,
  // ---- credits and inbound webhooks ----
  creditRoutes,
  inboundWebhookRoutes,
  // ---- outbound webhooks ----
  webhookRoutes,
  // ---- deliverability ----
  warmupRoutes,
  // ---- professional network ----
  professionalNetworkRoutes,
  // ---- analytics and admin ----
  analyticsRoutes,
  adminRoutes,
  // ---- deliverability ----
  suppressionRoutes,
  emailVerificationRoutes,
  // ---- outreach ----
  outreachConnectionRoutes,
  outreachCampaignRoutes,
  outreachUnsubscribeRoutes,
  outreachEmailRoutes,
  // ---- cloud browser ----
  browserSessionRoutes,
  browserCdpRoutes,
  browserOperationRoutes,
  browserExtensionRoutes,
  browserProfileRoutes,
  browserUsageRoutes,
  browserLiveRoutes,
  // ---- data out ----
  markdownExportRoutes,
  proxyProfileRoutes,
  destinationRoutes,
  // ---- the web console (pages over the routes above) ----
  consoleRoutes,
];

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    trustProxy: deps.config.TRUST_PROXY,
    logController: new LogController({
      disableRequestLogging: deps.config.LOG_LEVEL !== 'debug' && deps.config.LOG_LEVEL !== 'trace',
    }),
    forceCloseConnections: 'idle',
    // No per-request child logger (a pino child per request is measurable on hot reads); the few
    // request-scoped log lines carry `reqId` themselves.
    childLoggerFactory: (logger) => logger,
    return503OnClosing: true,
    bodyLimit: 10 * 1024 * 1024,
    clientErrorHandler: answerClientError,
    routerOptions: {
      ignoreTrailingSlash: true,
      maxParamLength: 500,
      // A path segment longer than any id names nothing: the same 404 as an unknown id.
      onMaxParamLength: (_path, _req, res) => {
        res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify({ success: false, error: { code: 'NOT_FOUND', message: 'Resource not found' } }));
      },
    },
    frameworkErrors: (error, _request, reply) => {
      (reply as FastifyReply).code(400).send({
        success: false,
        error: {
          code: 'VALIDATION_ERROR',
          message: error.message,
          details: [{ field: 'url', message: error.message }],
        },
      });
    },
  }) as unknown as FastifyInstance;
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(responseSerializerCompiler);
  registerErrorHandling(app);
  registerJsonBodyParser(app);

  await registerOpenApi(app, deps.config);
  registerAuth(app, deps.apiKeys, { publicUrl: deps.config.PUBLIC_URL });
  registerIdempotency(app, deps);
  for (const register of routeModules) register(typed(app), deps);
  return app;
}
