import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from './deps.ts';

/** The app seen through the zod type provider: route schemas type `request.body`, `query` and `params`. */
export type TypedApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  ZodTypeProvider
>;

/** A feature's HTTP layer: registers its routes on the zod-typed app (listed in `app.ts`). */
export type RouteModule = (app: TypedApp, deps: AppDeps) => void;
