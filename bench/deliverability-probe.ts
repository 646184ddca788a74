/**
 * Part of `npm run bench -- deliverability` (deliverability.ts):
 * - benchProbe: validate-bulk of 1000 leads across 50 domains with SMTP probing on, against the loopback DNS
 *   server and a loopback SMTP server (test/helpers), timed from the request to the last stored result; the
 *   SMTP server counts the connections it holds per domain at once.
 */
import { startTestDnsServer, type Zone } from '../test/helpers/dns.ts';
import { startProbeServer } from '../test/helpers/smtp-probe-server.ts';
import { type Row, request, startBenchService } from './lib.ts';

const PROBE_LEADS = 1000;
const PROBE_DOMAINS = 50;
const PER_DOMAIN = 2;

export async function benchProbe(): Promise<Row[]> {
  // 40 domains with real mailboxes (every address but the random one accepted), 5 catch-all, 5 refusing all.
  const domains = Array.from({ length: PROBE_DOMAINS }, (_, i) => `d${i}.bench.test`);
  const zones: Record<string, Zone> = { 'mx.bench.test': { a: ['127.0.0.1'] } };
  for (const d of domains) zones[d] = { mx: [{ exchange: 'mx.bench.test', priority: 10 }] };
  const dns = await startTestDnsServer(zones);
  const smtp = await startProbeServer({ openDomains: domains.slice(0, 40), catchAllDomains: domains.slice(40, 45) });
  const service = await startBenchService('bench_probe', {
    workers: true,
    env: {
      ALLOW_PRIVATE_NETWORK: 'true',
      DNS_SERVERS: dns.address,
      SMTP_PROBE: 'true',
      SMTP_PROBE_FROM: 'probe@quarry.example',
      SMTP_PROBE_PORT: String(smtp.port),
      SMTP_PROBE_PER_DOMAIN: String(PER_DOMAIN),
    },
  });
  const { port, user, auth, pool } = service;
  try {
    const { rows } = await pool.query<{ id: string }>(
      `INSERT INTO leads (id, user_id, first_name, email, source_url, status, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'First' || g, 'person' || g || '@d' || (g % $3) || '.bench.test',
              'https://example.com/people', 'NEW', now(), now()
       FROM generate_series(1, $2::int) AS g
       RETURNING id`,
      [user.id, PROBE_LEADS, PROBE_DOMAINS],
    );
    const started = performance.now();
    const res = await request(port, 'POST', '/api/leads/validate-bulk', auth, {
      leadIds: rows.map((r) => r.id),
    });
    if (res.status !== 200) throw new Error(`validate-bulk: ${res.status} ${res.body}`);
    let done = 0;
    for (const deadline = performance.now() + 120_000; done < PROBE_LEADS && performance.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 50));
      const [row] = (
        await pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM leads WHERE user_id = $1 AND validated_at IS NOT NULL',
          [user.id],
        )
      ).rows;
      done = row!.n;
    }
    const secs = (performance.now() - started) / 1000;
    const tiers = (
      await pool.query<{ tier: string; n: number }>(
        `SELECT email_validation->>'tier' AS tier, count(*)::int AS n FROM leads WHERE user_id = $1 GROUP BY 1`,
        [user.id],
      )
    ).rows;
    const most = Math.max(0, ...smtp.maxConcurrent.values());
    const dataSent = smtp.connections.some((c) => c.commands.includes('DATA'));
    return [
      {
        name: `validate-bulk, ${PROBE_LEADS} leads across ${PROBE_DOMAINS} domains, SMTP probing on`,
        value: `${secs.toFixed(2)} s (${done} validated, ${smtp.connections.length} connections)`,
        target: '< 10 s',
        pass: done === PROBE_LEADS && secs < 10,
      },
      {
        name: `most probe connections to one domain at once (SMTP_PROBE_PER_DOMAIN=${PER_DOMAIN})`,
        value: `${most}${dataSent ? ' (DATA was sent!)' : ''}`,
        target: `<= ${PER_DOMAIN}`,
        pass: most >= 1 && most <= PER_DOMAIN && !dataSent,
      },
      {
        name: 'results by tier',
        value: tiers.map((t) => `${t.tier}: ${t.n}`).join(', '),
        target: 'informational',
        pass: null,
      },
    ];
  } finally {
    await service.stop();
    await smtp.close();
    await dns.close();
  }
}
