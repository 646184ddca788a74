import type { PipelineStep } from './pipeline.ts';

/** Messages between the service's thread and the thread that owns the embedded database (pglite-host.ts). */

export interface WorkerOpenOptions {
  /** The data directory (pgdata); absent: in memory. */
  dataDir?: string;
  /** In memory, restored from this dump (tests: the migrated template). */
  loadDataDir?: Blob;
  postgresqlconf?: string[];
}

export interface QueryOptions {
  rowMode?: 'array' | 'object';
  paramTypes?: number[];
  /** Types the caller parses itself (its `parsers`): the host answers them as text. */
  rawTypes?: number[];
  /** What a `COPY … FROM '/dev/blob'` reads (see `exec`). */
  blob?: Blob;
}

export type HostRequest = { id: number } & (
  | { op: 'query'; sql: string; params?: unknown[]; options?: QueryOptions; tx?: number }
  /**
   * `blob`: what a `COPY … FROM '/dev/blob'` reads. A Blob crosses to the worker without a copy of its bytes (Node
   * shares its backing store between threads); the worker reads it once, as PGlite in the process would.
   */
  | { op: 'exec'; sql: string; tx?: number; blob?: Blob }
  /** A whole write transaction, run without a round trip between its statements (src/db/pipeline.ts). */
  | { op: 'pipeline'; steps: PipelineStep[] }
  | { op: 'begin' }
  | { op: 'end'; tx: number; commit: boolean }
  | { op: 'listen'; channel: string }
  | { op: 'unlisten'; channel: string }
  | { op: 'dump'; compression?: 'none' | 'gzip' | 'auto' }
  | { op: 'close' }
);

export interface HostError {
  message: string;
  name: string;
  /** The driver error's own fields (code, constraint, detail…). */
  props: Record<string, unknown>;
}

export type HostReply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: HostError }
  | { notify: string; payload: string };
