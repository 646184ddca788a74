import type { Db, Tx } from '../db/client.ts';
import type { PipelineStep } from '../db/pipeline.ts';

/** Every event type webhooks can carry (README, Webhooks; the OpenAPI document's `webhooks` has their payloads). */
export const EVENT_TYPES = [
  'job.started',
  'job.completed',
  'job.failed',
  'lead.created',
  'lead.validated',
  'export.completed',
  'matching.run.completed',
  'credits.low',
  'webhook.test',
  'email.bounced',
  'email.replied',
  'warmup.auto_paused',
  'browser.session.ended',
  'browser.live.control',
  'markdown_export.completed',
  'destination.push.completed',
  'destination.push.failed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** NOTIFY channel that wakes the webhook dispatchers of every process (sent at commit of the emitting transaction). */
export const WEBHOOK_WAKE_CHANNEL = 'quarry_webhooks';

export interface EmitOptions {
  /** Only this endpoint, subscribed or not (the `webhook.test` event). */
  endpointId?: string;
  /** The event's time; default the database's (the transaction's start). */
  at?: Date;
}

/**
 * The event outbox. The webhooks module implements it (its repository owns the outbox tables) and `assembleDeps`
 * installs it, so shared code imports no module.
 */
export interface EventOutbox {
  /** Writes an event and its deliveries in the caller's transaction. */
  record(
    db: Db | Tx,
    userId: string,
    type: EventType,
    data: Record<string, unknown>,
    options: EmitOptions,
  ): Promise<{ eventId: string; deliveryIds: string[] } | undefined>;
  /** A pipelined transaction's step (src/db/pipeline.ts) that stops it unless `record` would write nothing. */
  nothingToRecord(userId: string, type: EventType): PipelineStep;
}

let outbox: EventOutbox | undefined;

/** Called once per process by `assembleDeps` (src/deps.ts) with the webhooks module's writer. */
export function installEventOutbox(write: EventOutbox): void {
  outbox = write;
}

/** Writes the event to the outbox in the caller's transaction; delivery is woken at commit. */
export async function emitEvent(
  db: Db | Tx,
  userId: string,
  type: EventType,
  data: Record<string, unknown>,
  options?: EmitOptions,
): Promise<void> {
  if (!outbox) throw new Error('No event outbox installed: build the dependencies with assembleDeps first');
  await outbox.record(db, userId, type, data, options ?? {});
}

/**
 * For a pipelined transaction (src/db/pipeline.ts), where `emitEvent` cannot run: a step that stops it when the event
 * would be written (an endpoint subscribes to it), so the caller takes its interactive path and emits it there.
 */
export function nothingToEmit(userId: string, type: EventType): PipelineStep {
  if (!outbox) throw new Error('No event outbox installed: build the dependencies with assembleDeps first');
  return outbox.nothingToRecord(userId, type);
}
