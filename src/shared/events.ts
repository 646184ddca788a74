import type { Db, Tx } from '../db/client.ts';

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
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Writes the event to the outbox in the caller's transaction; delivery is woken at commit. */
export async function emitEvent(
  _db: Db | Tx,
  _userId: string,
  _type: EventType,
  _data: Record<string, unknown>,
): Promise<void> {
  // TEMPORARY until the webhooks branch merges
}
