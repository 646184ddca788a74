import { and, desc, eq, inArray, lt, type SQL, sql } from 'drizzle-orm';
import { arrayLiteral } from '../../db/array-literal.ts';
import { type Db, queryRows, type Tx } from '../../db/client.ts';
import { newestFirstPage } from '../../db/keyset.ts';
import {
  type WebhookDeliveryStatus,
  webhookAttempts,
  webhookDeliveries,
  webhookEndpoints,
  webhookEvents,
} from '../../db/schema/index.ts';
import { type EmitOptions, type EventType, WEBHOOK_WAKE_CHANNEL } from '../../shared/events.ts';
import { newId } from '../../shared/ids.ts';

const uuidArray = (ids: readonly string[]) => `{${ids.join(',')}}`;

/** The endpoints an event goes to (`recordEvent` writes one delivery each; none: it writes nothing). */
export function endpointsFor(userId: string, type: EventType, options: EmitOptions = {}): SQL {
  const target = options.endpointId ? sql`id = ${options.endpointId}` : sql`${type} = ANY(event_types)`;
  return sql`SELECT id FROM webhook_endpoints WHERE user_id = ${userId} AND enabled AND ${target}`;
}

/**
 * Writes the event to the outbox in the caller's transaction, with one delivery per enabled endpoint of the
 * user subscribed to `type`; nothing when there is none. The NOTIFY is part of the transaction too: it wakes the
 * dispatchers at commit, and a rolled-back change sends nothing. Returns the event's id and its deliveries.
 */
export async function recordEvent(
  db: Db | Tx,
  userId: string,
  type: EventType,
  data: Record<string, unknown>,
  options: EmitOptions = {},
): Promise<{ eventId: string; deliveryIds: string[] } | undefined> {
  const endpoints = await queryRows<{ id: string }>(db, endpointsFor(userId, type, options));
  if (!endpoints.length) return undefined;
  const eventId = newId();
  const deliveryIds = endpoints.map(() => newId());
  const at = options.at ? sql`${options.at.toISOString()}::timestamptz` : sql`now()`;
  await db.execute(sql`
    WITH ev AS (
      INSERT INTO webhook_events (id, user_id, type, data, created_at)
      VALUES (${eventId}, ${userId}, ${type}, ${JSON.stringify(data)}::jsonb, ${at})
      RETURNING id
    ), dl AS (
      INSERT INTO webhook_deliveries (id, user_id, event_id, endpoint_id, next_attempt_at, created_at, updated_at)
      SELECT t.delivery_id, ${userId}, ev.id, t.endpoint_id, '-infinity', now(), now()
      FROM ev, unnest(${uuidArray(deliveryIds)}::uuid[], ${uuidArray(endpoints.map((e) => e.id))}::uuid[])
        AS t(delivery_id, endpoint_id)
      RETURNING 1
    )
    SELECT pg_notify(${WEBHOOK_WAKE_CHANNEL}, (SELECT count(*) FROM dl)::text)`);
  return { eventId, deliveryIds };
}

export type EndpointRow = typeof webhookEndpoints.$inferSelect;
export type AttemptRow = typeof webhookAttempts.$inferSelect;

/** How many of an endpoint's latest attempts its success rate covers. */
export const HEALTH_WINDOW = 100;
const ATTEMPTS_SHOWN = 20;

/**
 * The dispatcher's bookkeeping (claims, recorded attempts) commits without waiting for the WAL flush: what a
 * database crash could lose of it is a lease (the delivery is claimed again) or a recorded attempt (it is sent
 * again), both within at-least-once delivery; the events and deliveries themselves are written by the emitting
 * transaction, durably. A flush per claim and per batch was most of the cost of a delivery.
 */
const ASYNC_COMMIT = sql`SELECT set_config('synchronous_commit', 'off', true)`;

/** A due delivery taken by a dispatcher, with what it needs to send it. */
export interface ClaimedDelivery {
  id: string;
  eventId: string;
  endpointId: string;
  /** Attempts already made in this schedule. */
  attempts: number;
  type: string;
  /** The event's `data`, as JSON text (put in the body as it is). */
  dataJson: string;
  createdAt: Date;
  url: string;
  enabled: boolean;
  secret: string;
  /** Set while a rotation's overlap lasts. */
  previousSecret: string | null;
}

/** What one attempt came to, as the dispatcher records it. */
export interface AttemptResult {
  deliveryId: string;
  endpointId: string;
  /** The delivery's endpoint was disabled before it was sent: no attempt, the delivery fails. */
  cancelled?: boolean;
  attempt: number;
  startedAt: Date;
  success: boolean;
  /** 410 Gone: the endpoint is disabled at once. */
  gone: boolean;
  statusCode: number | null;
  latencyMs: number;
  responseBody: string | null;
  error: string | null;
  /** When the next attempt is due; null when the schedule is over (or it succeeded). */
  nextAttemptAt: Date | null;
}

interface EndpointOutcome {
  id: string;
  gone: boolean;
  success_at?: Date;
  failure_at?: Date;
  failure_reason?: string;
  /** First failure after the batch's last success; null when the batch ends on a success. */
  failing_from: Date | null;
}

export const DISABLED_GONE = 'The endpoint answered 410 Gone';
export const DISABLED_FAILING = 'Every attempt failed for 5 days';
export const DISABLED_BY_USER = 'Disabled by its owner';

export interface EndpointHealth {
  endpointId: string;
  attempts: number;
  successes: number;
}

/** Each endpoint's outcome over a batch of attempts, in the order they started. */
function healthOf(results: AttemptResult[]): Map<string, EndpointOutcome> {
  const sent = results.filter((r) => !r.cancelled).sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
  const health = new Map<string, EndpointOutcome>();
  for (const r of sent) {
    const h = health.get(r.endpointId) ?? { id: r.endpointId, gone: false, failing_from: null };
    if (r.success) Object.assign(h, { success_at: r.startedAt, failing_from: null });
    else {
      h.failure_at = r.startedAt;
      h.failure_reason = r.error ?? `HTTP ${r.statusCode}`;
      h.failing_from ??= r.startedAt;
      h.gone ||= r.gone;
    }
    health.set(r.endpointId, h);
  }
  return health;
}

/** The endpoints' health columns from a batch's outcomes (an endpoint already up to date is not written). */
const healthUpdate = (health: Map<string, EndpointOutcome>) => sql`UPDATE webhook_endpoints e SET
    last_success_at = COALESCE(v.success_at, e.last_success_at),
    last_failure_at = COALESCE(v.failure_at, e.last_failure_at),
    last_failure_reason = COALESCE(v.failure_reason, e.last_failure_reason),
    failing_since = CASE WHEN v.failing_from IS NULL THEN NULL WHEN v.success_at IS NOT NULL THEN v.failing_from
      ELSE COALESCE(e.failing_since, v.failing_from) END
  FROM jsonb_to_recordset(${JSON.stringify([...health.values()])}::jsonb)
    AS v(id uuid, success_at timestamptz, failure_at timestamptz, failure_reason text, failing_from timestamptz)
  WHERE e.id = v.id AND (v.failure_at IS NOT NULL OR e.failing_since IS NOT NULL OR e.last_success_at IS NULL
    OR e.last_success_at < v.success_at - interval '1 second')`;

/**
 * The tail of a WITH statement writing each delivery's next state and, for a sent one, its attempt: one row per
 * result, as one array parameter per column (one unnest). The UPDATE returns the attempt's columns, so the INSERT
 * needs no join (a join of a JSON record set with the UPDATE's rows was planned as a nested loop that parsed the
 * JSON once per row: over a second for a batch of a thousand). An endpoint disabled meanwhile (by this batch, or by
 * its owner) gets no further attempt. `also` adds a condition to the UPDATE (the one-statement path sets its
 * commit mode there, evaluated once).
 */
function attemptsWrite(owner: string, results: AttemptResult[], now: Date, also: SQL): SQL {
  const col = <T>(pick: (r: AttemptResult) => T) => results.map(pick);
  const iso = (d: Date | null) => d?.toISOString() ?? null;
  const bool = (b: boolean) => (b ? 't' : 'f');
  return sql`upd AS (
      UPDATE webhook_deliveries d SET
        status = CASE WHEN v.status = 'pending' AND NOT ep.enabled THEN 'failed' ELSE v.status END,
        attempts = v.attempts,
        next_attempt_at = CASE WHEN ep.enabled THEN v.next_at END,
        lease_owner = NULL, lease_until = NULL, updated_at = ${now}
      FROM unnest(
          ${arrayLiteral(col((r) => r.deliveryId))}::uuid[],
          ${arrayLiteral(col((r) => (r.success ? 'succeeded' : r.nextAttemptAt ? 'pending' : 'failed')))}::text[],
          ${arrayLiteral(col((r) => (r.cancelled ? r.attempt - 1 : r.attempt)))}::int[],
          ${arrayLiteral(col((r) => iso(r.nextAttemptAt)))}::timestamptz[],
          ${arrayLiteral(col((r) => bool(!r.cancelled)))}::boolean[],
          ${arrayLiteral(col(() => newId()))}::uuid[],
          ${arrayLiteral(col((r) => r.attempt))}::int[],
          ${arrayLiteral(col((r) => bool(r.success)))}::boolean[],
          ${arrayLiteral(col((r) => r.statusCode))}::int[],
          ${arrayLiteral(col((r) => r.latencyMs))}::int[],
          ${arrayLiteral(col((r) => r.responseBody))}::text[],
          ${arrayLiteral(col((r) => r.error))}::text[],
          ${arrayLiteral(col((r) => iso(r.startedAt)))}::timestamptz[]
        ) AS v(id, status, attempts, next_at, sent, attempt_id, attempt, success, status_code, latency_ms,
          response_body, error, started_at),
        webhook_endpoints ep
      WHERE d.id = v.id AND ep.id = d.endpoint_id AND d.lease_owner = ${owner} AND d.status = 'pending' ${also}
      RETURNING v.sent, v.attempt_id, d.id AS delivery_id, d.endpoint_id, v.attempt, v.success, v.status_code,
        v.latency_ms, v.response_body, v.error, d.next_attempt_at, v.started_at
    )
    INSERT INTO webhook_attempts (id, delivery_id, endpoint_id, attempt, success, status_code, latency_ms,
      response_body, error, next_retry_at, created_at)
    SELECT attempt_id, delivery_id, endpoint_id, attempt, success, status_code, latency_ms, response_body, error,
      next_attempt_at, started_at
    FROM upd WHERE sent`;
}

export function webhookRepository(db: Db | Tx) {
  return {
    async insertEndpoint(values: typeof webhookEndpoints.$inferInsert): Promise<EndpointRow> {
      const [row] = await db.insert(webhookEndpoints).values(values).returning();
      return row!;
    },
    listEndpoints(userId: string, before: string | undefined, limit: number): Promise<EndpointRow[]> {
      return newestFirstPage(db as Db, webhookEndpoints, userId, [], limit, before);
    },
    async findEndpoint(userId: string, id: string): Promise<EndpointRow | undefined> {
      const [row] = await db
        .select()
        .from(webhookEndpoints)
        .where(and(eq(webhookEndpoints.userId, userId), eq(webhookEndpoints.id, id)))
        .limit(1);
      return row;
    },
    async updateEndpoint(
      userId: string,
      id: string,
      values: Partial<typeof webhookEndpoints.$inferInsert>,
    ): Promise<EndpointRow | undefined> {
      const [row] = await db
        .update(webhookEndpoints)
        .set(values)
        .where(and(eq(webhookEndpoints.userId, userId), eq(webhookEndpoints.id, id)))
        .returning();
      return row;
    },
    async deleteEndpoint(userId: string, id: string): Promise<boolean> {
      const rows = await db
        .delete(webhookEndpoints)
        .where(and(eq(webhookEndpoints.userId, userId), eq(webhookEndpoints.id, id)))
        .returning({ id: webhookEndpoints.id });
      return rows.length > 0;
    },
    /** Success counts over each endpoint's latest HEALTH_WINDOW attempts. */
    health(endpointIds: string[]): Promise<EndpointHealth[]> {
      if (!endpointIds.length) return Promise.resolve([]);
      return queryRows<EndpointHealth>(
        db,
        sql`SELECT e.id AS "endpointId", h.attempts, h.successes
        FROM unnest(${uuidArray(endpointIds)}::uuid[]) AS e(id)
        CROSS JOIN LATERAL (
          SELECT count(*)::int AS attempts, (count(*) FILTER (WHERE success))::int AS successes
          FROM (SELECT success FROM webhook_attempts WHERE endpoint_id = e.id ORDER BY id DESC LIMIT ${HEALTH_WINDOW}) a
        ) h`,
      );
    },
    /** Pending deliveries of an endpoint that nobody is sending right now fail (the endpoint was disabled). */
    async failPending(endpointIds: string[], now: Date): Promise<void> {
      if (!endpointIds.length) return;
      await db.execute(sql`UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, updated_at = ${now}
        WHERE endpoint_id = ANY(${uuidArray(endpointIds)}::uuid[]) AND status = 'pending'
          AND (lease_until IS NULL OR lease_until < now())`);
    },

    // ---- deliveries as the API shows them ----

    async listDeliveries(
      endpointId: string,
      filters: { status?: WebhookDeliveryStatus; eventType?: string },
      before: string | undefined,
      limit: number,
    ) {
      return db
        .select({
          id: webhookDeliveries.id,
          eventId: webhookDeliveries.eventId,
          eventType: webhookEvents.type,
          status: webhookDeliveries.status,
          attempts: webhookDeliveries.attempts,
          // Due at once (`-infinity`), or being sent (its due time is then its lease's end): shown as the time it
          // was queued or last tried.
          nextAttemptAt: sql`CASE WHEN ${webhookDeliveries.nextAttemptAt} = '-infinity'
            OR ${webhookDeliveries.leaseUntil} > now() THEN ${webhookDeliveries.updatedAt} ELSE ${webhookDeliveries.nextAttemptAt} END`.mapWith(
            webhookDeliveries.nextAttemptAt,
          ),
          createdAt: webhookDeliveries.createdAt,
          updatedAt: webhookDeliveries.updatedAt,
        })
        .from(webhookDeliveries)
        .innerJoin(webhookEvents, eq(webhookEvents.id, webhookDeliveries.eventId))
        .where(
          and(
            eq(webhookDeliveries.endpointId, endpointId),
            filters.status ? eq(webhookDeliveries.status, filters.status) : undefined,
            filters.eventType ? eq(webhookEvents.type, filters.eventType) : undefined,
            before ? lt(webhookDeliveries.id, before) : undefined,
          ),
        )
        .orderBy(desc(webhookDeliveries.id))
        .limit(limit + 1);
    },
    /** The latest ATTEMPTS_SHOWN attempts of each delivery, oldest first. */
    async attemptsOf(deliveryIds: string[]): Promise<AttemptRow[]> {
      if (!deliveryIds.length) return [];
      const rows = await queryRows<{ id: string }>(
        db,
        sql`SELECT a.id FROM unnest(${uuidArray(deliveryIds)}::uuid[]) AS d(id)
        CROSS JOIN LATERAL (SELECT id FROM webhook_attempts WHERE delivery_id = d.id
          ORDER BY id DESC LIMIT ${ATTEMPTS_SHOWN}) a`,
      );
      if (!rows.length) return [];
      return db
        .select()
        .from(webhookAttempts)
        .where(
          inArray(
            webhookAttempts.id,
            rows.map((r) => r.id),
          ),
        )
        .orderBy(webhookAttempts.id);
    },
    async findDelivery(userId: string, id: string) {
      const [row] = await db
        .select({
          id: webhookDeliveries.id,
          eventId: webhookDeliveries.eventId,
          endpointId: webhookDeliveries.endpointId,
          enabled: webhookEndpoints.enabled,
        })
        .from(webhookDeliveries)
        .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
        .where(and(eq(webhookDeliveries.userId, userId), eq(webhookDeliveries.id, id)))
        .limit(1);
      return row;
    },
    /**
     * Puts a delivery back to pending with a new schedule, due at once, and wakes the dispatchers at commit;
     * false while a dispatcher holds it (it is being sent right now).
     */
    async requeue(id: string, now: Date): Promise<boolean> {
      const rows = await queryRows(
        db,
        sql`WITH d AS (
          UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = '-infinity',
            lease_owner = NULL, lease_until = NULL, updated_at = ${now}
          WHERE id = ${id} AND (lease_until IS NULL OR lease_until < now())
          RETURNING id
        ) SELECT pg_notify(${WEBHOOK_WAKE_CHANNEL}, '1') FROM d`,
      );
      return rows.length > 0;
    },

    // ---- the dispatcher's side ----

    /**
     * Takes up to `limit` due deliveries (pending, due by `now`, not leased by a live dispatcher) under a lease
     * of `leaseMs`, each with its event and endpoint. The lease also moves the delivery's due time past its end (a
     * visibility timeout), so the next claim's index scan starts after the deliveries being sent instead of
     * stepping over them; `lease_until` (the database's clock) fences the recording and replays.
     */
    async claimDue(owner: string, now: Date, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
      // webhook_claim_due (migration 0015) takes due deliveries in their order under FOR UPDATE SKIP LOCKED, leases
      // them and answers each with its event and endpoint: one statement, one round trip.
      const rows = await queryRows<ClaimedDelivery>(
        db,
        sql`SELECT * FROM webhook_claim_due(${owner}, ${now}, ${limit}, ${leaseMs})`,
      );
      // Raw rows: the drivers differ in whether timestamps arrive parsed.
      for (const row of rows) row.createdAt = new Date(row.createdAt);
      return rows;
    },
    /** Gives back deliveries this dispatcher claimed but did not send (shutdown, or too long waiting): due at once. */
    async release(owner: string, ids: string[], now: Date): Promise<void> {
      if (!ids.length) return;
      await db.execute(sql`UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL, next_attempt_at = ${now}
        WHERE id = ANY(${uuidArray(ids)}::uuid[]) AND lease_owner = ${owner} AND status = 'pending'`);
    },
    /**
     * Records a batch of attempts: endpoint health (last success and failure, the start of the current failing
     * run), endpoints disabled by a 410 or by failing since `failingCutoff` (their other pending deliveries fail),
     * then each delivery's next state and its attempt, fenced by the lease (a dispatcher whose lease ran out records
     * nothing). Returns the endpoints it disabled. A batch whose every endpoint ended on a success (none gone) can
     * disable nothing: it is one statement, its own transaction (one round trip instead of five); otherwise one
     * transaction of several. Called on the pool (`db`), not inside a caller's transaction.
     */
    async recordResults(owner: string, results: AttemptResult[], failingCutoff: Date, now: Date): Promise<string[]> {
      const health = healthOf(results);
      const gone = [...health.values()].filter((h) => h.gone).map((h) => h.id);
      const mayDisable = gone.length > 0 || [...health.values()].some((h) => h.failing_from !== null);
      if (!mayDisable) {
        await db.execute(sql`WITH ${health.size ? sql`health AS (${healthUpdate(health)} RETURNING 1),` : sql``}
          ${attemptsWrite(owner, results, now, sql`AND (${ASYNC_COMMIT}) = 'off'`)}`);
        return [];
      }
      return (db as Db).transaction(async (tx) => {
        await tx.execute(ASYNC_COMMIT);
        await tx.execute(healthUpdate(health));
        const rows = await queryRows<{ id: string }>(
          tx,
          sql`UPDATE webhook_endpoints SET enabled = false, disabled_at = ${now},
            disabled_reason = CASE WHEN id = ANY(${uuidArray(gone)}::uuid[]) THEN ${DISABLED_GONE}
              ELSE ${DISABLED_FAILING} END
          WHERE id = ANY(${uuidArray([...health.keys()])}::uuid[]) AND enabled
            AND (id = ANY(${uuidArray(gone)}::uuid[]) OR failing_since <= ${failingCutoff})
          RETURNING id`,
        );
        const disabled = rows.map((r) => r.id);
        await webhookRepository(tx).failPending(disabled, now);
        await tx.execute(sql`WITH ${attemptsWrite(owner, results, now, sql``)}`);
        return disabled;
      });
    },
    /** Deletes events (their deliveries and attempts with them) older than `before`. */
    async pruneEvents(before: Date): Promise<number> {
      const rows = await db
        .delete(webhookEvents)
        .where(lt(webhookEvents.createdAt, before))
        .returning({ id: webhookEvents.id });
      return rows.length;
    },
  };
}

export type WebhookRepository = ReturnType<typeof webhookRepository>;
