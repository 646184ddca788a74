/**
 * Outbound webhook figures on PostgreSQL, through the real service (API + in-process workers), 5 endpoints on
 * loopback receivers (a plain node:http server each, answering 200 at once):
 *   - event → first attempt: events emitted one per transaction, 20 a second; the time from each commit to the
 *     arrival of each of its deliveries (p50, p95);
 *   - throughput: BENCH_EVENTS_ROUNDS (default 5) rounds, each of BENCH_EVENTS events (default 10,000) × 5
 *     endpoints, emitted in transactions of 100 while no dispatcher runs (the emission rate is shown), then one
 *     process's dispatcher started: deliveries/s until every delivery is recorded as succeeded and its attempt
 *     committed in the database, against a bare undici POST loop to the same receivers with the same concurrency
 *     (WEBHOOK_CONCURRENCY) sending the same body and headers (signed once). The bare loop runs before and after
 *     each round, and a round's ratio is its rate over the mean of those two; the median round counts (its range
 *     is shown), so a burst of other work on the shared machine weighs on one round, not on the figure.
 * `BENCH_EVENTS=500 npm run bench -- events` for a quick check.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { loadConfig } from '../src/config.ts';
import { createWebhookDispatcher, WEBHOOK_USER_AGENT } from '../src/modules/webhooks/webhooks.dispatcher.ts';
import { recordEvent } from '../src/modules/webhooks/webhooks.repository.ts';
import { createWebhookService } from '../src/modules/webhooks/webhooks.service.ts';
import { newSigningSecret, signatureHeader } from '../src/modules/webhooks/webhooks.signing.ts';
import { startRuntime } from '../src/runtime.ts';
import { emitEvent } from '../src/shared/events.ts';
import { newId } from '../src/shared/ids.ts';
import { signedUpClient } from '../test/helpers/http-client.ts';
import { freePort } from '../test/helpers/process.ts';
import { freshBenchDatabase, median, percentile, type Row } from './lib.ts';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const ENDPOINTS = 5;
const LATENCY_EVENTS = 200;
const LATENCY_RATE_PER_S = 20;
const EMIT_BATCH = 100;
const ROUNDS = Number(process.env.BENCH_EVENTS_ROUNDS ?? 5);

interface Receiver {
  url: string;
  /** Requests answered, and the arrival time (performance.now()) of each webhook-id seen first here. */
  count: number;
  arrivals: Map<string, number>;
  trackArrivals: boolean;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const receiver: Receiver = { url: '', count: 0, arrivals: new Map(), trackArrivals: false, close: async () => {} };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = req.headers['webhook-id'];
      if (receiver.trackArrivals && typeof id === 'string' && !receiver.arrivals.has(id))
        receiver.arrivals.set(id, performance.now());
      receiver.count++;
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
      res.end('ok');
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  receiver.close = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return receiver;
}

const total = (receivers: Receiver[]) => receivers.reduce((n, r) => n + r.count, 0);

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

const leadEvent = () => ({ leadIds: [newId(), newId(), newId()], count: 3, jobId: newId(), sourceId: newId() });

/** `count` POSTs spread over the receivers from `concurrency` loops; requests per second. */
async function bareLoop(receivers: Receiver[], count: number, concurrency: number): Promise<number> {
  const agent = new Agent({ connections: concurrency, keepAliveTimeout: 10_000 });
  const body = JSON.stringify({ type: 'lead.created', timestamp: new Date().toISOString(), data: leadEvent() });
  // The headers a delivery carries (signed once): the receivers parse as much per request as from the dispatcher.
  const sentAt = new Date();
  const headers = {
    'content-type': 'application/json',
    'user-agent': WEBHOOK_USER_AGENT,
    'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
    'webhook-signature': signatureHeader([newSigningSecret()], newId(), sentAt, body),
  };
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const res = await request(receivers[i % receivers.length]!.url, {
          method: 'POST',
          headers: { ...headers, 'webhook-id': `bare-${i}` },
          body,
          dispatcher: agent,
        });
        await res.body.text();
      }
    }),
  );
  const rate = count / ((performance.now() - started) / 1000);
  await agent.close();
  return rate;
}

export async function benchEvents(): Promise<Row[]> {
  const database = await freshBenchDatabase('quarry_bench_events');
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-bench-events-'));
  const config = loadConfig({
    DATABASE_URL: database.url,
    PORT: String(port),
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    ALLOW_PRIVATE_NETWORK: 'true',
  });
  const receivers = await Promise.all(Array.from({ length: ENDPOINTS }, startReceiver));
  // The API and one dispatcher, as a `RUN_WORKERS=false` process with the webhook worker of `npm run worker`.
  const runtime = await startRuntime(config, { http: true, workers: false });
  let dispatcher = createWebhookDispatcher(runtime.deps);
  const rows: Row[] = [];
  try {
    const { db } = runtime.deps;
    /** Deliveries not yet recorded as succeeded, and attempts recorded, as committed in the database. */
    const recordedAttempts = async () => {
      const [row] = await runtime.deps.database.query<{ open: number; attempts: number }>(
        `SELECT (SELECT count(*)::int FROM webhook_deliveries WHERE status <> 'succeeded') AS open,
                (SELECT count(*)::int FROM webhook_attempts) AS attempts`,
      );
      return row!;
    };
    await signedUpClient(`http://127.0.0.1:${port}`, 'bench-events@example.com');
    const [user] = await runtime.deps.database.query<{ id: string }>(
      `SELECT id FROM users WHERE email = 'bench-events@example.com'`,
    );
    const userId = user!.id;
    const webhooks = createWebhookService(runtime.deps);
    for (const r of receivers) await webhooks.create(userId, { url: r.url, eventTypes: ['lead.created'] });

    // --- event → first attempt, at a steady pace ------------------------------------------------
    await dispatcher.start();
    for (const r of receivers) r.trackArrivals = true;
    const committed = new Map<string, number>();
    for (let i = 0; i < LATENCY_EVENTS; i++) {
      const tick = performance.now();
      const recorded = await db.transaction((tx) => recordEvent(tx, userId, 'lead.created', leadEvent()));
      if (!recorded) throw new Error('the event reached no endpoint');
      committed.set(recorded.eventId, performance.now());
      const wait = 1000 / LATENCY_RATE_PER_S - (performance.now() - tick);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    await until(() => total(receivers) >= LATENCY_EVENTS * ENDPOINTS, 60_000, 'latency deliveries');
    const latencies: number[] = [];
    for (const r of receivers) {
      for (const [id, at] of r.arrivals) latencies.push(at - committed.get(id)!);
      r.trackArrivals = false;
    }
    latencies.sort((a, b) => a - b);
    const p50 = percentile(latencies, 50);
    rows.push({
      name: `event → first attempt p50 (${LATENCY_EVENTS} events at ${LATENCY_RATE_PER_S}/s × ${ENDPOINTS} endpoints)`,
      value: `${p50.toFixed(1)} ms (p95 ${percentile(latencies, 95).toFixed(1)} ms)`,
      target: '< 200 ms',
      pass: latencies.length === LATENCY_EVENTS * ENDPOINTS && p50 < 200,
    });

    // --- throughput ------------------------------------------------------------------------------
    await dispatcher.stop();
    const deliveries = EVENTS * ENDPOINTS;
    const bareCount = Math.min(deliveries, 50_000);
    /** One round: EVENTS events emitted while no dispatcher runs, then one dispatcher until all is committed. */
    const timedRun = async () => {
      const emitStart = performance.now();
      for (let sent = 0; sent < EVENTS; sent += EMIT_BATCH) {
        await db.transaction(async (tx) => {
          for (let i = sent; i < Math.min(EVENTS, sent + EMIT_BATCH); i++)
            await emitEvent(tx, userId, 'lead.created', leadEvent());
        });
      }
      const emitRate = EVENTS / ((performance.now() - emitStart) / 1000);
      const base = total(receivers);
      const attemptsBefore = await recordedAttempts();
      dispatcher = createWebhookDispatcher(runtime.deps);
      const started = performance.now();
      await dispatcher.start();
      // The clock stops once every delivery and its attempt are committed, not when the receivers have the last
      // request (the attempts are written a batch at a time after the answers). The database is only polled once
      // the receivers have everything, so the polling does not load the dispatcher's run.
      await until(() => total(receivers) - base >= deliveries, 600_000, 'throughput deliveries');
      let recorded = { open: -1, attempts: 0 };
      const deadline = performance.now() + 60_000;
      for (;;) {
        const now = await recordedAttempts();
        recorded = { open: now.open, attempts: now.attempts - attemptsBefore.attempts };
        if ((recorded.open === 0 && recorded.attempts >= deliveries) || performance.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 2));
      }
      const secs = (performance.now() - started) / 1000;
      await dispatcher.stop();
      return { emitRate, rate: deliveries / secs, secs, ...recorded };
    };
    // The bare loop runs before and after each round (the machine's load drifts: a round is set against the mean
    // of the two around it), and the median round counts, so a burst of other work weighs on one round only. The
    // dispatcher was warmed up by the latency figure; the bare loop gets a short run of its own.
    await bareLoop(receivers, Math.min(bareCount, 2_000), config.WEBHOOK_CONCURRENCY);
    const bare = [await bareLoop(receivers, bareCount, config.WEBHOOK_CONCURRENCY)];
    const runs: Array<Awaited<ReturnType<typeof timedRun>>> = [];
    for (let round = 0; round < ROUNDS; round++) {
      runs.push(await timedRun());
      bare.push(await bareLoop(receivers, bareCount, config.WEBHOOK_CONCURRENCY));
    }
    const ratios = runs.map((run, i) => run.rate / ((bare[i]! + bare[i + 1]!) / 2));
    const ratio = median(ratios);
    const allRecorded = runs.every((run) => run.open === 0 && run.attempts === deliveries);
    const range = (values: number[]) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;
    rows.push({
      name: `events emitted, transactions of ${EMIT_BATCH} (outbox and fan-out to ${ENDPOINTS} endpoints)`,
      value: `${median(runs.map((r) => r.emitRate)).toFixed(0)} events/s (median of ${ROUNDS} rounds)`,
      target: 'informational',
      pass: null,
    });
    rows.push({
      name:
        `deliveries/s, ${EVENTS.toLocaleString('en')} events × ${ENDPOINTS} endpoints, one dispatcher, ` +
        `until every attempt is committed, median of ${ROUNDS} rounds`,
      value:
        `${median(runs.map((r) => r.rate)).toFixed(0)}/s (rounds ${runs.map((r) => r.rate.toFixed(0)).join(', ')}; ` +
        `${runs.reduce((n, r) => n + r.attempts, 0)} attempts recorded, ` +
        `${runs.reduce((n, r) => n + Math.max(0, r.open), 0)} not succeeded)`,
      target: 'informational',
      pass: null,
    });
    rows.push({
      name: `bare undici POST loop, concurrency ${config.WEBHOOK_CONCURRENCY}, same receivers, around each round`,
      value: `${median(bare).toFixed(0)}/s (${bare.map((b) => b.toFixed(0)).join(', ')})`,
      target: 'baseline',
      pass: null,
    });
    rows.push({
      name:
        `deliveries/s ÷ bare POST loop (signed, recorded, every attempt in the database), ` +
        `median of ${ROUNDS} rounds`,
      value: `${ratio.toFixed(2)} (range ${range(ratios)}; rounds ${ratios.map((r) => r.toFixed(2)).join(', ')})`,
      target: '≥ 0.6',
      pass: ratio >= 0.6 && allRecorded,
    });
  } finally {
    await dispatcher.stop();
    await runtime.stop();
    for (const r of receivers) await r.close();
    await database.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  return rows;
}
