/**
 * MCP (docs/mcp.md): `tools/call` of `search_leads` over Streamable HTTP (POST /mcp in a session, answered as JSON)
 * against the same search over its REST route (GET /api/leads), on one service and one database in the same run,
 * same client (a keep-alive HTTP agent in this process), same concurrency. Each round gives both SECONDS of load,
 * in SLICES alternating slices (REST, MCP, REST, MCP…), so a neighbour's load on a shared machine falls on both
 * alike; a round's ratio is MCP calls ÷ REST requests, and the figure is the median of BENCH_MCP_ROUNDS rounds
 * (default 5). Target (issue 24): >= 0.8.
 */
import { type BenchService, closedLoop, median, type Row, request, seedLeads, startBenchService } from './lib.ts';

const LEADS = 20_000;
const CONCURRENCY = 8;
const SECONDS = 3;
const SLICES = 6;
const ROUNDS = Number(process.env.BENCH_MCP_ROUNDS ?? 5);
const TARGET = 0.8;
const QUERY = { company: 'Company 7', limit: 50 };

export async function benchMcp(): Promise<Row[]> {
  const service = await startBenchService('mcp', { workers: false });
  try {
    const { rest, mcp } = await benchCalls(service);
    // Same answer both ways before anything is timed.
    await rest();
    await mcp();
    await closedLoop(rest, CONCURRENCY, 1);
    await closedLoop(mcp, CONCURRENCY, 1);

    const ratios: number[] = [];
    const restRates: number[] = [];
    const mcpRates: number[] = [];
    const slice = SECONDS / SLICES;
    for (let round = 1; round <= ROUNDS; round++) {
      let r = 0;
      let m = 0;
      for (let i = 0; i < SLICES; i++) {
        r += (await closedLoop(rest, CONCURRENCY, slice)) / SLICES;
        m += (await closedLoop(mcp, CONCURRENCY, slice)) / SLICES;
      }
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
        name: `MCP ÷ REST, median of ${ROUNDS} rounds (${SLICES} alternating slices each)`,
        value: `${ratio.toFixed(2)} (rounds ${ratios.map((x) => x.toFixed(2)).join(', ')})`,
        target: `>= ${TARGET}`,
        pass: ratio >= TARGET,
      },
    ];
  } finally {
    await service.stop();
  }
}

/**
 * The bench's two calls on a service seeded here with LEADS leads: the REST search, and the same search as
 * `tools/call search_leads` in an MCP session opened here. Each throws unless it answered as it should.
 */
export async function benchCalls(service: BenchService) {
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
  return { rest, mcp };
}
