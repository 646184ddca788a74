/**
 * The interleaved in-process measure of bench/NOTES-mcp.md (not a `npm run bench` section): the bench's service,
 * data, client and calls, timed in BLOCKS of OPS operations alternating REST, MCP, REST, MCP… at concurrency 8.
 * Per block: wall time and node CPU (`process.cpuUsage`, client included) per operation. Prints the median of the
 * per-pair ratios (REST time ÷ MCP time, the bench's ratio) and of the CPU per operation.
 * `node bench/mcp-inprocess.ts [blocks] [ops]`; add `--cpu-prof` before the script for a profile (with ONLY=…).
 */
import { median, startBenchService } from './lib.ts';
import { benchCalls } from './mcp.ts';

const BLOCKS = Number(process.argv[2] ?? 40);
const OPS = Number(process.argv[3] ?? 200);
const CONCURRENCY = 8;

const service = await startBenchService('mcp_inprocess', { workers: false });
try {
  const { rest, mcp } = await benchCalls(service);
  /** `ops` calls from CONCURRENCY loops: wall and CPU microseconds per call. */
  const block = async (fn: () => Promise<void>, ops: number) => {
    let left = ops;
    const cpu = process.cpuUsage();
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (left-- > 0) await fn();
      }),
    );
    const used = process.cpuUsage(cpu);
    return { wall: ((performance.now() - started) * 1000) / ops, cpu: (used.user + used.system) / ops };
  };
  await block(rest, 400);
  await block(mcp, 400);
  const ratios: number[] = [];
  const cpuRest: number[] = [];
  const cpuMcp: number[] = [];
  // ONLY=rest or ONLY=mcp times one side alone (for a profile of it); the ratio then means nothing.
  const only = process.env.ONLY;
  for (let i = 0; i < BLOCKS; i++) {
    const r = await block(only === 'mcp' ? mcp : rest, OPS);
    const m = await block(only === 'rest' ? rest : mcp, OPS);
    ratios.push(r.wall / m.wall);
    cpuRest.push(r.cpu);
    cpuMcp.push(m.cpu);
  }
  const sorted = [...ratios].sort((a, b) => a - b);
  console.log(
    `MCP ÷ REST (time ratio) median ${median(ratios).toFixed(3)} (quartiles ${sorted[Math.floor(BLOCKS / 4)]!.toFixed(3)}–${sorted[Math.floor((3 * BLOCKS) / 4)]!.toFixed(3)}); ` +
      `node CPU per op: REST ${median(cpuRest).toFixed(0)} µs, MCP ${median(cpuMcp).toFixed(0)} µs ` +
      `(${BLOCKS} blocks of ${OPS})`,
  );
} finally {
  await service.stop();
}
