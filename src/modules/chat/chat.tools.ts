import { type ToolSet, tool } from 'ai';
import { z } from 'zod';
import type { AppDeps } from '../../deps.ts';
import type { Principal } from '../../shared/auth.ts';
import { authorize, refusal } from '../../shared/authorization.ts';
import { AppError } from '../../shared/errors.ts';
import { isUuid } from '../../shared/ids.ts';
import { createJobBody, createJobService, listJobsQuery } from '../jobs/index.ts';
import { bulkUpdateBody, createLeadService, listLeadsQuery } from '../leads/index.ts';
import { createProfileService } from '../profiles/index.ts';
import { createSourceBody, createSourceService, listSourcesQuery } from '../sources/index.ts';
import { createUserService } from '../users/index.ts';

/**
 * The agent's tools, over the services the HTTP routes use (never SQL): the same zod schemas
 * validate the model's input, the services re-check it, and the user always comes from
 * authentication. Read tools run at once; write tools only through an approved chat_approvals row.
 */

export type ChatToolDeps = Pick<AppDeps, 'db' | 'clock' | 'boss' | 'notifier' | 'logger' | 'credits'>;

/**
 * Who the tools act for: the authenticated caller (never anything the model says). Each tool's scope is decided by
 * `authorize()` like a route's: the key's scopes and, for an organization's key, the holder's role.
 */
export type ToolActor = Principal;

const uuid = z.string().refine(isUuid, 'must be a UUID');
/** Chat answers stay small: lists are capped below the HTTP maximum. */
const chatLimit = z.number().int().min(1).max(50).default(20).describe('How many to return (1–50, default 20)');
const MAX_CHAT_BULK_IDS = 200;

function services(deps: ChatToolDeps) {
  return {
    leads: createLeadService(deps),
    sources: createSourceService(deps),
    jobs: createJobService(deps),
    profiles: createProfileService(deps),
    users: createUserService(deps),
  };
}
type Services = ReturnType<typeof services>;

/** Why the actor may not use `scope` (the route's refusal, told to the model), or undefined when they may. */
function denial(actor: ToolActor, scope: string): string | undefined {
  const decision = authorize(actor, scope);
  return decision.allowed ? undefined : `${refusal(decision, scope).message}, so this action is not allowed`;
}

// ---- write tools: defined once, run only by the approvals endpoint with the stored input

interface WriteTool<S extends z.ZodType> {
  description: string;
  schema: S;
  scope: string;
  summary(input: z.output<S>): string;
  run(svc: Services, deps: ChatToolDeps, userId: string, input: z.output<S>): Promise<unknown>;
}
const writeTool = <S extends z.ZodType>(t: WriteTool<S>) => t;

export const writeTools = {
  createSource: writeTool({
    description: "Create a scraping source (status DRAFT). Needs the user's approval before it happens.",
    schema: createSourceBody,
    scope: 'sources:write',
    summary: (i) => `Create ${i.scrapeType} source '${i.name}' for ${i.url}`,
    run: (svc, _deps, userId, input) => svc.sources.create(userId, input),
  }),
  activateSource: writeTool({
    description: 'Activate a DRAFT or ARCHIVED source so it can run (and follow its schedule). Needs approval.',
    schema: z.object({ sourceId: uuid.describe('The source to activate') }),
    scope: 'sources:write',
    summary: (i) => `Activate source ${i.sourceId}`,
    run: (svc, _deps, userId, input) => svc.sources.activate(userId, input.sourceId),
  }),
  startJob: writeTool({
    description: 'Start a scraping job (one crawl) of an ACTIVE source. Needs approval.',
    schema: createJobBody,
    scope: 'jobs:write',
    summary: (i) => `Start job '${i.name}' on source ${i.sourceId}`,
    run: (svc, _deps, userId, input) => svc.jobs.create(userId, input),
  }),
  cancelJob: writeTool({
    description: 'Cancel a PENDING or RUNNING job (a finished job is left alone). Needs approval.',
    schema: z.object({ jobId: uuid.describe('The job to cancel') }),
    scope: 'jobs:write',
    summary: (i) => `Cancel job ${i.jobId}`,
    // Not jobs.cancelOrDelete: that DELETES a finished job.
    async run(svc, _deps, userId, input) {
      const cancelled = await svc.jobs.cancel(userId, input.jobId);
      if (cancelled) return cancelled;
      const { status } = await svc.jobs.owned(userId, input.jobId);
      throw new AppError('INVALID_STATUS', `Job is ${status}; only PENDING or RUNNING jobs can be cancelled`);
    },
  }),
  updateLeads: writeTool({
    description: 'Bulk-update leads: set a status and/or add or remove tags. Needs approval.',
    schema: bulkUpdateBody.extend({
      leadIds: z.array(z.string()).min(1).max(MAX_CHAT_BULK_IDS).describe('Lead ids (UUIDs)'),
    }),
    scope: 'leads:write',
    summary: (i) => {
      const what = [
        i.updates.status ? `set status to ${i.updates.status}` : '',
        i.updates.addTags?.length ? `add tags ${i.updates.addTags.join(', ')}` : '',
        i.updates.removeTags?.length ? `remove tags ${i.updates.removeTags.join(', ')}` : '',
      ].filter(Boolean);
      return `Update ${i.leadIds.length} lead${i.leadIds.length === 1 ? '' : 's'}: ${what.join('; ')}`;
    },
    run: (svc, _deps, userId, input) => svc.leads.bulkUpdate(userId, input.leadIds, input.updates),
  }),
} as const;

export type WriteToolName = keyof typeof writeTools;
export const isWriteTool = (name: string): name is WriteToolName => Object.hasOwn(writeTools, name);

/** The sentence shown to the approver, from the stored input. */
export function approvalSummary(toolName: string, input: unknown): string {
  if (!isWriteTool(toolName)) return `${toolName} ${JSON.stringify(input)}`;
  const def = writeTools[toolName] as WriteTool<z.ZodType>;
  const parsed = def.schema.safeParse(input);
  return parsed.success ? def.summary(parsed.data) : `${toolName} ${JSON.stringify(input)}`;
}

export type WriteOutcome = { status: 'EXECUTED'; result: unknown } | { status: 'FAILED'; error: string };

/**
 * Runs an approved write action: the stored input, re-validated; the approver's key must hold the
 * action's scope. Service refusals (404, INVALID_STATUS…) become a FAILED outcome, not an HTTP error.
 */
export async function executeWriteTool(
  deps: ChatToolDeps,
  actor: ToolActor,
  toolName: string,
  input: unknown,
): Promise<WriteOutcome> {
  if (!isWriteTool(toolName)) return { status: 'FAILED', error: `Unknown action ${toolName}` };
  const def = writeTools[toolName] as WriteTool<z.ZodType>;
  const denied = denial(actor, def.scope);
  if (denied) return { status: 'FAILED', error: denied };
  const parsed = def.schema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ');
    return { status: 'FAILED', error: `Invalid input: ${problems}` };
  }
  try {
    return { status: 'EXECUTED', result: await def.run(services(deps), deps, actor.userId, parsed.data) };
  } catch (error) {
    if (error instanceof AppError) return { status: 'FAILED', error: `${error.code}: ${error.message}` };
    deps.logger.error({ err: error, toolName }, 'chat write tool failed');
    return { status: 'FAILED', error: 'The action failed with an internal error' };
  }
}

// ---- read tools: run at once, inside the agent loop

/** A read tool's body: scope first, then the service; refusals reach the model as tool errors. */
function readTool<S extends z.ZodType>(
  deps: ChatToolDeps,
  actor: ToolActor,
  def: { description: string; schema: S; scope: string; run: (svc: Services, input: z.output<S>) => Promise<unknown> },
) {
  const svc = services(deps);
  return tool({
    description: def.description,
    inputSchema: def.schema,
    execute: async (input: z.output<S>) => {
      const denied = denial(actor, def.scope);
      if (denied) throw new Error(denied);
      try {
        return await def.run(svc, input);
      } catch (error) {
        if (error instanceof AppError) throw new Error(`${error.code}: ${error.message}`);
        deps.logger.error({ err: error }, 'chat read tool failed');
        throw new Error('The lookup failed with an internal error');
      }
    },
  } as never);
}

/** The tool set one agent run gets: read tools bound to the actor, write tools that stop for approval. */
export function buildTools(deps: ChatToolDeps, actor: ToolActor): ToolSet {
  const read = {
    searchLeads: readTool(deps, actor, {
      description: "List the user's leads, newest first, filtered by status, exact company, job, source or tag.",
      schema: listLeadsQuery.extend({ limit: chatLimit }),
      scope: 'leads:read',
      run: (svc, input) => svc.leads.list(actor.userId, input),
    }),
    getLead: readTool(deps, actor, {
      description: 'One lead with its notes, custom fields, email validation, job and source.',
      schema: z.object({ leadId: uuid }),
      scope: 'leads:read',
      run: (svc, input) => svc.leads.get(actor.userId, input.leadId),
    }),
    listSources: readTool(deps, actor, {
      description: "List the user's scraping sources, newest first (filter by status or project).",
      schema: listSourcesQuery.extend({ limit: chatLimit }),
      scope: 'sources:read',
      run: (svc, input) => svc.sources.list(actor.userId, input),
    }),
    listJobs: readTool(deps, actor, {
      description: "List the user's scraping jobs, newest first (filter by status or source).",
      schema: listJobsQuery.extend({ limit: chatLimit }),
      scope: 'jobs:read',
      run: (svc, input) => svc.jobs.list(actor.userId, input),
    }),
    getJob: readTool(deps, actor, {
      description: 'Status and progress of one job: status, progress %, leads found, pages visited, error.',
      schema: z.object({ jobId: uuid }),
      scope: 'jobs:read',
      run: (svc, input) => svc.jobs.get(actor.userId, input.jobId),
    }),
    getStats: readTool(deps, actor, {
      description: "Counts of the user's sources, jobs and leads, and profile totals by status and type.",
      schema: z.object({}),
      scope: 'users:read',
      run: async (svc) => ({
        totals: (await svc.users.profile(actor.userId)).stats,
        profiles: authorize(actor, 'profiles:read').allowed
          ? await svc.profiles.stats(actor.userId)
          : 'not available: the key lacks profiles:read',
      }),
    }),
  };
  const write = Object.fromEntries(
    Object.entries(writeTools).map(([name, def]) => [
      name,
      tool({ description: def.description, inputSchema: def.schema as z.ZodType, needsApproval: true } as never),
    ]),
  );
  return { ...read, ...write } as ToolSet;
}

export const readToolNames = ['searchLeads', 'getLead', 'listSources', 'listJobs', 'getJob', 'getStats'] as const;
