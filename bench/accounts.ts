/**
 * Accounts at scale (issue "House in order"): `GET /api/accounts?limit=50` and one account's page over
 * 1,000,000 leads of one user, p99 under 100 ms on PostgreSQL; and what keeping the rollups costs a write.
 * BENCH_LEADS sets the number of leads (default 1,000,000), BENCH_ACCOUNTS the number of accounts.
 */
import { median, percentile, type Row, request, seedLeads, startBenchService } from './lib.ts';

const SORTS = ['leadCount', 'lastActivity', 'name'] as const;

export async function benchAccounts(): Promise<Row[]> {
  const rows: Row[] = [];
  // No workers: the periodic rollup job must not do the catch-up this bench times.
  const service = await startBenchService('bench_accounts', { workers: false });
  const { port, auth, user, pool } = service;
  try {
    const get = async (url: string) => {
      const res = await request(port, 'GET', url, auth);
      if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${res.body.slice(0, 300)}`);
      return { ...res, data: JSON.parse(res.body).data };
    };

    const total = Number(process.env.BENCH_LEADS ?? 1_000_000);
    const accounts = Number(process.env.BENCH_ACCOUNTS ?? 20_000);
    let t = performance.now();
    await seedLeads(pool, user.id, total, accounts);
    rows.push({
      name: `seed ${total} leads (account key kept by the database)`,
      value: `${((performance.now() - t) / 1000).toFixed(1)} s`,
      target: '',
      pass: null,
    });

    t = performance.now();
    const first = await get('/api/accounts?limit=50');
    rows.push({
      name: `first read after the import: rollups of ${accounts} accounts computed`,
      value: `${((performance.now() - t) / 1000).toFixed(2)} s`,
      target: '',
      pass: null,
    });

    const listTimes: number[] = [];
    for (let i = 0; i < 300; i++) {
      const sort = SORTS[i % SORTS.length];
      const page = await get(`/api/accounts?limit=50&sort=${sort}`);
      listTimes.push(page.ms);
      if (i % 3 === 0 && page.data.nextCursor)
        listTimes.push((await get(`/api/accounts?limit=50&sort=${sort}&cursor=${page.data.nextCursor}`)).ms);
    }
    listTimes.sort((a, b) => a - b);
    const listP99 = percentile(listTimes, 99);
    rows.push({
      name: `GET /api/accounts?limit=50 p50 (${total} leads, ${accounts} accounts)`,
      value: `${percentile(listTimes, 50).toFixed(2)} ms`,
      target: '',
      pass: null,
    });
    rows.push({
      name: 'GET /api/accounts?limit=50 p99 (three sorts, first and second pages)',
      value: `${listP99.toFixed(2)} ms`,
      target: '< 100 ms',
      pass: listP99 < 100,
    });

    // Accounts spread over the whole list, not only the first page.
    const ids = (
      await pool.query(
        `SELECT account_key FROM account_rollups WHERE user_id = $1 ORDER BY md5(account_key) LIMIT 300`,
        [user.id],
      )
    ).rows.map((r) => Buffer.from(r.account_key as string, 'utf8').toString('base64url'));
    const oneTimes: number[] = [];
    for (const id of ids) oneTimes.push((await get(`/api/accounts/${id}`)).ms);
    oneTimes.sort((a, b) => a - b);
    const oneP99 = percentile(oneTimes, 99);
    rows.push({
      name: 'GET /api/accounts/{id} p50 (its figures and 50 latest leads)',
      value: `${percentile(oneTimes, 50).toFixed(2)} ms`,
      target: '',
      pass: null,
    });
    rows.push({
      name: 'GET /api/accounts/{id} p99',
      value: `${oneP99.toFixed(2)} ms`,
      target: '< 100 ms',
      pass: oneP99 < 100,
    });

    // A write followed by a read: the bulk update marks its accounts, the next list recomputes them.
    const leadIds = (
      await pool.query('SELECT id FROM leads WHERE user_id = $1 ORDER BY id LIMIT 1000', [user.id])
    ).rows.map((r) => r.id as string);
    const writeTimes: number[] = [];
    const readTimes: number[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await request(port, 'PATCH', '/api/leads/bulk', auth, {
        leadIds,
        updates: { status: i % 2 ? 'QUALIFIED' : 'CONTACTED' },
      });
      if (res.status !== 200) throw new Error(`bulk failed: ${res.status} ${res.body.slice(0, 300)}`);
      writeTimes.push(res.ms);
      readTimes.push((await get('/api/accounts?limit=50&sort=lastActivity')).ms);
    }
    rows.push({
      name: 'PATCH /api/leads/bulk (1000 leads), median',
      value: `${median(writeTimes).toFixed(1)} ms`,
      target: '< 100 ms',
      pass: median(writeTimes) < 100,
    });
    rows.push({
      name: 'the GET /api/accounts after it (recomputes the touched accounts), median',
      value: `${median(readTimes).toFixed(1)} ms`,
      target: '',
      pass: null,
    });
    if (!first.data.accounts.length) throw new Error('no accounts listed');
  } finally {
    await service.stop();
  }
  return rows;
}
