import { pipelineStep } from '../../db/client.ts';
import type { AppDeps } from '../../deps.ts';
import { DAY_MS } from '../../shared/clock.ts';
import { createSecretBox, secretKeyMaterial } from '../../shared/crypto.ts';
import { AppError, notFound, validationError } from '../../shared/errors.ts';
import type { EventOutbox } from '../../shared/events.ts';
import { findOwned } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { assertPublicHost, SsrfBlockedError } from '../../shared/ssrf.ts';
import {
  type AttemptRow,
  DISABLED_BY_USER,
  type EndpointHealth,
  type EndpointRow,
  endpointsFor,
  recordEvent,
  webhookRepository,
} from './webhooks.repository.ts';
import type {
  CreateWebhookInput,
  ListDeliveriesQuery,
  UpdateWebhookInput,
  WebhookDeliveryView,
  WebhookView,
} from './webhooks.schemas.ts';
import { newSigningSecret } from './webhooks.signing.ts';

/** After a rotation the previous secret keeps signing this long. */
export const ROTATION_OVERLAP_MS = DAY_MS;

const iso = (d: Date | null) => d?.toISOString() ?? null;

function toView(row: EndpointRow, health: EndpointHealth | undefined, now: Date): WebhookView {
  const overlap = row.previousSecretExpiresAt && row.previousSecretExpiresAt > now ? row.previousSecretExpiresAt : null;
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    eventTypes: row.eventTypes,
    enabled: row.enabled,
    disabledReason: row.disabledReason,
    disabledAt: iso(row.disabledAt),
    previousSecretExpiresAt: iso(overlap),
    health: {
      successRate: health?.attempts ? health.successes / health.attempts : null,
      recentAttempts: health?.attempts ?? 0,
      lastSuccessAt: iso(row.lastSuccessAt),
      lastFailureAt: iso(row.lastFailureAt),
      lastFailureReason: row.lastFailureReason,
      failingSince: iso(row.failingSince),
    },
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

const toAttemptView = (a: AttemptRow) => ({
  attempt: a.attempt,
  at: a.createdAt.toISOString(),
  success: a.success,
  statusCode: a.statusCode,
  latencyMs: a.latencyMs,
  responseBody: a.responseBody,
  error: a.error,
  nextRetryAt: iso(a.nextRetryAt),
});

export type WebhookService = ReturnType<typeof createWebhookService>;

/** Outbound webhook endpoints (README, Webhooks): their secrets, health, deliveries, tests and replays. */
export function createWebhookService(deps: Pick<AppDeps, 'db' | 'clock' | 'config'>) {
  const repo = webhookRepository(deps.db);
  const box = createSecretBox(secretKeyMaterial(deps.config));

  /** The SSRF guard at creation (each delivery is checked again when it connects: DNS may change). */
  async function assertDeliverable(url: string): Promise<void> {
    if (deps.config.ALLOW_PRIVATE_NETWORK) return;
    try {
      await assertPublicHost(new URL(url).hostname, false, url);
    } catch (err) {
      if (err instanceof SsrfBlockedError) throw validationError('url', `${err.message.split('. ')[0]}.`);
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA')
        throw validationError('url', 'the host name does not resolve');
      throw err;
    }
  }

  const owned = (userId: string, id: string) => findOwned(id, 'Webhook', (key) => repo.findEndpoint(userId, key));

  async function viewOf(row: EndpointRow): Promise<WebhookView> {
    const [health] = await repo.health([row.id]);
    return toView(row, health, deps.clock.now());
  }

  return {
    async create(userId: string, input: CreateWebhookInput) {
      await assertDeliverable(input.url);
      const secret = newSigningSecret();
      const now = deps.clock.now();
      const row = await repo.insertEndpoint({
        userId,
        url: input.url,
        description: input.description ?? null,
        eventTypes: input.eventTypes,
        secretEncrypted: box.seal(secret),
        createdAt: now,
        updatedAt: now,
      });
      return { ...toView(row, undefined, now), secret };
    },

    async list(userId: string, page: { limit: number; cursor?: string }) {
      const rows = await repo.listEndpoints(userId, decodeCursor(page.cursor), page.limit);
      const { items, nextCursor } = pageOf(rows, page.limit);
      const health = new Map((await repo.health(items.map((r) => r.id))).map((h) => [h.endpointId, h]));
      const now = deps.clock.now();
      return { webhooks: items.map((r) => toView(r, health.get(r.id), now)), nextCursor };
    },

    async get(userId: string, id: string) {
      return viewOf(await owned(userId, id));
    },

    /** Changes what was given; `rotateSecret` answers the new secret, once. */
    async update(userId: string, id: string, input: UpdateWebhookInput) {
      const current = await owned(userId, id);
      if (input.url !== undefined && input.url !== current.url) await assertDeliverable(input.url);
      const now = deps.clock.now();
      const values: Partial<EndpointRow> = { updatedAt: now };
      if (input.url !== undefined) values.url = input.url;
      if (input.eventTypes !== undefined) values.eventTypes = input.eventTypes;
      if (input.description !== undefined) values.description = input.description;
      if (input.enabled === true && !current.enabled)
        Object.assign(values, { enabled: true, disabledReason: null, disabledAt: null, failingSince: null });
      if (input.enabled === false && current.enabled)
        Object.assign(values, { enabled: false, disabledReason: DISABLED_BY_USER, disabledAt: now });
      let secret: string | undefined;
      if (input.rotateSecret) {
        secret = newSigningSecret();
        Object.assign(values, {
          secretEncrypted: box.seal(secret),
          previousSecretEncrypted: current.secretEncrypted,
          previousSecretExpiresAt: new Date(now.getTime() + ROTATION_OVERLAP_MS),
        });
      }
      const row = await deps.db.transaction(async (tx) => {
        const txRepo = webhookRepository(tx);
        const updated = await txRepo.updateEndpoint(userId, current.id, values);
        if (updated && values.enabled === false) await txRepo.failPending([current.id], now);
        return updated;
      });
      if (!row) throw notFound('Webhook');
      const view = await viewOf(row);
      return secret ? { ...view, secret } : view;
    },

    async remove(userId: string, id: string): Promise<void> {
      await findOwned(id, 'Webhook', (key) => repo.deleteEndpoint(userId, key));
    },

    /** A `webhook.test` event for this endpoint only, delivered like any other. */
    async sendTest(userId: string, id: string) {
      const endpoint = await owned(userId, id);
      if (!endpoint.enabled)
        throw new AppError('CONFLICT', 'This endpoint is disabled; enable it (PATCH enabled: true) to test it');
      const recorded = await deps.db.transaction((tx) =>
        recordEvent(
          tx,
          userId,
          'webhook.test',
          { endpointId: endpoint.id, message: 'A test event sent from the Quarry API' },
          { endpointId: endpoint.id },
        ),
      );
      // Disabled between the check and the write.
      if (!recorded) throw new AppError('CONFLICT', 'This endpoint is disabled');
      return { eventId: recorded.eventId, deliveryId: recorded.deliveryIds[0]! };
    },

    async deliveries(userId: string, id: string, query: ListDeliveriesQuery) {
      const endpoint = await owned(userId, id);
      const rows = await repo.listDeliveries(
        endpoint.id,
        { status: query.status, eventType: query.eventType },
        decodeCursor(query.cursor),
        query.limit,
      );
      const { items, nextCursor } = pageOf(rows, query.limit);
      const attempts = await repo.attemptsOf(items.map((d) => d.id));
      const views: WebhookDeliveryView[] = items.map((d) => ({
        id: d.id,
        eventId: d.eventId,
        eventType: d.eventType,
        status: d.status,
        attemptCount: d.attempts,
        nextAttemptAt: d.status === 'pending' ? iso(d.nextAttemptAt) : null,
        attempts: attempts.filter((a) => a.deliveryId === d.id).map(toAttemptView),
        createdAt: d.createdAt.toISOString(),
        updatedAt: d.updatedAt.toISOString(),
      }));
      return { deliveries: views, nextCursor };
    },

    /** Sends a delivery again, with the same `webhook-id`, on a new retry schedule. */
    async replay(userId: string, deliveryId: string): Promise<{ deliveryId: string; eventId: string }> {
      const delivery = await findOwned(deliveryId, 'Delivery', (key) => repo.findDelivery(userId, key));
      if (!delivery.enabled)
        throw new AppError('CONFLICT', 'The endpoint of this delivery is disabled; enable it before replaying');
      if (!(await repo.requeue(delivery.id, deps.clock.now())))
        throw new AppError('CONFLICT', 'This delivery is being sent right now; try again in a moment');
      return { deliveryId: delivery.id, eventId: delivery.eventId };
    },
  };
}

/** Daily maintenance: events older than WEBHOOK_RETENTION_DAYS go, with their deliveries and attempts. */
export async function pruneWebhookHistory(deps: Pick<AppDeps, 'db' | 'clock' | 'config'>): Promise<number> {
  const before = new Date(deps.clock.now().getTime() - deps.config.WEBHOOK_RETENTION_DAYS * DAY_MS);
  return webhookRepository(deps.db).pruneEvents(before);
}

/** The outbox `emitEvent` writes to (src/shared/events.ts); `assembleDeps` installs it. */
export const eventOutbox: EventOutbox = {
  record: recordEvent,
  nothingToRecord: (userId, type) => pipelineStep(endpointsFor(userId, type), 'none'),
};
