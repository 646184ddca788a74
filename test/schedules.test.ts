import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { jobs } from '../src/db/schema/index.ts';
import { dispatchDueSources } from '../src/modules/jobs/jobs.scheduler.ts';
import { createJobService } from '../src/modules/jobs/jobs.service.ts';
import { QUEUES } from '../src/queue/queues.ts';
import { registerSchedules } from '../src/workers.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';

// The scheduler with an injected clock; workers off, so the jobs it starts stay PENDING for inspection.
const clock = {
  current: new Date('2026-11-21T10:00:00.000Z'),
  now() {
    return new Date(this.current);
  },
};
const advance = (ms: number) => (clock.current = new Date(clock.current.getTime() + ms));
const HOUR = 3_600_000;

let ctx: TestContext;
let alice: TestUser;
let root: TestUser;
before(async () => {
  ctx = await createTestContext({ workers: false, clock, env: { ADMIN_EMAILS: 'root@example.com' } });
  alice = await ctx.signup();
  root = await ctx.signup({ email: 'root@example.com' });
});
after(async () => ctx?.close());

const dispatch = () => dispatchDueSources(ctx.deps, createJobService(ctx.deps));

async function source(scheduleType: string, activate = true) {
  const res = await ctx.call(alice, 'POST', '/api/sources', {
    name: `${scheduleType} source`,
    url: 'https://example.com/',
    scrapeType: 'STATIC',
    selectors: {},
    scheduleType,
  });
  const s = res.json().data.source;
  if (activate) await ctx.call(alice, 'POST', `/api/sources/${s.id}/activate`);
  return s as { id: string };
}

const jobsOf = (sourceId: string) => ctx.deps.db.select().from(jobs).where(eq(jobs.sourceId, sourceId));
const view = async (id: string) => (await ctx.call(alice, 'GET', `/api/sources/${id}`)).json().data.source;

describe('source schedules', () => {
  test('an HOURLY source runs once per hour, not before; nextRunAt moves on', async () => {
    const hourly = await source('HOURLY');
    advance(HOUR - 60_000);
    await dispatch();
    assert.equal((await jobsOf(hourly.id)).length, 0, 'not due yet');

    advance(61_000);
    await dispatch();
    await dispatch(); // a second tick in the same period starts nothing
    const started = await jobsOf(hourly.id);
    assert.equal(started.length, 1);
    assert.equal(started[0]!.trigger, 'schedule');
    assert.equal(started[0]!.status, 'PENDING');
    const v = await view(hourly.id);
    assert.equal(
      Date.parse(v.nextRunAt) - clock.current.getTime() + 1000,
      HOUR,
      'next run one period after the due time',
    );
    assert.ok(v.lastRunAt);
  });

  test('ticks racing in several processes start one run per period', async () => {
    const daily = await source('DAILY');
    advance(24 * HOUR + 1000);
    const results = await Promise.all([dispatch(), dispatch(), dispatch(), dispatch()]);
    assert.equal((await jobsOf(daily.id)).length, 1);
    assert.equal(results.flat().filter((id) => id).length >= 1, true);
  });

  test(
    'a run still going is not doubled; a long outage gives one catch-up run, not one per missed ' + 'period',
    async () => {
      const weekly = await source('WEEKLY');
      advance(7 * 24 * HOUR + 1000);
      await dispatch();
      assert.equal((await jobsOf(weekly.id)).length, 1);
      advance(7 * 24 * HOUR);
      await dispatch();
      assert.equal((await jobsOf(weekly.id)).length, 1, 'the previous run is still PENDING');

      await ctx.deps.db.update(jobs).set({ status: 'COMPLETED' }).where(eq(jobs.sourceId, weekly.id));
      advance(5 * 7 * 24 * HOUR);
      await dispatch();
      await dispatch();
      assert.equal((await jobsOf(weekly.id)).length, 2);
      assert.ok(Date.parse((await view(weekly.id)).nextRunAt) > clock.current.getTime());
    },
  );

  test('MANUAL, DRAFT and paused sources never run by themselves', async () => {
    const manual = await source('MANUAL');
    const draft = await source('HOURLY', false);
    const paused = await source('HOURLY');
    await ctx.call(alice, 'PATCH', `/api/sources/${paused.id}`, { status: 'DRAFT' });
    advance(30 * 24 * HOUR);
    await dispatch();
    for (const s of [manual, draft, paused]) assert.equal((await jobsOf(s.id)).length, 0);
    assert.equal((await view(manual.id)).nextRunAt, null);
  });

  test("a suspended user's sources do not run; reactivated, they run at the next tick", async () => {
    const hourly = await source('HOURLY');
    const setStatus = async (status: string) => {
      const res = await ctx.call(root, 'PATCH', `/api/admin/users/${alice.id}`, { status });
      assert.equal(res.statusCode, 200, res.body);
    };
    await setStatus('suspended');
    try {
      advance(3 * HOUR);
      await dispatch();
      assert.equal((await jobsOf(hourly.id)).length, 0, 'not run while suspended');
    } finally {
      await setStatus('active');
    }
    await dispatch();
    assert.equal((await jobsOf(hourly.id)).length, 1, 'one catch-up run once active again');
  });

  test('the tick is a pg-boss cron schedule, every minute', async () => {
    await registerSchedules(ctx.deps);
    const schedules = await ctx.deps.boss.getSchedules();
    const tick = schedules.find((s) => s.name === QUEUES.sourceScheduler);
    assert.ok(tick, JSON.stringify(schedules));
    assert.equal(tick.cron, '* * * * *');
  });
});
