import { sql } from 'drizzle-orm';
import type { AppDeps } from '../../deps.ts';
import { AppError } from '../../shared/errors.ts';
import { emitEvent } from '../../shared/events.ts';
import { newId } from '../../shared/ids.ts';
import { evaluateWithAi } from './matching.ai.ts';
import {
  matchingRepository,
  type NewResult,
  type ProfileScope,
  type RuleRow,
  type RunLease,
  type RunRow,
} from './matching.repository.ts';
import { definitionOf } from './matching.service.ts';
import type { SetRule } from './matching.sql.ts';

/** Profiles per INSERT … SELECT statement of a FILTER/SCORED run. */
export const SET_CHUNK = 5_000;
/** FILTER/SCORED chunk statements run at once (each on its own connection and core). */
export const SET_PARALLEL = 2;
/** Profiles read per page of an AI run, and results written per transaction. */
export const AI_PAGE = 100;

/** How long a worker's claim on a run lasts without renewal; renewed every quarter of it. */
export const RUN_LEASE_MS = 60_000;

/** A run stops early when its rule (and with it the run) was deleted, or another worker took it over, meanwhile. */
class RunGone extends Error {}

/**
 * Executes one matching run (the QUEUES.matching job). FILTER and SCORED are evaluated in SQL, one
 * statement per chunk of profiles (evaluate + upsert results + bump counters, atomically); AI rules
 * stream profiles through the model (the AI layer bounds concurrency) and write results in batches.
 * A re-delivered AI run resumes: profiles this run already wrote are skipped (a set-based run starts
 * over: it is cheap, and unchanged results are not rewritten). At the end, results
 * of profiles no longer in scope are removed and the run is COMPLETED; an unexpected error marks it
 * FAILED (not retried: a failure here is not a transient crash).
 */
export function createMatchingRunner(
  deps: Pick<AppDeps, 'db' | 'clock' | 'ai' | 'logger'>,
  options: { setChunk?: number; setParallel?: number; aiPage?: number } = {},
) {
  const repo = matchingRepository(deps.db);
  const setChunk = options.setChunk ?? SET_CHUNK;
  const aiPage = options.aiPage ?? AI_PAGE;
  const setParallel = options.setParallel ?? SET_PARALLEL;

  /**
   * Chunks of `setChunk` profiles between precomputed id bounds, SET_PARALLEL statements at a time
   * (PostgreSQL runs one statement on one core), then a keyset tail for profiles added meanwhile.
   */
  async function runSet(rule: RuleRow, lease: RunLease, scope: ProfileScope): Promise<void> {
    const def = { ...(definitionOf(rule) as SetRule), id: rule.id };
    const bounds = await repo.chunkBounds(scope, setChunk);
    let next = 0;
    const worker = async () => {
      while (next < bounds.length) {
        const i = next++;
        const { runExists } = await repo.evaluateChunk(
          def,
          scope,
          lease,
          { after: bounds[i - 1] ?? null, upTo: bounds[i]! },
          deps.clock.now(),
        );
        if (!runExists) throw new RunGone();
      }
    };
    await Promise.all(Array.from({ length: Math.min(setParallel, Math.max(1, bounds.length)) }, worker));
    let after = bounds[bounds.length - 1] ?? null;
    for (;;) {
      const { lastId, runExists } = await repo.evaluateChunk(
        def,
        scope,
        lease,
        { after, limit: setChunk },
        deps.clock.now(),
      );
      if (!runExists) throw new RunGone();
      if (!lastId) return;
      after = lastId;
    }
  }

  async function runAi(
    rule: RuleRow,
    run: RunRow,
    lease: RunLease,
    scope: ProfileScope,
    resume: boolean,
  ): Promise<void> {
    if (!deps.ai.configured)
      throw new AppError('AI_NOT_CONFIGURED', 'No AI provider is configured (AI_BASE_URL, AI_MODEL)');
    const params = { aiPrompt: rule.aiPrompt ?? '', threshold: rule.threshold };
    const controller = new AbortController();
    let failure: unknown;
    let buffer: NewResult[] = [];
    let writing: Promise<void> = Promise.resolve();
    // Writes are serialised; each batch commits its results and the run's counters together.
    const flush = () => {
      const batch = buffer;
      buffer = [];
      writing = writing.then(async () => {
        if (failure || !batch.length) return;
        try {
          if (!(await repo.writeResults(lease, batch, deps.clock.now()))) throw new RunGone();
        } catch (err) {
          failure = err;
          controller.abort(err);
        }
      });
    };
    // Pages are read ahead while earlier ones are still with the model, so the concurrency slots
    // stay busy across page boundaries (no per-page barrier waiting on the slowest retry).
    const outstanding = new Set<Promise<void>>();
    const maxOutstanding = aiPage * 2;
    let after: string | null = null;
    const skipRun = resume ? { ruleId: rule.id, runId: run.id } : undefined;
    while (!failure) {
      const page = await repo.profilesWithLeads(scope, { after, limit: aiPage, skipRun });
      for (const profile of page) {
        const task: Promise<void> = evaluateWithAi(deps, rule.userId, params, profile, controller.signal)
          .then((o) => {
            const now = deps.clock.now();
            buffer.push({
              id: newId(),
              userId: rule.userId,
              ruleId: rule.id,
              runId: run.id,
              profileId: profile.id,
              matched: o.matched,
              matchScore: o.matchScore,
              aiReasoning: o.aiReasoning,
              details: o.details,
              error: o.error,
              createdAt: now,
              updatedAt: now,
            });
            if (buffer.length >= aiPage) flush();
          })
          .catch((err: unknown) => {
            failure ??= err;
            controller.abort(err);
          })
          .finally(() => outstanding.delete(task));
        outstanding.add(task);
        while (outstanding.size >= maxOutstanding) await Promise.race(outstanding);
      }
      if (page.length < aiPage) break;
      after = page[page.length - 1]!.id;
    }
    await Promise.all(outstanding);
    flush();
    await writing;
    if (failure) throw failure;
  }

  return {
    async run(runId: string): Promise<void> {
      const found = await repo.findRun(runId);
      if (!found || found.status === 'COMPLETED' || found.status === 'FAILED') return;
      const rule = await repo.findRule(found.userId, found.ruleId);
      if (!rule) return;
      // A message delivered again while another worker still holds the run does nothing.
      const claim = await repo.claimRun(runId, RUN_LEASE_MS);
      if (!claim) return;
      const { lease } = claim;
      const resume = found.status === 'RUNNING';
      const scope = { userId: rule.userId, profileTypeId: rule.profileTypeId };
      const now = deps.clock.now();
      // An AI run resumes (model calls are dear); a set-based one starts over (its SQL is cheap).
      if (resume) await (rule.type === 'AI' ? repo.recount(runId, now) : repo.resetCounters(runId, now));
      const started = {
        startedAt: claim.run.startedAt ?? now,
        total: await repo.countProfiles(scope),
        error: null,
        updatedAt: now,
      };
      if (!(await repo.updateLeasedRun(lease, started))) return;
      const run: RunRow = { ...claim.run, ...started };
      // Every write of the run is fenced by the lease, so a worker that lost it (a long stall, a
      // partition) stops at its next write instead of running alongside the new owner.
      const heartbeat = setInterval(() => {
        repo
          .renewLease(lease, RUN_LEASE_MS)
          .then(
            (held) =>
              held || deps.logger.warn({ runId }, 'matching run lease lost; this worker stops at its next write'),
          )
          .catch((err: unknown) => deps.logger.warn({ err, runId }, 'could not renew a matching run lease'));
      }, RUN_LEASE_MS / 4);
      try {
        if (rule.type === 'AI') await runAi(rule, run, lease, scope, resume);
        else await runSet(rule, lease, scope);
        await repo.deleteStaleResults(rule.id, scope);
        const end = deps.clock.now();
        // Profiles added mid-run were evaluated too: the total is at least what was processed.
        // The run's end and its `matching.run.completed` event (docs/webhooks-and-credits.md, Webhooks) commit together.
        await deps.db.transaction(async (tx) => {
          const txRepo = matchingRepository(tx);
          const completed = await txRepo.updateLeasedRun(lease, {
            status: 'COMPLETED',
            total: sql`GREATEST(total, processed)`,
            leaseUntil: null,
            finishedAt: end,
            updatedAt: end,
          });
          const final = completed ? await txRepo.findRun(run.id) : undefined;
          if (final)
            await emitEvent(tx, rule.userId, 'matching.run.completed', {
              runId: final.id,
              ruleId: final.ruleId,
              total: final.total,
              processed: final.processed,
              matched: final.matched,
              failed: final.failed,
              finishedAt: end.toISOString(),
            });
        });
      } catch (err) {
        if (err instanceof RunGone || !(await repo.findRun(run.id))) return;
        deps.logger.error({ err, runId }, 'matching run failed');
        const end = deps.clock.now();
        const error =
          err instanceof AppError ? err.message.slice(0, 500) : 'The run failed unexpectedly (see the service log)';
        await repo.updateLeasedRun(lease, {
          status: 'FAILED',
          error,
          leaseUntil: null,
          finishedAt: end,
          updatedAt: end,
        });
      } finally {
        clearInterval(heartbeat);
      }
    },
  };
}
