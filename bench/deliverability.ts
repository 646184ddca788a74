/**
 * Deliverability figures on PostgreSQL, through the real service over HTTP:
 *   - spam-traps/check of 1000 addresses across 50 domains (each resolved by a DNS server on loopback, so no
 *     network is in the path), the user holding 1000 leads with those addresses, 100 suppressions and 100
 *     hard bounces: one warm-up run (fills the per-process DNS cache as a running service has it), then
 *     BENCH_TRAP_RUNS runs (default 20), p50 and p99 against the 500 ms target of the README.
 * The validate-bulk figure with SMTP probing is in deliverability-probe.ts.
 */
import { startTestDnsServer, type Zone } from '../test/helpers/dns.ts';
import { benchProbe } from './deliverability-probe.ts';
import { percentile, type Row, request, startBenchService } from './lib.ts';

const ADDRESSES = 1000;
const DOMAINS = 50;
const RUNS = Number(process.env.BENCH_TRAP_RUNS ?? 20);
const TARGET_MS = 500;

export async function benchSpamTraps(): Promise<Row[]> {
  const domains = Array.from({ length: DOMAINS }, (_, i) => `d${i}.bench-mail.test`);
  const zones: Record<string, Zone> = Object.fromEntries(
    domains.map((d, i) => [
      d,
      i % 10 === 9 ? { mx: [{ exchange: '', priority: 0 }] } : { mx: [{ exchange: `mx.${d}`, priority: 10 }] },
    ]),
  );
  const dns = await startTestDnsServer(zones);
  const service = await startBenchService('bench_deliverability', {
    workers: false,
    env: { DNS_SERVERS: dns.address },
  });
  const { port, user, auth, pool } = service;
  try {
    const locals = ['jane', 'info', 'spamtrap', 'sales.lead', 'john'];
    const emails = Array.from(
      { length: ADDRESSES },
      (_, i) => `${locals[i % locals.length]}+${i}@${domains[i % DOMAINS]}`,
    );
    await pool.query(
      `INSERT INTO leads (id, user_id, email, source_url, status, provenance, created_at, updated_at)
       SELECT gen_random_uuid(), $1, e, 'https://example.com/team', 'VALID',
              jsonb_build_object('visible', n % 7 <> 0), now() - (n % 30) * interval '1 day', now()
       FROM unnest($2::text[]) WITH ORDINALITY AS t(e, n)`,
      [user.id, emails],
    );
    const suppressed = await request(port, 'POST', '/api/suppressions', auth, {
      items: emails.slice(0, 100).map((value) => ({ type: 'email', value, reason: 'bench' })),
    });
    if (suppressed.status !== 200) throw new Error(`suppressions: ${suppressed.status} ${suppressed.body}`);
    for (const email of emails.slice(100, 200)) {
      await request(port, 'POST', '/api/email-verification/bounces', auth, { email, enhancedStatus: '5.1.1' });
    }
    const check = () => request(port, 'POST', '/api/email-verification/spam-traps/check', auth, { emails });
    const warm = await check();
    if (warm.status !== 200) throw new Error(`spam-traps/check: ${warm.status} ${warm.body}`);
    const results = JSON.parse(warm.body).data.results as Array<{ risk: string }>;
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) times.push((await check()).ms);
    times.sort((a, b) => a - b);
    const p50 = percentile(times, 50);
    const p99 = percentile(times, 99);
    const risks = ['high', 'medium', 'low', 'none'].map((r) => `${r} ${results.filter((x) => x.risk === r).length}`);
    return [
      {
        name: `spam-traps/check, ${ADDRESSES} addresses / ${DOMAINS} domains`,
        value: `p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms`,
        target: `< ${TARGET_MS} ms (p99 of ${RUNS} runs)`,
        pass: results.length === ADDRESSES && p99 < TARGET_MS,
      },
      { name: '  risks found', value: risks.join(', '), target: '-', pass: null },
      { name: '  first run (cold DNS cache)', value: `${warm.ms.toFixed(0)} ms`, target: '-', pass: null },
    ];
  } finally {
    await service.stop();
    await dns.close();
  }
}

/** `npm run bench -- deliverability`: every figure of the section. */
export async function benchDeliverability(): Promise<Row[]> {
  return [...(await benchSpamTraps()), ...(await benchProbe())];
}
