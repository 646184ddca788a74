import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { queryRows } from '../src/db/client.ts';
import { creditTransactions, jobs, type LeadStatus, leadStatuses } from '../src/db/schema/index.ts';
import { createAnalyticsService } from '../src/modules/analytics/analytics.service.ts';
import { ManualClock } from '../src/shared/clock.ts';
import { newId } from '../src/shared/ids.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { seedLeads } from './helpers/seed.ts';
import {
  activity,
  addDays,
  type ModelJob,
  type ModelLead,
  pipeline,
  plannedRuns,
  ratio,
  slope,
  sourceFigures,
  type Window,
} from './oracles/analytics.ts';

const NOW = new Date('2026-05-20T12:00:00Z');
const TODAY = '2026-05-20';
const clock = new ManualClock(NOW);
const HOUR = 3_600_000;
let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
const projects: Record<'P1' | 'P2', string> = { P1: '', P2: '' };
const sources: Record<string, { id: string; project: string | null }> = {};
const model: ModelLead[] = [];
const modelJobs: ModelJob[] = [];

/** A small deterministic generator (mulberry32), so the seeded data is the same on every run. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const get = async (user: TestUser, url: string, status = 200) => {
  const res = await ctx.call(user, 'GET', url);
  assert.equal(res.statusCode, status, `${url}: ${res.body}`);
  return res.json();
};
const query = (w: Window) =>
  new URLSearchParams(
    Object.entries({ from: w.from, to: w.to, projectId: w.project }).filter((e): e is [string, string] => !!e[1]),
  ).toString();
const at = (day: string, hour: number) => new Date(`${day}T${String(hour).padStart(2, '0')}:15:00Z`);

before(async () => {
  ctx = await createTestContext({ clock, workers: false, env: { CREDITS_SIGNUP_GRANT: '5000' } });
  [alice, bob] = [await ctx.signup(), await ctx.signup()];
  for (const name of ['P1', 'P2'] as const) {
    projects[name] = (await ctx.call(alice, 'POST', '/api/projects', { name })).json().data.project.id;
  }
  const specs = [
    { name: 'S1', project: projects.P1, scheduleType: 'HOURLY', activate: true },
    { name: 'S2', project: projects.P2, scheduleType: 'DAILY', activate: true },
    { name: 'S3', project: null, scheduleType: 'WEEKLY', activate: true },
    { name: 'S4', project: projects.P1, scheduleType: 'HOURLY', activate: false },
  ];
  for (const s of specs) {
    const body = { name: s.name, url: `https://example.com/${s.name}`, scrapeType: 'STATIC', selectors: {} };
    const res = await ctx.call(alice, 'POST', '/api/sources', {
      ...body,
      scheduleType: s.scheduleType,
      ...(s.project ? { projectId: s.project } : {}),
    });
    assert.equal(res.statusCode, 201, res.body);
    const id = res.json().data.source.id as string;
    sources[s.name] = { id, project: s.project };
    if (s.activate) assert.equal((await ctx.call(alice, 'POST', `/api/sources/${id}/activate`)).statusCode, 200);
  }
  // Known next runs: S1 overdue by 30 min, S2 in 3 h, S3 in 2 days (WEEKLY), S4 a DRAFT.
  const nextRuns = { S1: -0.5 * HOUR, S2: 3 * HOUR, S3: 48 * HOUR, S4: HOUR };
  for (const [name, offset] of Object.entries(nextRuns)) {
    await ctx.deps.db.execute(
      sql`UPDATE sources SET next_run_at = ${new Date(NOW.getTime() + offset)} WHERE id = ${sources[name]!.id}`,
    );
  }

  // Jobs: finished ones spread over 40 days, plus two PENDING and one RUNNING.
  const rnd = random(7);
  const statuses = ['COMPLETED', 'COMPLETED', 'COMPLETED', 'FAILED', 'CANCELLED'] as const;
  for (let i = 0; i < 30; i++) {
    const source = ['S1', 'S2', 'S3'][i % 3]!;
    const startedAt = new Date(NOW.getTime() - Math.floor(rnd() * 40 * 24) * HOUR - 2 * HOUR);
    const status = statuses[i % statuses.length]!;
    modelJobs.push({
      source,
      project: sources[source]!.project,
      status,
      createdAt: new Date(startedAt.getTime() - 60_000),
      startedAt,
      finishedAt: new Date(startedAt.getTime() + (30 + Math.floor(rnd() * 900)) * 1000),
      leadsFound: Math.floor(rnd() * 80),
      pages: 1 + Math.floor(rnd() * 20),
    });
  }
  for (const [source, status] of [
    ['S1', 'PENDING'],
    ['S2', 'PENDING'],
    ['S1', 'RUNNING'],
  ] as const) {
    const createdAt = new Date(NOW.getTime() - (status === 'RUNNING' ? 3 : 2) * HOUR);
    modelJobs.push({ source, project: sources[source]!.project, status, createdAt, leadsFound: 0, pages: 0 });
    if (status === 'RUNNING') modelJobs.at(-1)!.startedAt = new Date(createdAt.getTime() + 60_000);
  }
  await ctx.deps.db.insert(jobs).values(
    modelJobs.map((j, i) => ({
      id: newId(),
      userId: alice.id,
      sourceId: sources[j.source]!.id,
      name: `run ${i}`,
      status: j.status,
      leadsFound: j.leadsFound,
      pagesVisited: j.pages,
      startedAt: j.startedAt ?? null,
      finishedAt: j.finishedAt ?? null,
      createdAt: j.createdAt,
      updatedAt: j.finishedAt ?? j.createdAt,
    })),
  );

  // Leads over the last 45 days, every status, 85% with an email, half of those validated.
  const results = ['valid', 'valid', 'risky', 'invalid', 'unknown'] as const;
  const sourceNames = ['S1', 'S2', 'S3', null] as const;
  for (let i = 0; i < 260; i++) {
    const day = addDays(TODAY, -Math.floor(rnd() * 45));
    const source = sourceNames[Math.floor(rnd() * 4)]!;
    const email = rnd() < 0.85;
    const validated = email && rnd() < 0.5;
    const validatedDay = validated
      ? addDays(day, Math.min(Math.floor(rnd() * 4), (Date.parse(TODAY) - Date.parse(day)) / 86_400_000))
      : undefined;
    model.push({
      id: '',
      day,
      status: leadStatuses[Math.floor(rnd() * leadStatuses.length)] as LeadStatus,
      email,
      validation: validated ? results[Math.floor(rnd() * results.length)] : undefined,
      validatedDay,
      source,
      project: source ? sources[source]!.project : null,
    });
  }
  const ids = await seedLeads(
    ctx.deps.db,
    alice.id,
    model.map((l, i) => ({
      firstName: `Lead${i}`,
      email: l.email ? `lead${i}@example.com` : null,
      status: l.status,
      sourceId: l.source ? sources[l.source]!.id : null,
      createdAt: at(l.day, 1 + (i % 22)),
      emailValidation: l.validation
        ? {
            status: l.validation,
            tier: 'domain',
            errors: [],
            flags: [],
            checkedAt: at(l.validatedDay!, 23).toISOString(),
          }
        : null,
      validatedAt: l.validation ? at(l.validatedDay!, 23) : null,
    })),
  );
  for (const [i, id] of ids.entries()) model[i]!.id = id;
  // Bob's leads must never show in Alice's figures.
  await seedLeads(ctx.deps.db, bob.id, [{ firstName: 'Bob lead', status: 'CONVERTED', createdAt: NOW }]);
});
after(() => ctx?.close());

const checkPipeline = async (w: Window) => {
  const data = (await get(alice, `/api/analytics/pipeline-overview?${query(w)}`)).data;
  const expected = pipeline(model, w);
  assert.equal(data.totalLeads, expected.totalLeads);
  assert.deepEqual(data.byStatus, Object.fromEntries(leadStatuses.map((s) => [s, expected.byStatus[s] ?? 0])));
  assert.deepEqual(data.funnel, expected.funnel);
  assert.deepEqual(data.emailValidation, expected.emailValidation);
  const activityTo = w.to ?? TODAY;
  const start = addDays(activityTo, -29);
  const activityFrom = w.from && w.from > start ? w.from : start;
  assert.deepEqual(data.recentActivity, {
    from: activityFrom,
    to: activityTo,
    days: activity(model, modelJobs, { from: activityFrom, to: activityTo, project: w.project }),
  });
  return data;
};

describe('GET /api/analytics/pipeline-overview', () => {
  test('all time, a window, a project, both: every figure as the oracle computes it', async () => {
    const all = await checkPipeline({});
    assert.equal(all.totalLeads, 260);
    assert.ok(all.emailValidation.validated > 20 && all.funnel[1].leads > 20, 'the seed covers every figure');
    await checkPipeline({ from: addDays(TODAY, -20), to: addDays(TODAY, -5) });
    await checkPipeline({ from: addDays(TODAY, -3) });
    await checkPipeline({ to: addDays(TODAY, -40) });
    await checkPipeline({ project: projects.P1 });
    await checkPipeline({ project: projects.P2, from: addDays(TODAY, -30), to: addDays(TODAY, -1) });
  });

  test('follows lead writes through the API (create, update, delete) and survives compaction', async () => {
    const created = await ctx.call(alice, 'POST', '/api/leads', {
      sourceUrl: 'https://example.com/x',
      firstName: 'New',
      email: 'new@example.com',
    });
    assert.equal(created.statusCode, 201);
    model.push({
      id: created.json().data.lead.id,
      day: TODAY,
      status: 'NEW',
      email: true,
      source: null,
      project: null,
    });
    const changed = model.find((l) => l.status === 'NEW' && l.source === 'S1')!;
    assert.equal((await ctx.call(alice, 'PATCH', `/api/leads/${changed.id}`, { status: 'CONVERTED' })).statusCode, 200);
    changed.status = 'CONVERTED';
    const gone = model.find((l) => l.validation && l.source === 'S2')!;
    assert.equal((await ctx.call(alice, 'DELETE', `/api/leads/${gone.id}`)).statusCode, 200);
    model.splice(model.indexOf(gone), 1);
    await checkPipeline({});
    await checkPipeline({ project: projects.P1 });

    const rows = async () =>
      (await queryRows<{ n: number }>(ctx.deps.db, sql`SELECT count(*)::int AS n FROM lead_stat_deltas`))[0]!.n;
    const beforeCompaction = await rows();
    const folded = await createAnalyticsService(ctx.deps).compactLeadStats();
    assert.ok(folded > 0);
    assert.ok((await rows()) < beforeCompaction, 'compaction folds the appended rows');
    const pending = await queryRows(ctx.deps.db, sql`SELECT 1 FROM lead_stat_deltas WHERE NOT compacted`);
    assert.equal(pending.length, 0);
    await checkPipeline({});
    await checkPipeline({ from: addDays(TODAY, -10), project: projects.P2 });
  });

  test("another user's figures and projects stay out", async () => {
    const data = (await get(bob, '/api/analytics/pipeline-overview')).data;
    assert.equal(data.totalLeads, 1);
    assert.equal(data.byStatus.CONVERTED, 1);
    const foreign = await get(bob, `/api/analytics/pipeline-overview?projectId=${projects.P1}`, 404);
    assert.equal(foreign.error.details[0].field, 'projectId');
    await get(bob, `/api/analytics/sources?projectId=${projects.P1}`, 404);
    await get(bob, `/api/analytics/capacity?projectId=${projects.P1}`, 404);
    await get(alice, `/api/analytics/capacity?projectId=${newId()}`, 404);
  });
});

describe('GET /api/analytics/sources', () => {
  test('per source figures in a window, paged newest first, narrowed by project', async () => {
    const windows: Window[] = [{}, { from: addDays(TODAY, -15), to: addDays(TODAY, -2) }, { project: projects.P1 }];
    for (const w of windows) {
      const data = (await get(alice, `/api/analytics/sources?${query(w)}`)).data;
      const expectedNames = ['S4', 'S3', 'S2', 'S1'].filter((n) => !w.project || sources[n]!.project === w.project);
      assert.deepEqual(
        data.sources.map((s: { name: string }) => s.name),
        expectedNames,
      );
      for (const s of data.sources) {
        const { sourceId, name, status, scrapeType, projectId, lastRunAt, ...figures } = s;
        assert.equal(sourceId, sources[name]!.id);
        assert.equal(status, name === 'S4' ? 'DRAFT' : 'ACTIVE');
        assert.equal(scrapeType, 'STATIC');
        assert.equal(projectId, sources[name]!.project);
        assert.equal(lastRunAt, null);
        assert.deepEqual(figures, sourceFigures(name, model, modelJobs, w), `${name} ${JSON.stringify(w)}`);
      }
    }
    const seen: string[] = [];
    let cursor = '';
    do {
      const page = (await get(alice, `/api/analytics/sources?limit=1${cursor && `&cursor=${cursor}`}`)).data;
      seen.push(...page.sources.map((s: { name: string }) => s.name));
      cursor = page.nextCursor ?? '';
    } while (cursor);
    assert.deepEqual(seen, ['S4', 'S3', 'S2', 'S1']);
    assert.deepEqual((await get(bob, '/api/analytics/sources')).data.sources, []);
  });
});

describe('GET /api/analytics/capacity', () => {
  test('active and scheduled sources, planned runs, queue and throughput', async () => {
    for (const w of [
      {},
      { from: addDays(TODAY, -30), to: addDays(TODAY, -10) },
      { project: projects.P1 },
    ] as Window[]) {
      const data = (await get(alice, `/api/analytics/capacity?${query(w)}`)).data;
      const mine = (name: string) => !w.project || sources[name]!.project === w.project;
      const active = ['S1', 'S2', 'S3'].filter(mine);
      const periods: Record<string, number> = { S1: HOUR, S2: 24 * HOUR, S3: 168 * HOUR };
      const next: Record<string, number> = { S1: -0.5 * HOUR, S2: 3 * HOUR, S3: 48 * HOUR };
      const planned = active.reduce((n, s) => n + plannedRuns(new Date(NOW.getTime() + next[s]!), periods[s]!, NOW), 0);
      const jobsIn = modelJobs.filter((j) => !w.project || j.project === w.project);
      const from = w.from ?? addDays(TODAY, -6);
      const to = w.to ?? TODAY;
      const done = jobsIn.filter(
        (j) =>
          j.status === 'COMPLETED' &&
          j.finishedAt!.toISOString().slice(0, 10) >= from &&
          j.finishedAt!.toISOString().slice(0, 10) <= to,
      );
      const secs = done.reduce((n, j) => n + (j.finishedAt!.getTime() - j.startedAt!.getTime()) / 1000, 0);
      const found = done.reduce((n, j) => n + j.leadsFound, 0);
      const pages = done.reduce((n, j) => n + j.pages, 0);
      const pending = jobsIn.filter((j) => j.status === 'PENDING');
      assert.deepEqual(data, {
        projectId: w.project ?? null,
        activeSources: active.length,
        scheduledSources: active.length,
        scheduledRunsNext24h: planned,
        queue: {
          pending: pending.length,
          running: jobsIn.filter((j) => j.status === 'RUNNING').length,
          oldestPendingAt: pending.length
            ? new Date(Math.min(...pending.map((j) => j.createdAt.getTime()))).toISOString()
            : null,
        },
        throughput: {
          from,
          to,
          completedRuns: done.length,
          runsPerDay: ratio(done.length, (Date.parse(to) - Date.parse(from)) / 86_400_000 + 1, 2),
          avgRunSeconds: ratio(secs, done.length, 1),
          leadsPerRun: ratio(found, done.length, 2),
          leadsPerHour: ratio(found * 3600, secs, 2),
          pagesPerMinute: ratio(pages * 60, secs, 2),
        },
        estimatedLeadsNext24h: done.length ? Math.round((planned * found) / done.length) : null,
      });
    }
    assert.equal(plannedRuns(new Date(NOW.getTime() - 0.5 * HOUR), HOUR, NOW), 25, 'the oracle itself');
  });
});

describe('GET /api/analytics/credit-burn-rate', () => {
  test('daily usage, trend and projection from the ledger', async () => {
    const usage: Array<[number, number, string]> = [
      [-1, 40, 'pages'],
      [-1, 5, 'ai_tokens'],
      [-4, 25, 'email_validations'],
      [-12, 60, 'pages'],
      [-45, 500, 'pages'],
    ];
    await ctx.deps.db.insert(creditTransactions).values(
      usage.map(([days, credits, feature]) => ({
        userId: alice.id,
        kind: 'usage' as const,
        amount: -credits,
        balanceAfter: 0,
        feature,
        units: credits,
        createdAt: at(addDays(TODAY, days), 9),
      })),
    );
    // Not usage: a purchase and an admin adjustment are left out.
    await ctx.deps.credits.adjust(ctx.deps.db, alice.id, 700, 'goodwill', 'test');
    await ctx.deps.credits.spend(ctx.deps.db, alice.id, 'pages', 30);
    const balance = await ctx.deps.credits.balance(ctx.deps.db, alice.id);
    assert.equal(balance, 5000 + 700 - 30);
    usage.push([0, 30, 'pages']);

    for (const w of [{}, { from: addDays(TODAY, -13), to: addDays(TODAY, -1) }]) {
      const from = w.from ?? addDays(TODAY, -29);
      const to = w.to ?? TODAY;
      const data = (await get(alice, `/api/analytics/credit-burn-rate?${query(w)}`)).data;
      const days: Array<{ date: string; credits: number }> = [];
      for (let d = from; d <= to; d = addDays(d, 1)) {
        days.push({ date: d, credits: usage.filter(([o]) => addDays(TODAY, o) === d).reduce((n, [, c]) => n + c, 0) });
      }
      const used = days.reduce((n, d) => n + d.credits, 0);
      const mean = used / days.length;
      const byFeature = new Map<string, number>();
      for (const [o, c, f] of usage)
        if (addDays(TODAY, o) >= from && addDays(TODAY, o) <= to) byFeature.set(f, (byFeature.get(f) ?? 0) + c);
      assert.deepEqual(data.days, days);
      assert.equal(data.usedInWindow, used);
      assert.equal(data.balance, balance);
      assert.equal(data.averagePerDay, Math.round(mean * 100) / 100);
      assert.ok(Math.abs(data.trendPerDay - slope(days.map((d) => d.credits))!) < 1e-4);
      assert.deepEqual(
        data.byFeature,
        [...byFeature].sort().map(([feature, credits]) => ({ feature, credits, units: credits })),
      );
      assert.equal(data.projection.daysLeft, ratio(balance, mean, 1));
      assert.equal(data.projection.runsOutOn, addDays(TODAY, Math.floor(balance / mean)));
    }
    const idle = (await get(bob, '/api/analytics/credit-burn-rate')).data;
    assert.equal(idle.usedInWindow, 0);
    assert.deepEqual(idle.projection, { daysLeft: null, runsOutOn: null });
  });
});

describe('bad input is a 400 naming the field', () => {
  test('dates, order, uuids, unknown parameters', async () => {
    const cases: Array<[string, string]> = [
      ['/api/analytics/pipeline-overview?from=2026-05-10&to=2026-05-01', 'from'],
      ['/api/analytics/pipeline-overview?from=2026-02-30', 'from'],
      ['/api/analytics/sources?to=yesterday', 'to'],
      ['/api/analytics/sources?from=2026-05-01T00:00:00', 'from'],
      ['/api/analytics/sources?from=2026-02-30T10:00:00Z', 'from'],
      ['/api/analytics/sources?to=2026-05-01T25:00:00Z', 'to'],
      ['/api/analytics/capacity?projectId=not-a-uuid', 'projectId'],
      ['/api/analytics/sources?limit=0', 'limit'],
      ['/api/analytics/sources?cursor=nonsense', 'cursor'],
      [`/api/analytics/credit-burn-rate?projectId=${projects.P1}`, 'projectId'],
      ['/api/analytics/credit-burn-rate?from=2024-01-01&to=2026-01-01', 'from'],
      ['/api/analytics/capacity?from=2027-01-01', 'from'],
    ];
    for (const [url, field] of cases) {
      const body = await get(alice, url, 400);
      assert.equal(body.error.code, 'VALIDATION_ERROR', url);
      assert.ok(
        body.error.details.some((d: { field: string }) => d.field === field),
        `${url}: ${JSON.stringify(body.error.details)}`,
      );
    }
    assert.equal((await ctx.call(undefined, 'GET', '/api/analytics/capacity')).statusCode, 401);
  });

  test('each failing field is reported once, in the message and in the details', async () => {
    const body = await get(alice, '/api/analytics/pipeline-overview?from=2026-02-30&to=yesterday', 400);
    assert.equal(body.error.message, 'Invalid from, to');
    assert.deepEqual(
      body.error.details.map((d: { field: string }) => d.field),
      ['from', 'to'],
    );
    assert.match(body.error.details[0].message, /YYYY-MM-DD.*ISO 8601 date-time/);
  });
});

describe('ISO 8601 date-times stand for their UTC day', () => {
  test('Z, an offset and fractions: the same figures as the day window, and the window names the days', async () => {
    const from = addDays(TODAY, -20);
    const to = addDays(TODAY, -5);
    const byDay = (await get(alice, `/api/analytics/pipeline-overview?from=${from}&to=${to}`)).data;
    // 23:30 at -05:00 is 04:30 UTC of the next day; 00:30 at +01:00 is 23:30 UTC of the day before.
    const params = new URLSearchParams({
      from: `${addDays(from, -1)}T23:30:00-05:00`,
      to: `${addDays(to, 1)}T00:30:00.000+01:00`,
    });
    const byTime = (await get(alice, `/api/analytics/pipeline-overview?${params}`)).data;
    assert.equal(byTime.window.from, from);
    assert.equal(byTime.window.to, to);
    assert.deepEqual(byTime, byDay);
    const issue = (await get(alice, `/api/analytics/sources?from=${TODAY}T14:00:00.000Z`)).data;
    assert.equal(issue.window.from, TODAY);
    const burn = (await get(alice, `/api/analytics/credit-burn-rate?to=${TODAY}T23:59:59.999999Z`)).data;
    assert.equal(burn.to, TODAY);
  });
});
