/**
 * MCP (docs/mcp.md): `tools/call` of `search_leads` over Streamable HTTP (POST /mcp in a session, answered as JSON)
 * against the same search over its REST route (GET /api/leads), on one service and one database in the same run,
 * same client (a keep-alive HTTP agent in this process), same concurrency. Rounds interleave the two; the ratio is
 * the median of BENCH_MCP_ROUNDS rounds (default 5). Target (issue 24): >= 0.8.
 */
import { closedLoop, median, type Row, request, seedLeads, startBenchService } from './lib.ts';

const LEADS = 20_000;
const CONCURRENCY = 8;
const SECONDS = 3;
const ROUNDS = Number(process.env.BENCH_MCP_ROUNDS ?? 5);
const TARGET = 0.8;
const QUERY = { company: 'Company 7', limit: 50 };

export async function benchMcp(): Promise<Row[]> {
  const service = await startBenchService('mcp', { workers: false });
  try {
    await seedLeads(service.pool, service.user.id, LEADS, 40);
    const accept = { accept: 'application/json, text/event-stream' };
    const init = await request(
      service.port,
      'POST',
      '/mcp',
      { ...service.auth, ...accept },
      {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
      },
    );
    const session = init.headers['mcp-session-id'];
    if (init.status !== 200 || typeof session !== 'string') throw new Error(`initialize: ${init.status} ${init.body}`);
    const mcpHeaders = { ...service.auth, ...accept, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    await request(service.port, 'POST', '/mcp', mcpHeaders, { jsonrpc: '2.0', method: 'notifications/initialized' });

    let id = 1;
    const rest = async () => {
      const res = await request(
        service.port,
        'GET',
        `/api/leads?company=${encodeURIComponent(QUERY.company)}&limit=${QUERY.limit}`,
        service.auth,
      );
      if (res.status !== 200) throw new Error(`REST ${res.status} ${res.body}`);
    };
    const mcp = async () => {
      const res = await request(service.port, 'POST', '/mcp', mcpHeaders, {
        jsonrpc: '2.0',
        id: id++,
        method: 'tools/call',
        params: { name: 'search_leads', arguments: QUERY },
      });
      if (res.status !== 200 || !res.body.includes('"structuredContent"'))
        throw new Error(`MCP ${res.status} ${res.body.slice(0, 300)}`);
    };
    // Same answer both ways before anything is timed.
    await rest();
    await mcp();
    await closedLoop(rest, CONCURRENCY, 1);
    await closedLoop(mcp, CONCURRENCY, 1);

    const ratios: number[] = [];
    const restRates: number[] = [];
    const mcpRates: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const r = await closedLoop(rest, CONCURRENCY, SECONDS);
      const m = await closedLoop(mcp, CONCURRENCY, SECONDS);
      restRates.push(r);
      mcpRates.push(m);
      ratios.push(m / r);
      console.log(
        `round ${round}: REST ${r.toFixed(0)}/s, MCP tools/call ${m.toFixed(0)}/s, ratio ${(m / r).toFixed(2)}`,
      );
    }
    const ratio = median(ratios);
    return [
      {
        name: `REST GET /api/leads (${QUERY.limit} of ${LEADS} leads, concurrency ${CONCURRENCY}), req/s`,
        value: median(restRates).toFixed(0),
        target: 'baseline',
        pass: null,
      },
      {
        name: 'MCP tools/call search_leads over Streamable HTTP, calls/s',
        value: median(mcpRates).toFixed(0),
        target: 'reported',
        pass: null,
      },
      {
        name: `MCP ÷ REST, median of ${ROUNDS} interleaved rounds`,
        value: `${ratio.toFixed(2)} (rounds ${ratios.map((x) => x.toFixed(2)).join(', ')})`,
        target: `>= ${TARGET}`,
        pass: ratio >= TARGET,
      },
    ];
  } finally {
    await service.stop();
  }
}
