/**
 * What a push writes to, whatever the type (docs/destinations.md): a target is opened once per run, takes the
 * leads batch by batch (`part` counts from 1 over the whole push, so a batch repeated after a crash has the same
 * number: the same S3 key, the same webhook-id), and is closed at the end.
 */
import type { Readable } from 'node:stream';
import type { DestinationType } from '../../db/schema/index.ts';

/** A lead as pushed: the fields of the leads list (GET /api/leads). */
export interface PushLead {
  id: string;
  firstName: string | null;
  lastName: string | null;
  email: string | null;
  phone: string | null;
  company: string | null;
  jobTitle: string | null;
  status: string;
  tags: string[];
  sourceUrl: string | null;
  createdAt: string;
}

/** The columns of a CSV object or a destination table, in order, with the lead field each one holds. */
export const LEAD_COLUMNS = [
  ['id', 'id'],
  ['first_name', 'firstName'],
  ['last_name', 'lastName'],
  ['email', 'email'],
  ['phone', 'phone'],
  ['company', 'company'],
  ['job_title', 'jobTitle'],
  ['status', 'status'],
  ['tags', 'tags'],
  ['source_url', 'sourceUrl'],
  ['created_at', 'createdAt'],
] as const satisfies ReadonlyArray<readonly [string, keyof PushLead]>;

export interface PushContext {
  pushId: string;
  destinationId: string;
  mode: 'append' | 'upsert';
}

export interface Target<Encoded = unknown> {
  /** Leads per batch (one S3 object, one webhook request, one table transaction). */
  readonly batchSize: number;
  open(): Promise<void>;
  /** A batch in the target's wire form; the runner encodes the next batch while the last one is written. */
  encode(leads: PushLead[]): Encoded;
  write(batch: Encoded, part: number): Promise<void>;
  /**
   * Where offered (PostgreSQL), a batch as a COPY stream from another PostgreSQL database, in LEAD_COLUMNS order;
   * answers the rows written. The rows never become objects in between.
   */
  writeCopy?(source: CopySource, part: number): Promise<number>;
  close(): Promise<void>;
}

export type CopyFormat = 'csv' | 'binary';

/** A batch of leads COPYed out of PostgreSQL. */
export interface CopySource {
  /** Column names and types (as `regtype` spells them), in row order. */
  columns: ReadonlyArray<readonly [string, string]>;
  /** The source database's encoding: binary text values are in it. */
  encoding: string;
  /** The batch's rows in `format`; called again when the batch has to be sent a second way. */
  open(format: CopyFormat): Promise<Readable>;
}

/** A destination with its secrets opened: what a target is built from. */
export interface OpenedDestination {
  id: string;
  type: DestinationType;
  config: Record<string, unknown>;
}

/** A failure the user can act on (a refused connection, a 4xx, a missing bucket): its message is shown as is. */
export class TargetError extends Error {
  override name = 'TargetError';
}
