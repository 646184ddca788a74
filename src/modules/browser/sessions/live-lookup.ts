/**
 * From a session's row to what runs: its live session on this host, or the error the caller should see (400
 * INVALID_STATE once ended or ending, 503 on another host). A row this host recorded as running whose browser is
 * gone here is ended FAILED on sight.
 */
import { AppError } from '../../../shared/errors.ts';
import type { BrowserHost, LiveSession } from './host.ts';
import type { SessionRow } from './sessions.repository.ts';
import type { SessionStatus } from './sessions.schemas.ts';

export interface LiveLookupParts {
  hostId: string;
  host: BrowserHost | undefined;
  /** Sessions being ended now. */
  ending: ReadonlyMap<string, unknown>;
  /** Sessions falling asleep or waking in this process: their row and their browser disagree meanwhile. */
  transitioning: (id: string) => boolean;
  end: (id: string, status: SessionStatus, reason: string, charge?: boolean) => Promise<SessionRow | undefined>;
}

export function createLiveLookup({ hostId, host, ending, transitioning, end }: LiveLookupParts) {
  /** A row this host recorded as running whose browser it no longer holds (not one that is still starting). */
  function lostHere(row: SessionRow): boolean {
    return (
      row.hostId === hostId &&
      row.status === 'LIVE' &&
      !host?.get(row.id) &&
      !ending.has(row.id) &&
      !transitioning(row.id)
    );
  }

  /** The running session behind a live row of this host: 400 when it ended, 503 when another host holds it. */
  function liveOf(row: SessionRow): LiveSession {
    if (row.status !== 'LIVE') {
      throw new AppError('INVALID_STATE', `The browser session is ${row.status}`, {
        details: [{ field: 'id', message: `session is ${row.status}` }],
      });
    }
    const live = row.hostId === hostId ? host?.get(row.id) : undefined;
    if (!live && row.hostId === hostId && (ending.has(row.id) || transitioning(row.id))) {
      // Its deadline (or a release) is ending it right now: not a host that is out of reach.
      throw new AppError('INVALID_STATE', 'The browser session is ending', {
        details: [{ field: 'id', message: 'session is ending' }],
      });
    }
    if (!live && lostHere(row)) {
      void end(row.id, 'FAILED', 'its browser is gone from this host', false).catch(() => {});
      throw new AppError('INVALID_STATE', 'The browser session has ended: its browser is gone', {
        details: [{ field: 'id', message: 'session is FAILED' }],
      });
    }
    if (!live) {
      throw new AppError(
        'SERVICE_UNAVAILABLE',
        `The browser session is held by host ${row.hostId}, which this process cannot reach yet`,
        { headers: { 'retry-after': '5' } },
      );
    }
    return live;
  }

  return { lostHere, liveOf };
}
