import { z } from 'zod';
import { isoDate } from '../../../shared/http.ts';
import { paginationQuery } from '../../../shared/pagination.ts';
import type { SnapshotInfo } from './snapshots.repository.ts';

export const listSnapshotsQuery = paginationQuery;

export const snapshotView = z
  .object({
    id: z.string(),
    sessionId: z.string().describe('The sleeping session; waking the snapshot makes it LIVE again'),
    clientRef: z.string().nullable(),
    sizeBytes: z.number().int().describe('The stored state, compressed'),
    tabs: z
      .array(
        z.object({
          url: z.string(),
          title: z.string(),
          active: z.boolean(),
          scrollX: z.number().int(),
          scrollY: z.number().int(),
          historyLength: z.number().int().describe('Entries of the tab’s history (the wake restores the current one)'),
        }),
      )
      .describe('In the order the wake reopens them'),
    origins: z.array(z.string()).describe('Origins whose localStorage or IndexedDB is kept'),
    cookies: z.number().int().describe('Cookies kept (their values are never shown)'),
    createdAt: isoDate,
    expiresAt: isoDate.describe('Deleted then (BROWSER_SNAPSHOT_RETENTION_DAYS): the session ends EXPIRED'),
  })
  .meta({ id: 'BrowserSnapshot' });
export type SnapshotView = z.infer<typeof snapshotView>;

export const snapshotViewOf = (row: SnapshotInfo): SnapshotView => ({
  id: row.id,
  sessionId: row.sessionId,
  clientRef: row.clientRef,
  sizeBytes: row.sizeBytes,
  tabs: row.summary.tabs,
  origins: row.summary.origins,
  cookies: row.summary.cookies,
  createdAt: row.createdAt.toISOString(),
  expiresAt: row.expiresAt.toISOString(),
});
