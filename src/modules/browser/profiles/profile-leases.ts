/**
 * The profiles side of a session's life on this host: a create with `profileId` checks the profile, takes the
 * writer lease with `persistProfile` (in the create's transaction), and starts its browser with the profile's
 * state; the writer's lease is renewed while it lives; at its end its state is saved with its token, then the lease
 * is freed. A host that dies stops renewing: the lease expires and the next writer takes it over.
 */
import type { Browser, BrowserContext } from 'playwright-core';
import type { Db, Tx } from '../../../db/client.ts';
import type { AppDeps } from '../../../deps.ts';
import { createSecretBox, secretKeyMaterial } from '../../../shared/crypto.ts';
import { AppError, notFound, validationError } from '../../../shared/errors.ts';
import { storedId } from '../../../shared/ids.ts';
import type { SessionScope } from '../sessions/sessions.repository.ts';
import { type ProfileRow, profilesRepository as repo } from './profiles.repository.ts';
import { createProfileStore, type ProfileState, profilesRoot } from './profiles.store.ts';

/** A writer's lease lasts this long without renewal: a crashed writer's profile is free again within it. */
export const LEASE_TTL_MS = 30_000;
/** How often this host renews the leases of its writers. */
export const LEASE_RENEW_MS = 10_000;

const EMPTY: ProfileState = { cookies: [], origins: [] };

export const profileLocked = (message: string) =>
  new AppError('PROFILE_LOCKED', message, { details: [{ field: 'profileId', message: 'the profile has a writer' }] });

const httpOrigin = (url: string): string | undefined => {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.origin : undefined;
  } catch {
    return undefined;
  }
};

/**
 * The context's storage state. Playwright reads the storage of the origins it saw navigated to while connected; a
 * tab a client opened before the service connected (the service connects on first use) is at an origin it has not
 * seen: such origins are visited once in a temporary page, answered here and never fetched, so they count too.
 */
async function storageStateOf(context: BrowserContext): Promise<ProfileState> {
  const state = (await context.storageState({ indexedDB: true })) as ProfileState;
  const saved = new Set(state.origins.map((o) => o.origin));
  const open = new Set(
    context
      .pages()
      .flatMap((page) => page.frames().map((frame) => httpOrigin(frame.url())))
      .filter((origin): origin is string => origin !== undefined && !saved.has(origin)),
  );
  if (open.size === 0) return state;
  const page = await context.newPage();
  try {
    await page.route('**/*', (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title></title>' }),
    );
    for (const origin of open) await page.goto(`${origin}/`);
  } finally {
    await page.close().catch(() => {});
  }
  return (await context.storageState({ indexedDB: true })) as ProfileState;
}

/** A session of this host started from a profile; `token` while it holds the profile's writer lease. */
interface ProfileSession {
  profileId: string;
  userId: string;
  token?: number;
  /** Its lease was taken over: no longer renewed; its saves still carry the token, and the database refuses them. */
  lost?: boolean;
  /**
   * Its browser holds the profile's state (restored, or there was none): only then may its end save it back, or a
   * session whose restore failed would save an empty browser over the profile.
   */
  started?: boolean;
}

/** How long a page may take to give its state for a save: a page spinning in a loop must not hold a session's end. */
const STATE_TIMEOUT_MS = 10_000;

async function withinStateTimeout<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new AppError('ACTION_FAILED', `the browser did not give its state within ${STATE_TIMEOUT_MS / 1000} s`, {
                details: [{ field: 'state', message: 'a page of the session does not answer' }],
              }),
            ),
          STATE_TIMEOUT_MS,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export function createProfileLeases(deps: Pick<AppDeps, 'db' | 'config' | 'clock' | 'logger'>) {
  const { db, config, clock, logger } = deps;
  const store = createProfileStore(profilesRoot(config), createSecretBox(secretKeyMaterial(config)));
  const maxBytes = config.BROWSER_PROFILE_MAX_MB * 2 ** 20;
  const sessions = new Map<string, ProfileSession>();
  let renewer: NodeJS.Timeout | undefined;

  async function renewAll(): Promise<void> {
    for (const [sessionId, held] of sessions) {
      if (held.token === undefined || held.lost) continue;
      const kept = await repo.renew(db, held.profileId, held.token, clock.now(), LEASE_TTL_MS).catch((err) => {
        logger.warn({ err, sessionId }, 'a browser profile lease could not be renewed');
        return true; // tried again next round; it holds until it expires
      });
      if (!kept) {
        logger.warn({ sessionId, profileId: held.profileId }, 'a browser profile lease was taken over');
        held.lost = true;
      }
    }
    if (![...sessions.values()].some((s) => s.token !== undefined && !s.lost)) stopRenewing();
  }

  function stopRenewing(): void {
    clearInterval(renewer);
    renewer = undefined;
  }

  /**
   * Saves a browser's state as the profile's under `token`: a new file, then the row switched to it only while the
   * token holds the lease (else the file goes, 409); 413 beyond BROWSER_PROFILE_MAX_MB with nothing written.
   */
  async function save(
    profile: { id: string; userId: string },
    sessionId: string,
    token: number,
    browser: Browser,
  ): Promise<ProfileRow> {
    const context = browser.contexts()[0];
    if (!context) throw new Error('the browser has no default context');
    const bytes = Buffer.from(JSON.stringify(await withinStateTimeout(storageStateOf(context))));
    if (bytes.length > maxBytes) {
      const message = `the browser state is ${Math.ceil(bytes.length / 2 ** 20)} MB, over BROWSER_PROFILE_MAX_MB (${config.BROWSER_PROFILE_MAX_MB} MB)`;
      throw new AppError('PAYLOAD_TOO_LARGE', message, { details: [{ field: 'state', message }] });
    }
    const file = await store.write(profile.userId, profile.id, token, bytes);
    const saved = await repo
      .recordSave(db, profile.id, token, { stateFile: file, sizeBytes: bytes.length, sessionId, now: clock.now() })
      .catch(() => undefined);
    if (!saved) {
      await store.removeFile(profile.userId, profile.id, file);
      throw profileLocked('The writer lease of this profile was taken over: this save carries a stale token');
    }
    await store.removeFile(profile.userId, profile.id, saved.previous).catch((err) => {
      logger.warn({ err, profileId: profile.id }, 'a replaced browser profile state file could not be removed');
    });
    return saved.row;
  }

  /** A profile's current state; a file replaced by a save meanwhile is read again from the row's new pointer. */
  async function stateOf(row: Pick<ProfileRow, 'id' | 'userId' | 'stateFile'>): Promise<ProfileState> {
    for (let attempt = 0; ; attempt++) {
      if (!row.stateFile) return EMPTY;
      try {
        return await store.read(row.userId, row.id, row.stateFile);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt > 0) throw err;
        const fresh = await repo.find(db, { userId: row.userId }, row.id);
        if (!fresh) return EMPTY;
        row = fresh;
      }
    }
  }

  return {
    store,
    save,
    stateOf,

    /** The profile a create names (404 naming profileId), checked before anything starts. */
    async forCreate(
      db: Db,
      scope: SessionScope,
      body: { profileId?: string; persistProfile: boolean },
    ): Promise<ProfileRow | undefined> {
      if (body.profileId === undefined) {
        if (body.persistProfile) throw validationError('persistProfile', 'needs a profileId');
        return undefined;
      }
      const key = storedId(body.profileId);
      const profile = key ? await repo.find(db, scope, key) : undefined;
      if (!profile) throw notFound('Browser profile', 'profileId');
      return profile;
    },

    /** Inside the create's transaction: the writer lease for a `persistProfile` session, or 409 PROFILE_LOCKED. */
    async acquire(tx: Tx, profile: ProfileRow | undefined, session: { id: string; persistProfile: boolean }) {
      if (!profile) return;
      let token: number | undefined;
      if (session.persistProfile) {
        token = await repo.acquire(tx, profile.id, session.id, clock.now(), LEASE_TTL_MS);
        if (token === undefined) throw profileLocked('This profile already has a writer (a persistProfile session)');
      }
      sessions.set(session.id, { profileId: profile.id, userId: profile.userId, token });
      if (token !== undefined && !renewer) {
        renewer = setInterval(() => void renewAll(), LEASE_RENEW_MS);
        renewer.unref();
      }
    },

    /** After the launch, before the create answers: the session's default context gets the profile's last state. */
    async restore(sessionId: string, browser: () => Promise<Browser>): Promise<void> {
      const held = sessions.get(sessionId);
      if (!held) return;
      const profile = await repo.find(db, { userId: held.userId }, held.profileId);
      if (profile?.stateFile) {
        const state = await stateOf(profile);
        const context = (await browser()).contexts()[0];
        await context?.setStorageState(state);
      }
      held.started = true;
    },

    /** The writer this host holds for a session, if any (for an explicit save). */
    sessionOf: (sessionId: string): Readonly<ProfileSession> | undefined => sessions.get(sessionId),

    /**
     * Before a session's Chromium closes: a writer's state saved with its token (a refusal or a failure is logged;
     * the session ends anyway); its lease is freed by `free` as its row ends.
     */
    async beforeClose(sessionId: string, browser: () => Promise<Browser>): Promise<void> {
      const held = sessions.get(sessionId);
      if (!held) return;
      sessions.delete(sessionId);
      if (held.token === undefined || !held.started) return;
      try {
        await save({ id: held.profileId, userId: held.userId }, sessionId, held.token, await browser());
      } catch (err) {
        logger.warn({ err, sessionId, profileId: held.profileId }, 'a browser profile was not saved at the end');
      }
    },

    /** In the transaction that ends a persistProfile session (whatever ended it): the lease it holds is freed. */
    free: (tx: Tx, sessionId: string) => repo.freeOf(tx, sessionId),
  };
}

export type ProfileLeases = ReturnType<typeof createProfileLeases>;

const perProcess = new WeakMap<object, ProfileLeases>();

/** The one profile-lease keeper of these deps (the writers this process's sessions hold). */
export function profileLeasesOf(deps: Pick<AppDeps, 'db' | 'config' | 'clock' | 'logger'>): ProfileLeases {
  let leases = perProcess.get(deps);
  if (!leases) {
    leases = createProfileLeases(deps);
    perProcess.set(deps, leases);
  }
  return leases;
}
