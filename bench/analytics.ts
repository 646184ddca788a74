/**
 * Analytics over 1,000,000 leads of one user (issue "Analytics"): `GET /api/analytics/pipeline-overview`
 * and `GET /api/analytics/sources`, p99 under 300 ms on PostgreSQL, with and without a window and a
 * project; and what keeping the lead counts costs a bulk write. BENCH_LEADS sets the number of leads.
 */
import { createAnalyticsService } from '../src/modules/analytics/analytics.service.ts';
import { seedPipeline } from './analytics-seed.ts';
import { median, percentile, type Row, request, startBenchService } from './lib.ts';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200);
const TARGET_MS = 300;

export async function benchAnalytics(): Promise<Row[]> {
  const rows: Row[] = [];
  // No workers: nothing but the requests timed runs in the service.
  const service = await startBenchService('bench_analytics', { workers: false });
  const { port, auth, user, pool, runtime } = service;
  try {
    const get = async (url: string) => {
      const res = await request(port, 'GET', url, auth);
      if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${res.body.slice(0, 300)}`);
      return { ms: res.ms, data: JSON.parse(res.body).data };
    };
    const total = Number(process.env.BENCH_LEADS ?? 1_000_000);
    let t = performance.now();
    const { projectIds } = await seedPipeline(pool, user.id, total);
    rows.push({
      name: `seed ${total} leads, 40 sources, 2,000 jobs (lead counts kept by triggers)`,
      value: `${((performance.now() - t) / 1000).toFixed(1)} s`,
      target: '',
      pass: null,
    });
    const first = await get('/api/analytics/pipeline-overview');
    if (first.data.totalLeads !== total) throw new Error(`totalLeads ${first.data.totalLeads}, expected ${total}`);
    rows.push({
      name: 'first pipeline-overview after the import',
      value: `${first.ms.toFixed(1)} ms`,
      target: '',
      pass: null,
    });
    t = performance.now();
    const folded = await createAnalyticsService(runtime.deps).compactLeadStats();
    const kept = (await pool.query('SELECT count(*)::int AS n FROM lead_stat_deltas')).rows[0].n;
    rows.push({
      name: `compaction (${folded} rows folded into ${kept})`,
      value: `${(performance.now() - t).toFixed(0)} ms`,
      target: '',
      pass: null,
    });

    const today = new Date().toISOString().slice(0, 10);
    const monthAgo = new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10);
    const variants = ['', `?from=${monthAgo}&to=${today}`, `?projectId=${projectIds[0]}`];
    for (const path of ['pipeline-overview', 'sources']) {
      const times: number[] = [];
      for (let i = 0; i < REQUESTS; i++) times.push((await get(`/api/analytics/${path}${variants[i % 3]}`)).ms);
      times.sort((a, b) => a - b);
      const p99 = percentile(times, 99);
      rows.push({
        name: `GET /api/analytics/${path} p50`,
        value: `${percentile(times, 50).toFixed(1)} ms`,
        target: '',
        pass: null,
      });
      rows.push({
        name: `GET /api/analytics/${path} p99 (${total} leads; all, 30 days, one project)`,
        value: `${p99.toFixed(1)} ms`,
        target: `< ${TARGET_MS} ms`,
        pass: p99 < TARGET_MS,
      });
    }

    // The write side: a bulk status change of 1,000 leads appends its signed counts in the same statement.
    const leadIds = (
      await pool.query('SELECT id FROM leads WHERE user_id = $1 ORDER BY id LIMIT 1000', [user.id])
    ).rows.map((r) => r.id as string);
    const writes: number[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await request(port, 'PATCH', '/api/leads/bulk', auth, {
        leadIds,
        updates: { status: i % 2 ? 'QUALIFIED' : 'CONTACTED' },
      });
      if (res.status !== 200) throw new Error(`bulk failed: ${res.status} ${res.body.slice(0, 300)}`);
      writes.push(res.ms);
    }
    rows.push({
      name: 'PATCH /api/leads/bulk (1000 leads, counts and account marks kept), median',
      value: `${median(writes).toFixed(1)} ms`,
      target: '',
      pass: null,
    });
    const after = await get('/api/analytics/pipeline-overview');
    if (after.data.totalLeads !== total || after.data.byStatus.CONTACTED === first.data.byStatus.CONTACTED) {
      throw new Error('the bulk updates did not show in the figures');
    }
  } finally {
    await service.stop();
  }
  return rows;
}
