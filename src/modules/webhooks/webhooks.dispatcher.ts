import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { AppDeps } from '../../deps.ts';
import { DAY_MS } from '../../shared/clock.ts';
import { createSecretBox, secretKeyMaterial } from '../../shared/crypto.ts';
import { WEBHOOK_WAKE_CHANNEL } from '../../shared/events.ts';
import { createOutboundClient, OutboundError, outboundSettings } from '../../shared/outbound-http.ts';
import { type AttemptResult, type ClaimedDelivery, webhookRepository } from './webhooks.repository.ts';
import { signatureHeader } from './webhooks.signing.ts';

const HOUR_MS = 60 * 60_000;
/** Pauses before the 2nd … 8th attempt (the 1st is immediate): README, Webhooks. */
export const RETRY_DELAYS_MS = [5_000, 5 * 60_000, 30 * 60_000, 2 * HOUR_MS, 5 * HOUR_MS, 10 * HOUR_MS, 10 * HOUR_MS];
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;
/** An endpoint whose every attempt failed for this long is disabled. */
export const DISABLE_AFTER_FAILING_MS = 5 * DAY_MS;
/** Every process looks for due deliveries this often (retries, and events whose NOTIFY was lost). */
export const SWEEP_MS = 5_000;
export const WEBHOOK_USER_AGENT = 'Quarry-Webhooks/1.0';
/** Bytes of an endpoint's answer kept with the attempt. */
const RESPONSE_EXCERPT_BYTES = 1024;
const CLAIM_MAX = 1000;
/**
 * Rounds of WEBHOOK_CONCURRENCY sends one process holds (sending and waiting): at least MIN_HELD_ROUNDS, and as many
 * as it sends in HOLD_MS at its recent pace, up to MAX_HELD_ROUNDS. It claims more once fewer than half of those wait:
 * a claim is a few database round trips (tens of ms on a busy machine, spikes of 100 ms and more), and at loopback
 * speed the sends waiting must outlast it (with 250 ms and 32 rounds the sends ran dry for 10–20 % of a bench round
 * on the shared machine; with 500 ms and 64, for under 1 %). A slow endpoint keeps the hold small, so few deliveries
 * wait for a slot past their lease.
 */
const MIN_HELD_ROUNDS = 8;
const MAX_HELD_ROUNDS = 64;
const HOLD_MS = 500;
const FLUSH_ROWS = 1000;
const FLUSH_EVERY_MS = 50;

export type WebhookDispatcher = ReturnType<typeof createWebhookDispatcher>;

const excerpt = (body: Buffer): string | null =>
  body.length ? body.toString('utf8').replaceAll('\0', '').toWellFormed() : null;

/**
 * Sends due deliveries from this process: woken by the NOTIFY of each emitting transaction (no polling delay),
 * by its own timers for retries due soon, and by a sweep every SWEEP_MS. Deliveries are claimed under a lease,
 * sent up to WEBHOOK_CONCURRENCY at once, and their attempts recorded in batches. A process killed mid-send
 * leaves leases that run out; another process then sends those deliveries again.
 */
export function createWebhookDispatcher(deps: Pick<AppDeps, 'db' | 'clock' | 'config' | 'notifier' | 'logger'>) {
  const repo = webhookRepository(deps.db);
  const box = createSecretBox(secretKeyMaterial(deps.config));
  const client = createOutboundClient(outboundSettings(deps.config));
  const owner = `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const concurrency = deps.config.WEBHOOK_CONCURRENCY;
  const timeoutMs = deps.config.WEBHOOK_TIMEOUT_MS;
  let maxHeld = MIN_HELD_ROUNDS * concurrency;
  /** Sends started since `paceAt` (performance.now()), for the pace that sizes the hold. */
  let startedSince = 0;
  let paceAt = performance.now();
  /** Re-sizes the hold from the sends started in the latest window of at least 100 ms. */
  const sizeHold = (): void => {
    const now = performance.now();
    if (now - paceAt < 100) return;
    const wanted = Math.ceil((startedSince / (now - paceAt)) * HOLD_MS);
    maxHeld = Math.min(MAX_HELD_ROUNDS * concurrency, Math.max(MIN_HELD_ROUNDS * concurrency, wanted));
    startedSince = 0;
    paceAt = now;
  };
  const leaseMs = 2 * timeoutMs + 5_000;
  /**
   * A delivery that waited here this long is given back unsent: its send (at most one timeout) and the recording
   * of its attempt (batched, a few seconds at worst) must end inside its lease.
   */
  const staleAfterMs = leaseMs - timeoutMs - 5_000;
  const log = deps.logger.child({ component: 'webhooks' });
  const secrets = new Map<string, string>();
  /** Decrypted once per process (a secret changes only by rotation, which makes a new ciphertext). */
  const openSecret = (sealed: string): string => {
    let plain = secrets.get(sealed);
    if (plain === undefined) {
      plain = box.open(sealed);
      if (secrets.size >= 10_000) secrets.delete(secrets.keys().next().value!);
      secrets.set(sealed, plain);
    }
    return plain;
  };
  /** The body of the latest event, shared by its deliveries to several endpoints (claimed together). */
  let lastBody: { eventId: string; body: string } | undefined;
  const bodyOf = (row: ClaimedDelivery): string => {
    if (lastBody?.eventId !== row.eventId) {
      const body = `{"type":${JSON.stringify(row.type)},"timestamp":"${row.createdAt.toISOString()}","data":${row.dataJson}}`;
      lastBody = { eventId: row.eventId, body };
    }
    return lastBody.body;
  };

  let stopped = true;
  let inFlight = 0;
  /** Claimed here, waiting for a free slot, with when (performance.now()). */
  const waiting: Array<{ row: ClaimedDelivery; claimedAt: number }> = [];
  let draining = false;
  let signals = 0;
  let mayHaveMore = false;
  let results: AttemptResult[] = [];
  let flushing: Promise<void> = Promise.resolve();
  let flushTimer: NodeJS.Timeout | undefined;
  let sweepTimer: NodeJS.Timeout | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let retryAt = Number.POSITIVE_INFINITY;
  const cleanups: Array<() => void> = [];

  /** Asks for a look at due deliveries; calls made while one runs make it look again. */
  function wake(): void {
    signals++;
    if (!draining && !stopped) void drain();
  }

  /**
   * Claims while fewer than half the hold waits here (and fewer than `maxHeld` are held), so the next ones are at
   * hand when sends end. A delivery that waits too long for a slot is given back (see startWaiting).
   */
  async function drain(): Promise<void> {
    draining = true;
    try {
      while (!stopped) {
        sizeHold();
        const room = maxHeld - inFlight - waiting.length;
        if (waiting.length >= maxHeld / 2 || room < Math.ceil(concurrency / 2)) {
          mayHaveMore = true;
          return;
        }
        const seen = signals;
        const want = Math.min(room, CLAIM_MAX);
        const rows = await repo.claimDue(owner, deps.clock.now(), want, leaseMs);
        const claimedAt = performance.now();
        for (const row of rows) waiting.push({ row, claimedAt });
        startWaiting();
        if (rows.length < want && signals === seen) {
          mayHaveMore = false;
          return;
        }
      }
    } catch (err) {
      log.warn({ err }, 'could not claim webhook deliveries; the sweep tries again');
    } finally {
      draining = false;
    }
  }

  function startWaiting(): void {
    const stale: string[] = [];
    while (inFlight < concurrency && waiting.length && !stopped) {
      const { row, claimedAt } = waiting.shift()!;
      if (performance.now() - claimedAt > staleAfterMs) {
        stale.push(row.id);
        continue;
      }
      inFlight++;
      startedSince++;
      void send(row)
        .catch((err) => log.error({ err, deliveryId: row.id }, 'webhook delivery crashed'))
        .finally(() => {
          inFlight--;
          startWaiting();
          if (mayHaveMore && waiting.length < maxHeld / 2) wake();
        });
    }
    // Slow endpoints held the slots: anyone (this process too) claims these again.
    if (stale.length)
      repo
        .release(owner, stale, deps.clock.now())
        .then(wake, (err) => log.warn({ err }, 'could not give back webhook deliveries'));
  }

  async function send(row: ClaimedDelivery): Promise<void> {
    const attempt = row.attempts + 1;
    const startedAt = deps.clock.now();
    const result: AttemptResult = {
      deliveryId: row.id,
      endpointId: row.endpointId,
      attempt,
      startedAt,
      success: false,
      gone: false,
      statusCode: null,
      latencyMs: 0,
      responseBody: null,
      error: null,
      nextAttemptAt: null,
    };
    if (!row.enabled) return record({ ...result, cancelled: true });
    const began = performance.now();
    try {
      const secrets = [row.secret, row.previousSecret].flatMap((s) => (s ? [openSecret(s)] : []));
      const body = bodyOf(row);
      // The signature's timestamp is the wall clock: receivers check it against theirs (5-minute tolerance).
      const sentAt = new Date();
      const answer = await client.send({
        url: row.url,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': WEBHOOK_USER_AGENT,
          'webhook-id': row.eventId,
          'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
          'webhook-signature': signatureHeader(secrets, row.eventId, sentAt, body),
        },
        body,
        timeoutMs,
        keepBytes: RESPONSE_EXCERPT_BYTES,
      });
      result.statusCode = answer.status;
      result.responseBody = excerpt(answer.body);
      result.success = answer.status >= 200 && answer.status < 300;
      result.gone = answer.status === 410;
      if (answer.status >= 300 && answer.status < 400)
        result.error = `HTTP ${answer.status}: redirects are not followed`;
    } catch (err) {
      result.error = err instanceof OutboundError ? err.message : (err as Error).message;
    }
    result.latencyMs = Math.round(performance.now() - began);
    if (!result.success && !result.gone && attempt < MAX_ATTEMPTS)
      result.nextAttemptAt = new Date(startedAt.getTime() + RETRY_DELAYS_MS[attempt - 1]!);
    record(result);
  }

  function record(result: AttemptResult): void {
    results.push(result);
    if (results.length >= FLUSH_ROWS) void flush();
    else flushTimer ??= setTimeout(() => void flush(), FLUSH_EVERY_MS);
  }

  /** Writes the recorded attempts (one transaction per batch, one batch at a time). */
  function flush(): Promise<void> {
    clearTimeout(flushTimer);
    flushTimer = undefined;
    flushing = flushing.then(async () => {
      const batch = results;
      results = [];
      if (!batch.length) return;
      const now = deps.clock.now();
      const cutoff = new Date(now.getTime() - DISABLE_AFTER_FAILING_MS);
      try {
        const disabled = await repo.recordResults(owner, batch, cutoff, now);
        if (disabled.length) log.warn({ endpointIds: disabled }, 'webhook endpoints disabled');
      } catch (err) {
        // Their leases run out and the deliveries are sent again.
        log.error({ err, deliveries: batch.length }, 'could not record webhook attempts');
      }
      const soonest = Math.min(...batch.map((r) => r.nextAttemptAt?.getTime() ?? Number.POSITIVE_INFINITY));
      scheduleRetry(soonest - now.getTime());
    });
    return flushing;
  }

  /** A retry due before the next sweep gets a timer of its own. */
  function scheduleRetry(inMs: number): void {
    if (stopped || !(inMs < SWEEP_MS)) return;
    const at = Date.now() + Math.max(0, inMs);
    if (retryTimer && retryAt <= at) return;
    clearTimeout(retryTimer);
    retryAt = at;
    retryTimer = setTimeout(
      () => {
        retryTimer = undefined;
        retryAt = Number.POSITIVE_INFINITY;
        wake();
      },
      Math.max(0, inMs),
    );
    retryTimer.unref();
  }

  function sweep(): void {
    sweepTimer = setTimeout(
      () => {
        wake();
        if (!stopped) sweep();
      },
      SWEEP_MS + Math.random() * 1000,
    );
    sweepTimer.unref();
  }

  return {
    owner,
    wake,
    async start(): Promise<void> {
      stopped = false;
      if (deps.config.DATABASE_URL && !deps.config.SECRET_KEY)
        log.warn(
          'SECRET_KEY is not set: webhook secrets are sealed with DATA_DIR/secret.key, which processes on other ' +
            'machines do not have (their deliveries would fail); set the same SECRET_KEY everywhere',
        );
      cleanups.push(await deps.notifier.subscribe(WEBHOOK_WAKE_CHANNEL, wake));
      // Notifications sent while the listener was down are lost: look now.
      cleanups.push(deps.notifier.onReconnect(wake));
      sweep();
      wake();
    },
    /** Stops claiming, lets the sends under way finish (bounded by the timeout) and records them. */
    async stop(): Promise<void> {
      stopped = true;
      for (const cleanup of cleanups.splice(0)) cleanup();
      clearTimeout(sweepTimer);
      clearTimeout(retryTimer);
      await repo
        .release(
          owner,
          waiting.splice(0).map(({ row }) => row.id),
          deps.clock.now(),
        )
        .catch(() => {});
      const deadline = Date.now() + timeoutMs + 1_000;
      while (inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await flush();
    },
  };
}
