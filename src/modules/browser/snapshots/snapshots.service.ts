/**
 * Sleeping sessions (docs/browser.md "Sleeping sessions"): a sleep saves the session's browser state as a snapshot
 * and stops its Chromium (SLEEPING: no process, it counts against no live limit); a wake starts a new Chromium on
 * this host, writes the state back and makes the same session LIVE again (same id, same cdpUrl form). A session with
 * `autoSleepMs` sleeps by itself (the reaper), and any operation on it or a connection to its cdpUrl wakes it while
 * the caller waits. One sleep or wake of a session at a time in this process: concurrent callers share it.
 */
import type { AppDeps } from '../../../deps.ts';
import { createSecretBox, secretKeyMaterial } from '../../../shared/crypto.ts';
import { AppError, notFound } from '../../../shared/errors.ts';
import { storedId } from '../../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../../shared/pagination.ts';
import { createProxyProfileService } from '../../proxy-profiles/index.ts';
import { createExtensions } from '../extensions/extensions.service.ts';
import { followDownloads } from '../files/files.service.ts';
import { profileLeasesOf } from '../profiles/profile-leases.ts';
import { startRecording } from '../recording/recorder.ts';
import { readRecording } from '../recording/recording-store.ts';
import type { BrowserHost } from '../sessions/host.ts';
import { admissionLimits, admit, minutesOf, type Refusal } from '../sessions/lifecycle.ts';
import { existingOperations, operationsFor } from '../sessions/session-operations.ts';
import { type SessionRow, type SessionScope, sessionsRepository } from '../sessions/sessions.repository.ts';
import type { SessionStatus } from '../sessions/sessions.schemas.ts';
import { captureState, decodeState, encodeState, restoreState, summaryOf, type TabOrder } from './browser-state.ts';
import { snapshotsRepository as repo, type SnapshotInfo } from './snapshots.repository.ts';

export interface SnapshotParts {
  hostId: string;
  host: BrowserHost | undefined;
  /** This host's internal URL (scale-out), recorded on the sessions it wakes. */
  internalUrl: () => string | null;
  /** Why this host has no room for another session now (creates and wakes under way counted); none: it has. */
  hostRefusal: () => Refusal | undefined;
  end: (id: string, status: SessionStatus, reason: string, charge?: boolean) => Promise<SessionRow | undefined>;
}

/** A sleeping session's remaining hard timeout is at least this at its wake (a session asleep at its deadline). */
const MIN_REMAINING_MS = 60_000;
/** How long a caller waits for another process's wake of the same session, and how often it looks. */
const SETTLE_MS = 30_000;
const SETTLE_POLL_MS = 100;

const invalidState = (message: string, status: string) =>
  new AppError('INVALID_STATE', message, { details: [{ field: 'id', message: `session is ${status}` }] });

export type Snapshots = ReturnType<typeof createSnapshots>;

export function createSnapshots(deps: AppDeps, { hostId, host, internalUrl, hostRefusal, end }: SnapshotParts) {
  const { config, db, clock, logger } = deps;
  const now = () => clock.now().getTime();
  const extensions = createExtensions(db, config.dataDir);
  const leases = profileLeasesOf(deps);
  const box = createSecretBox(secretKeyMaterial(config));
  const proxyProfiles = createProxyProfileService(deps);
  /** Sleeps and wakes under way in this process, by session id. */
  const busy = new Map<string, Promise<unknown>>();
  let waking = 0;

  const limits = () => admissionLimits(config);
  const refuse = (refusal: { message: string; retryAfterSeconds: number }) =>
    new AppError('CAPACITY_EXCEEDED', refusal.message, {
      headers: { 'retry-after': String(refusal.retryAfterSeconds) },
    });

  /** Runs `work` as the one transition of session `id` in this process (a second caller gets the first's). */
  function exclusive<T>(id: string, work: () => Promise<T>): Promise<T> {
    const running = busy.get(id) as Promise<T> | undefined;
    if (running) return running;
    const pending = work().finally(() => busy.delete(id));
    busy.set(id, pending);
    return pending;
  }

  /** The tabs of a live session in order, and the one actions run on (the last one when no operation ran yet). */
  async function tabOrderOf(browser: Parameters<typeof existingOperations>[0]): Promise<TabOrder> {
    const tabs = existingOperations(browser)?.tabs;
    if (!tabs) return { pages: browser.contexts()[0]?.pages() ?? [], active: undefined };
    const views = await tabs.list();
    return {
      pages: views.map((v) => tabs.get(v.id)),
      active: views.find((v) => v.active) && tabs.get(views.find((v) => v.active)!.id),
    };
  }

  async function sleepNow(row: SessionRow): Promise<{ session: SessionRow; snapshot: SnapshotInfo }> {
    const live = row.hostId === hostId ? host?.get(row.id) : undefined;
    if (!host || !live) throw invalidState('The browser session is not running on this host', row.status);
    const browser = await host.playwright(row.id);
    const viewport = { width: row.viewportWidth, height: row.viewportHeight };
    const state = await captureState(browser, await tabOrderOf(browser), viewport);
    const bytes = await encodeState(state, box);
    const remainingMs = Math.max(MIN_REMAINING_MS, live.expiresAt - now());
    // A persistProfile session saves its profile as it falls asleep (it keeps the profile's writer lease meanwhile).
    const writer = leases.sessionOf(row.id);
    if (writer?.token !== undefined) {
      await leases
        .save({ id: writer.profileId, userId: writer.userId }, row.id, writer.token, browser)
        .catch((err) => logger.warn({ err, sessionId: row.id }, 'a browser profile was not saved at the sleep'));
    }
    // Chromium goes first: nothing changes in it between the capture and the snapshot (recording stops with it).
    await host.close(row.id);
    const at = clock.now();
    try {
      return await db.transaction(async (tx) => {
        const snapshot = await repo.insert(tx, {
          userId: row.userId,
          sessionId: row.id,
          clientRef: row.clientRef,
          state: bytes,
          sizeBytes: bytes.length,
          summary: summaryOf(state),
          remainingMs,
          createdAt: at,
          expiresAt: new Date(at.getTime() + config.BROWSER_SNAPSHOT_RETENTION_DAYS * 86_400_000),
        });
        const minutes = minutesOf((row.liveSince ?? row.createdAt).getTime(), at.getTime());
        const session = await repo.fallAsleep(
          tx,
          row.id,
          { snapshotId: snapshot.id, minutes, expiresAt: snapshot.expiresAt },
          at,
        );
        if (!session) throw invalidState('The browser session ended while it fell asleep', 'ending');
        await deps.credits.spend(tx, row.userId, 'browser_minutes', minutes, {
          partial: true,
          reason: `browser session ${row.id}`,
        });
        return { session, snapshot };
      });
    } catch (err) {
      // Its Chromium is gone and its state could not be kept: the session ends (an end that won the race stays).
      await end(row.id, 'FAILED', `its state could not be saved: ${(err as Error).message}`).catch(() => {});
      throw err;
    }
  }

  /** Room for the wake on this host (checked before it counts as waking), else 429 as a create. */
  function admitHere(): void {
    const refusal = hostRefusal();
    if (refusal) throw refuse(refusal);
  }

  /** Room for the user and the clientRef, then SLEEPING → STARTING on this host. */
  async function admitWake(row: SessionRow, remainingMs: number): Promise<SessionRow | undefined> {
    return db.transaction(async (tx) => {
      await sessionsRepository.lockUser(tx, row.userId);
      const userLive = await sessionsRepository.countLive(tx, row.userId);
      const refLive =
        row.clientRef === null ? undefined : await sessionsRepository.countLive(tx, row.userId, row.clientRef);
      const refusal = admit({ hostLive: 0, userLive, refLive, freeMemoryMb: Number.POSITIVE_INFINITY }, limits());
      if (refusal) throw refuse(refusal);
      const at = clock.now();
      const expiresAt = new Date(at.getTime() + remainingMs);
      return repo.beginWake(tx, row.id, { hostId, hostAddress: internalUrl(), expiresAt }, at);
    });
  }

  async function wakeNow(row: SessionRow): Promise<SessionRow> {
    if (!host) throw new AppError('SERVICE_UNAVAILABLE', 'This process hosts no browser sessions (RUN_BROWSERS=false)');
    const saved = await repo.stateOf(db, row.id);
    if (!saved) throw invalidState('The sleeping session has no snapshot', row.status);
    admitHere();
    waking++;
    try {
      const started = await admitWake(row, saved.remainingMs);
      if (!started) return settled(row);
      try {
        const [state, extensionDirs, proxyUrls] = await Promise.all([
          decodeState(saved.state, box),
          extensions.dirsFor(row.userId, row.extensionIds).catch(() => []),
          // A woken session goes out through its proxy profile again (a profile in use cannot be deleted).
          row.proxyProfileId ? proxyProfiles.proxyUrlsFor(row.userId, row.proxyProfileId) : [],
        ]);
        const live = await host.open(
          {
            id: row.id,
            userId: row.userId,
            clientRef: row.clientRef,
            expiresAt: started.expiresAt.getTime(),
            idleTimeoutMs: row.idleTimeoutMs,
            keepAlive: row.keepAlive,
            autoSleepMs: row.autoSleepMs,
          },
          state.viewport,
          extensionDirs,
          proxyUrls,
        );
        void followDownloads(live).catch((err) => logger.warn({ err, sessionId: row.id }, 'downloads not followed'));
        const browser = await host.playwright(row.id);
        if (row.record) await startRecording(browser, config.dataDir, row.id, await nextRecordedPage(row.id));
        const active = await restoreState(browser, state);
        const operations = operationsFor(browser, live, () => clock.now());
        if (active) await operations.tabs.activate(operations.tabs.idOf(active)).catch(() => {});
        live.lastActivity = now();
      } catch (err) {
        await host.close(row.id);
        await repo.abortWake(db, row.id, row.expiresAt, clock.now());
        logger.error({ err, sessionId: row.id }, 'a sleeping browser session could not wake');
        throw new AppError('SERVICE_UNAVAILABLE', 'The browser could not be woken', {
          headers: { 'retry-after': '5' },
        });
      }
      const woken = await db.transaction((tx) => repo.finishWake(tx, row.id, clock.now()));
      if (!woken) {
        // Released (or the service stopped) while it woke: the row has ended.
        await host.close(row.id);
        throw invalidState('The browser session ended while it woke', 'ending');
      }
      return woken;
    } finally {
      waking--;
    }
  }

  /** A session another process is waking (PostgreSQL): as it is once that wake is over (or after 30 s). */
  async function settled(row: SessionRow): Promise<SessionRow> {
    for (let waited = 0; waited < SETTLE_MS; waited += SETTLE_POLL_MS) {
      const current = await sessionOf(row.userId, row.id);
      if (current.status !== 'STARTING') return current;
      await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
    }
    return sessionOf(row.userId, row.id);
  }

  /** The first page number a woken session's recording goes on with (after the pages recorded before it slept). */
  async function nextRecordedPage(sessionId: string): Promise<number> {
    const earlier = await readRecording(config.dataDir, sessionId).catch(() => undefined);
    return 1 + Math.max(0, ...(earlier?.pages ?? []).map((p) => Number(p.id.slice('page_'.length)) || 0));
  }

  async function findSnapshot(scope: SessionScope, id: string): Promise<SnapshotInfo> {
    const key = storedId(id);
    const found = key ? await repo.find(db, scope, key) : undefined;
    if (!found) throw notFound('Snapshot');
    return found;
  }

  const sessionOf = async (userId: string, id: string) => {
    const row = await sessionsRepository.find(db, { userId }, id);
    if (!row) throw notFound('Browser session');
    return row;
  };

  return {
    /** Wakes under way (they take room on this host as creates do). */
    get waking(): number {
      return waking;
    },

    /** Whether session `id` is falling asleep or waking in this process (its row and its browser disagree then). */
    busy: (id: string): boolean => busy.has(id),

    /** Puts a live session of this host to sleep; a sleeping one answers its snapshot as it is. */
    async sleep(scope: SessionScope, id: string): Promise<{ session: SessionRow; snapshot: SnapshotInfo }> {
      const key = storedId(id);
      const row = key ? await sessionsRepository.find(db, scope, key) : undefined;
      if (!row) throw notFound('Browser session');
      await busy.get(row.id)?.catch(() => {});
      const current = await sessionOf(row.userId, row.id);
      if (current.status === 'SLEEPING' && current.snapshotId) {
        const snapshot = await repo.find(db, { userId: row.userId }, current.snapshotId);
        if (snapshot) return { session: current, snapshot };
      }
      if (current.status !== 'LIVE') throw invalidState(`The browser session is ${current.status}`, current.status);
      return exclusive(row.id, () => sleepNow(current));
    },

    /** The reaper's: a session idle for its autoSleepMs sleeps (failures are logged, the session stays as it is). */
    autoSleep(id: string): void {
      if (busy.has(id)) return;
      const live = host?.get(id);
      if (!live) return;
      void exclusive(id, async () => {
        const row = await sessionOf(live.userId, id);
        return row.status === 'LIVE' ? sleepNow(row) : undefined;
      }).catch((err) => logger.warn({ err, sessionId: id }, 'a browser session could not fall asleep'));
    },

    /**
     * The session as it is once awake: a sleeping one (or one falling asleep or waking here) is woken and waited for;
     * any other answered as it is.
     */
    async awake(row: SessionRow): Promise<SessionRow> {
      let current = row;
      if (busy.has(row.id)) {
        await busy.get(row.id)?.catch(() => {});
        current = await sessionOf(row.userId, row.id);
      }
      if (current.status !== 'SLEEPING') return current;
      return exclusive(row.id, async () => {
        const fresh = await sessionOf(row.userId, row.id);
        return fresh.status === 'SLEEPING' ? wakeNow(fresh) : fresh;
      });
    },

    async list(scope: SessionScope, query: { cursor?: string; limit: number }) {
      const rows = await repo.list(db, scope, decodeCursor(query.cursor), query.limit);
      return pageOf(rows, query.limit);
    },

    get: (scope: SessionScope, id: string) => findSnapshot(scope, id),

    /** The snapshot's session, awake. */
    async wake(scope: SessionScope, id: string): Promise<SessionRow> {
      const snapshot = await findSnapshot(scope, id);
      return this.awake(await sessionOf(snapshot.userId, snapshot.sessionId));
    },

    /** Deletes a snapshot: its session can no longer wake, so it ends RELEASED. */
    async remove(scope: SessionScope, id: string): Promise<void> {
      const snapshot = await findSnapshot(scope, id);
      await busy.get(snapshot.sessionId)?.catch(() => {});
      const row = await sessionOf(snapshot.userId, snapshot.sessionId);
      if (row.status === 'SLEEPING') await end(row.id, 'RELEASED', 'its snapshot was deleted');
      else await repo.remove(db, row.id);
    },
  };
}
