/**
 * A write transaction sent to the embedded database as one list of statements (`EmbeddedDatabase.pipeline`): PGlite's
 * transaction lock is then held for the SQL's own time, not across a round trip per statement (in the worker thread
 * each waits for the busy service thread: bench/NOTES-pglite-worker.md). No JavaScript runs between the statements,
 * so a step's condition is said in SQL: `expect` stops the transaction (rolled back, nothing written) when the step
 * answers no row (`rows`) or some (`none`), and the caller takes its interactive path instead.
 */
import type { PGlite, Results, Transaction } from '@electric-sql/pglite';

export interface PipelineStep {
  sql: string;
  params?: unknown[];
  /** Several statements (simple protocol, no params), e.g. a COPY reading `blob`: the result is the last one's. */
  exec?: boolean;
  blob?: Blob;
  /** Stop (roll back) unless the step answers at least one row (`rows`), or none (`none`). */
  expect?: 'rows' | 'none';
}

/** Every step's result, in order; or the index of the first step whose `expect` failed (everything rolled back). */
export type PipelineOutcome = { results: Results[] } | { stoppedAt: number };

/** Thrown inside PGlite's transaction to roll it back when a step's `expect` fails. */
class Stopped {
  readonly at: number;
  constructor(at: number) {
    this.at = at;
  }
}

/** Runs the steps in one PGlite transaction (in the worker thread, or in the process). A SQL error rejects as it is. */
export async function runPipeline(db: Pick<PGlite, 'transaction'>, steps: PipelineStep[]): Promise<PipelineOutcome> {
  try {
    return await db.transaction(async (tx: Transaction) => {
      const results: Results[] = [];
      for (const [i, s] of steps.entries()) {
        const result: Results = s.exec
          ? (await tx.exec(s.sql, s.blob ? { blob: s.blob } : undefined)).at(-1)!
          : await tx.query(s.sql, s.params);
        const { blob: _blob, ...kept } = result;
        results.push(kept);
        if (s.expect && result.rows.length > 0 !== (s.expect === 'rows')) throw new Stopped(i);
      }
      return { results };
    });
  } catch (err) {
    if (err instanceof Stopped) return { stoppedAt: err.at };
    throw err;
  }
}
