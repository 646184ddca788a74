/** Messages between the service's thread and the thread that owns the embedded database (pglite-host.ts). */

export interface WorkerOpenOptions {
  /** The data directory (pgdata); absent: in memory. */
  dataDir?: string;
  postgresqlconf?: string[];
}

export interface QueryOptions {
  rowMode?: 'array' | 'object';
  paramTypes?: number[];
  /** Types the caller parses itself (its `parsers`): the host answers them as text. */
  rawTypes?: number[];
}

export type HostRequest = { id: number } & (
  | { op: 'query'; sql: string; params?: unknown[]; options?: QueryOptions; tx?: number }
  | { op: 'exec'; sql: string; tx?: number }
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
