/**
 * `wait_for_job`: the one tool that is not a route. It follows a job until it ends (or the wait's time runs
 * out) and, when the client asked for progress (`_meta.progressToken`), sends `notifications/progress` as the
 * job advances. Updates arrive over the job channel every process publishes to (PostgreSQL NOTIFY), so the job may
 * run on any worker; a slow poll of the job route covers a lost notification.
 */
import type { FastifyInstance } from 'fastify';
import type { Notifier } from '../../shared/notify.ts';
import { JOB_UPDATE_CHANNEL } from '../jobs/index.ts';
import { callRouteTool, errorResult, type ToolCaller, type ToolResult } from './mcp.invoke.ts';
import type { ToolDefinition, ToolPlan } from './mcp.tool-schemas.ts';

const ENDED = new Set(['COMPLETED', 'FAILED', 'CANCELLED']);
const POLL_MS = 2_000;
export const MAX_WAIT_SECONDS = 300;

export const waitForJobTool = (getJob: ToolPlan): ToolDefinition => ({
  name: 'wait_for_job',
  title: 'Wait for a job',
  description:
    'Waits until a scraping job ends (COMPLETED, FAILED or CANCELLED) or `timeoutSeconds` pass, then answers the ' +
    'job as get_job does. With a progress token the client receives progress notifications (pages visited, leads ' +
    'found) while it waits.',
  inputSchema: {
    type: 'object',
    properties: {
      id: { type: 'string', description: 'The job (UUID)' },
      timeoutSeconds: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_WAIT_SECONDS,
        default: 60,
        description: `How long to wait at most (default 60, at most ${MAX_WAIT_SECONDS})`,
      },
    },
    required: ['id'],
  },
  ...(getJob.definition.outputSchema ? { outputSchema: getJob.definition.outputSchema } : {}),
  annotations: {
    title: 'Wait for a job',
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
});

interface JobSnapshot {
  id: string;
  status: string;
  progress: number;
  pagesVisited: number;
  leadsFound: number;
}

export interface WaitContext {
  app: FastifyInstance;
  getJob: ToolPlan;
  caller: ToolCaller;
  notifier: Notifier;
  signal: AbortSignal;
  /** Sends one progress notification (absent when the client asked for none). */
  progress?: (job: JobSnapshot) => Promise<void>;
}

export async function waitForJob(args: Record<string, unknown>, ctx: WaitContext): Promise<ToolResult> {
  const seconds = args.timeoutSeconds ?? 60;
  if (!Number.isInteger(seconds) || (seconds as number) < 1 || (seconds as number) > MAX_WAIT_SECONDS) {
    return errorResult({
      code: 'VALIDATION_ERROR',
      message: `timeoutSeconds must be an integer from 1 to ${MAX_WAIT_SECONDS}`,
      details: [{ field: 'timeoutSeconds', message: `from 1 to ${MAX_WAIT_SECONDS}` }],
    });
  }
  // Each read authenticates the key again (the route's own pass, not the principal the call began with): a key
  // revoked or an account suspended during a wait of minutes stops it at the next read.
  const { principal: _once, ...caller } = ctx.caller;
  const read = () => callRouteTool(ctx.app, ctx.getJob, { id: args.id }, caller);
  const jobOf = (result: ToolResult) => (result.structuredContent as { job: JobSnapshot }).job;
  let latest = await read();
  if (latest.isError) return latest;
  const id = jobOf(latest).id;
  let lastReported = '';
  const report = async (job: JobSnapshot) => {
    const key = `${job.status}:${job.progress}:${job.pagesVisited}:${job.leadsFound}`;
    if (!ctx.progress || key === lastReported) return;
    lastReported = key;
    await ctx.progress(job).catch(() => {});
  };
  const ended = () => ENDED.has(jobOf(latest).status);
  await report(jobOf(latest));
  if (ended()) return latest;

  return new Promise<ToolResult>((resolve) => {
    let finished = false;
    let unsubscribe: (() => void) | undefined;
    const finish = async () => {
      if (finished) return;
      finished = true;
      clearTimeout(deadline);
      clearInterval(poll);
      unsubscribe?.();
      ctx.signal.removeEventListener('abort', finish);
      resolve(await read());
    };
    const refresh = async () => {
      if (finished) return;
      const next = await read();
      if (next.isError) return;
      latest = next;
      await report(jobOf(latest));
      if (ended()) await finish();
    };
    const deadline = setTimeout(finish, (seconds as number) * 1000);
    const poll = setInterval(refresh, POLL_MS);
    ctx.signal.addEventListener('abort', finish, { once: true });
    ctx.notifier
      .subscribe(JOB_UPDATE_CHANNEL, (payload) => {
        try {
          const update = JSON.parse(payload) as JobSnapshot;
          if (update.id !== id) return;
          void report(update);
          if (ENDED.has(update.status)) void finish();
        } catch {
          // a payload that is not ours: ignore
        }
      })
      .then((remove) => {
        if (finished) remove();
        else unsubscribe = remove;
      });
  });
}
