/**
 * Browser profiles: create, list, read, delete (not while a writer holds it), export as a ZIP, and the explicit
 * save of a live session's state (`POST /sessions/{id}/save-profile`). The writer lease and what a session does
 * with its profile at start and end are in profile-leases.ts.
 */
import type { FastifyRequest } from 'fastify';
import { strToU8, zipSync } from 'fflate';
import type { Browser } from 'playwright-core';
import type { AppDeps } from '../../../deps.ts';
import { notFound, validationError } from '../../../shared/errors.ts';
import { storedId } from '../../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../../shared/pagination.ts';
import type { LiveSession } from '../sessions/host.ts';
import type { SessionScope } from '../sessions/sessions.repository.ts';
import { refForCreate, scopeOf } from '../sessions/tenancy.ts';
import { LEASE_TTL_MS, profileLeasesOf, profileLocked } from './profile-leases.ts';
import { type ProfileRow, profilesRepository as repo } from './profiles.repository.ts';
import type { CreateProfileBody, ProfileView, SaveProfileBody } from './profiles.schemas.ts';

/** What a save needs of the sessions service (passed in: the sessions service itself starts from profiles). */
export interface LiveSessions {
  findLiveSession(request: FastifyRequest, id: string): Promise<LiveSession>;
  playwright(sessionId: string): Promise<Browser>;
}

/** The archive's format, documented in the OpenAPI description of the export. */
export const EXPORT_FORMAT = 'quarry-browser-profile/1';

export function createProfiles(deps: AppDeps) {
  const { db, clock } = deps;
  const leases = profileLeasesOf(deps);

  function view(row: ProfileRow): ProfileView {
    const held = row.leaseSessionId && row.leaseExpiresAt && row.leaseExpiresAt > clock.now();
    return {
      id: row.id,
      name: row.name,
      metadata: row.metadata,
      clientRef: row.clientRef,
      version: row.version,
      sizeBytes: row.sizeBytes,
      savedAt: row.savedAt?.toISOString() ?? null,
      writer: held ? { sessionId: row.leaseSessionId!, leaseExpiresAt: row.leaseExpiresAt!.toISOString() } : null,
      createdAt: row.createdAt.toISOString(),
      updatedAt: row.updatedAt.toISOString(),
    };
  }

  async function find(scope: SessionScope, id: string, field?: string): Promise<ProfileRow> {
    const key = storedId(id);
    const row = key ? await repo.find(db, scope, key) : undefined;
    if (!row) throw notFound('Browser profile', field);
    return row;
  }

  return {
    async create(request: FastifyRequest, body: CreateProfileBody): Promise<ProfileView> {
      const scope = scopeOf(request);
      const clientRef = refForCreate(scope.clientRef, body.clientRef);
      return view(await repo.insert(db, { userId: scope.userId, clientRef, name: body.name, metadata: body.metadata }));
    },

    async list(request: FastifyRequest, query: { cursor?: string; limit: number }) {
      const rows = await repo.list(db, scopeOf(request), { before: decodeCursor(query.cursor), limit: query.limit });
      const { items, nextCursor } = pageOf(rows, query.limit);
      return { profiles: items.map(view), nextCursor };
    },

    get: async (request: FastifyRequest, id: string) => view(await find(scopeOf(request), id)),

    /** Row and state files gone; 409 PROFILE_LOCKED while a writer's lease holds it. */
    async remove(request: FastifyRequest, id: string): Promise<void> {
      const scope = scopeOf(request);
      const row = await find(scope, id);
      const removed = await repo.removeUnheld(db, scope, row.id, clock.now());
      if (!removed) {
        if (await repo.find(db, scope, row.id)) throw profileLocked('The profile has a writer: release it first');
        throw notFound('Browser profile');
      }
      await leases.store.removeProfile(removed.userId, removed.id);
    },

    /** The ZIP of GET /profiles/{id}/export. */
    async exportZip(request: FastifyRequest, id: string): Promise<{ name: string; zip: Uint8Array }> {
      const row = await find(scopeOf(request), id);
      const state = await leases.stateOf(row);
      const manifest = { format: EXPORT_FORMAT, exportedAt: clock.now().toISOString(), profile: view(row) };
      const zip = zipSync({
        'profile.json': strToU8(JSON.stringify(manifest, null, 2)),
        'storage-state.json': strToU8(JSON.stringify(state, null, 2)),
      });
      return { name: `browser-profile-${row.id}.zip`, zip };
    },

    /**
     * Saves a live session's state. Its profile's writer saves with its own lease; any other session takes the lease
     * for this one save (409 PROFILE_LOCKED while a writer holds it) into `profileId`, a new profile `name`, or the
     * profile it started from.
     */
    async saveFromSession(
      request: FastifyRequest,
      sessions: LiveSessions,
      sessionId: string,
      body: SaveProfileBody,
    ): Promise<ProfileView> {
      const live = await sessions.findLiveSession(request, sessionId);
      const held = leases.sessionOf(live.id);
      const browser = () => sessions.playwright(live.id);
      if (held?.token !== undefined) {
        if (body.name !== undefined) throw validationError('name', 'this session writes its own profile');
        if (body.profileId !== undefined && storedId(body.profileId) !== held.profileId) {
          throw validationError('profileId', `this session writes profile ${held.profileId}`);
        }
        const profile = { id: held.profileId, userId: held.userId };
        return view(await leases.save(profile, live.id, held.token, await browser()));
      }
      // The session's own ref decides which profiles it may write (the request's is the same or key-wide).
      const scope = { userId: live.userId, clientRef: live.clientRef ?? undefined };
      let created = false;
      let target: ProfileRow;
      if (body.profileId !== undefined) target = await find(scope, body.profileId, 'profileId');
      else if (body.name !== undefined) {
        target = await repo.insert(db, {
          userId: live.userId,
          clientRef: live.clientRef,
          name: body.name,
          metadata: body.metadata ?? {},
        });
        created = true;
      } else if (held) target = await find({ userId: held.userId }, held.profileId, 'profileId');
      else throw validationError('profileId', 'this session has no profile: give profileId, or name to create one');
      const token = await repo.acquire(db, target.id, live.id, clock.now(), LEASE_TTL_MS);
      if (token === undefined) throw profileLocked('This profile has a writer (a persistProfile session)');
      try {
        await leases.save(target, live.id, token, await browser());
      } catch (err) {
        if (created) {
          await repo.removeById(db, target.id).catch(() => {});
          await leases.store.removeProfile(target.userId, target.id).catch(() => {});
        }
        throw err;
      } finally {
        await repo.free(db, target.id, token).catch(() => {});
      }
      return view(await find({ userId: target.userId }, target.id));
    },
  };
}
