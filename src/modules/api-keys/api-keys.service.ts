import type { Db } from '../../db/client.ts';
import { actorOf, type Principal } from '../../shared/auth.ts';
import { roleAtLeast, roleMayGrant } from '../../shared/authorization.ts';
import type { Clock } from '../../shared/clock.ts';
import { generateToken, sha256, tokenLooksValid } from '../../shared/crypto.ts';
import { AppError, accountSuspended, notFound, validationError } from '../../shared/errors.ts';
import { findOwned } from '../../shared/ids.ts';
import type { Notifier } from '../../shared/notify.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { coversScopes } from '../../shared/scopes.ts';
import {
  type ApiKeyRow,
  apiKeyRepository,
  type KeyIdentity,
  type KeyOwner,
  type RevokedKey,
} from './api-keys.repository.ts';

export const KEY_PREFIX = 'qk_live_';
const CACHE_TTL_MS = 30_000;
const CACHE_MAX = 10_000;
const ROTATION_GRACE_MS = 24 * 60 * 60_000;
const INVALIDATE_CHANNEL = 'quarry_api_key_invalidate';
/** How long an ended console session's row is kept (it shows when a sign-in was used, for a while). */
export const CONSOLE_SESSION_RETENTION_MS = 30 * 24 * 60 * 60_000;

interface CacheEntry {
  identity: KeyIdentity;
  loadedAt: number;
  touchedAt: number;
}

export const publicKeyView = (row: ApiKeyRow) => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  scopes: row.scopes,
  orgId: row.orgId,
  expiresAt: row.expiresAt?.toISOString() ?? null,
  lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
  createdAt: row.createdAt.toISOString(),
});

export type ApiKeyService = ReturnType<typeof createApiKeyService>;

declare module '../../deps.ts' {
  interface AppDeps {
    /** API keys: resolved on every request (auth), minted at signup, invalidated when a user is suspended. */
    apiKeys: ApiKeyService;
  }
}

/**
 * API keys: minted, listed, rotated, revoked; and resolved on every request from a short-lived
 * in-process cache (no database round trip per request), invalidated across processes on revoke.
 */
export function createApiKeyService(deps: { db: Db; clock: Clock; notifier: Notifier }) {
  const repo = apiKeyRepository(deps.db);
  const cache = new Map<string, CacheEntry>();

  const userWatchers = new Set<(userId: string) => void>();
  const keyWatchers = new Set<(keyId: string) => void>();
  const evict = (payload: string) => {
    if (payload.startsWith('key:')) {
      for (const watcher of keyWatchers) {
        try {
          watcher(payload.slice(4));
        } catch {
          // A watcher's failure is its own (it logs it): the revocation stands and the other watchers still run.
        }
      }
      return;
    }
    if (!payload.startsWith('user:')) return void cache.delete(payload);
    const userId = payload.slice(5);
    // A person's keys, and an organization's keys when the account is an organization's.
    for (const [hash, entry] of cache) {
      if (entry.identity.userId === userId || entry.identity.orgId === userId) cache.delete(hash);
    }
    for (const watcher of userWatchers) watcher(userId);
  };
  void deps.notifier.subscribe(INVALIDATE_CHANNEL, evict);
  // Revocations sent while the listener was down are lost: forget every cached key.
  deps.notifier.onReconnect(() => cache.clear());
  const invalidate = async (keyHash: string) => {
    evict(keyHash);
    await deps.notifier.publish(INVALIDATE_CHANNEL, keyHash);
  };
  /** A revoked key: no process honours it from its cache, and what it opened (a cdpUrl's socket) is closed. */
  const revoked = async (key: RevokedKey) => {
    await invalidate(key.keyHash);
    evict(`key:${key.id}`);
    await deps.notifier.publish(INVALIDATE_CHANNEL, `key:${key.id}`);
  };

  /** Stores a new key (inside the caller's transaction when `db` is one) and returns it once. */
  async function mint(
    userId: string,
    input: { name: string; scopes: string[]; expiresAt?: Date | null; orgId?: string | null; kind?: 'api' | 'console' },
    db: Db = deps.db,
  ) {
    const key = generateToken(KEY_PREFIX);
    const row = await apiKeyRepository(db).insert({
      userId,
      name: input.name,
      prefix: key.slice(0, 12),
      keyHash: sha256(key),
      scopes: input.scopes,
      expiresAt: input.expiresAt ?? null,
      orgId: input.orgId ?? null,
      kind: input.kind ?? 'api',
      createdAt: deps.clock.now(),
    });
    return { key, row };
  }

  /**
   * The keys a caller sees and manages (docs/organizations.md "API keys"): with a personal key the person's own
   * (their organization keys included); with an organization's key that organization's, every member's for its
   * admins and owners, the holder's own for others.
   */
  const keysOf = (principal: Principal): KeyOwner => {
    if (!principal.orgId) return { userId: principal.userId };
    if (principal.orgRole && roleAtLeast(principal.orgRole, 'admin')) return { orgId: principal.orgId };
    return { orgId: principal.orgId, userId: actorOf(principal) };
  };

  /** A live key of the caller that the calling key may manage: it must hold every scope the key has. */
  async function findManageable(principal: Principal, id: string): Promise<ApiKeyRow> {
    const row = await findOwned(id, 'API key', async (key) => {
      const found = await repo.findOwnedBy(keysOf(principal), key);
      return found && !(found.expiresAt && found.expiresAt.getTime() <= deps.clock.now().getTime()) ? found : undefined;
    });
    if (!coversScopes(principal.scopes, row.scopes)) {
      throw new AppError('FORBIDDEN', 'A key can only rotate or revoke keys whose scopes it holds itself');
    }
    return row;
  }

  return {
    mint,

    /** Resolves a bearer token to its principal, or undefined when it is not a live key. */
    async authenticate(token: string): Promise<Principal | undefined> {
      if (!tokenLooksValid(KEY_PREFIX, token)) return undefined;
      const keyHash = sha256(token);
      const now = deps.clock.now().getTime();
      let entry = cache.get(keyHash);
      if (!entry || now - entry.loadedAt > CACHE_TTL_MS) {
        const identity = await repo.findIdentityByHash(keyHash);
        if (!identity) {
          cache.delete(keyHash);
          return undefined;
        }
        entry = { identity, loadedAt: now, touchedAt: entry?.touchedAt ?? 0 };
        if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
        cache.set(keyHash, entry);
      }
      const { identity } = entry;
      if (identity.revokedAt) return undefined;
      if (identity.expiresAt && identity.expiresAt.getTime() <= now) return undefined;
      // A live key of a suspended user (docs/operations.md "Admin"): refused, and told why.
      if (identity.userStatus !== 'active') throw accountSuspended();
      // Every key of a suspended organization too; suspending it evicts its keys (invalidateUser(orgId)).
      if (identity.orgId && identity.orgStatus !== 'active') throw accountSuspended();
      // An organization's key works while its holder is a member, with the role they hold now.
      if (identity.orgId && !identity.orgRole) return undefined;
      if (now - entry.touchedAt >= 60_000) {
        // lastUsedAt is written at most once a minute per process, off the request's path.
        entry.touchedAt = now;
        repo.touch(identity.keyId, new Date(now)).catch(() => {});
      }
      const { keyId, email, scopes } = identity;
      if (!identity.orgId) return { userId: identity.userId, actorUserId: identity.userId, keyId, email, scopes };
      return {
        userId: identity.orgId,
        actorUserId: identity.userId,
        orgId: identity.orgId,
        orgRole: identity.orgRole ?? undefined,
        keyId,
        email,
        scopes,
      };
    },

    async create(
      principal: Principal,
      input: { name: string; scopes: string[]; expiresAt?: string | null; orgId?: string | null },
    ) {
      if (!coversScopes(principal.scopes, input.scopes)) {
        throw new AppError('FORBIDDEN', 'A key cannot grant scopes its creator does not hold', {
          details: [{ field: 'scopes', message: 'exceeds the scopes of the calling key' }],
        });
      }
      // An organization's key mints keys of its own organization only.
      const orgId = input.orgId ?? principal.orgId ?? null;
      if (principal.orgId && orgId !== principal.orgId) throw notFound('Organization', 'orgId');
      if (orgId) {
        const role = await findOwned(orgId, 'Organization', (id) => repo.roleIn(id, actorOf(principal)), 'orgId');
        if (!roleMayGrant(role, input.scopes)) {
          throw new AppError('FORBIDDEN', `The role ${role} in this organization cannot grant these scopes`, {
            details: [{ field: 'scopes', message: `exceeds what the role ${role} permits` }],
          });
        }
      }
      const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
      if (expiresAt && expiresAt.getTime() <= deps.clock.now().getTime())
        throw validationError('expiresAt', 'must be in the future');
      const { key, row } = await mint(actorOf(principal), { ...input, expiresAt, orgId });
      return { ...publicKeyView(row), key };
    },

    /** Live (unrevoked, unexpired) keys, newest first, cursor-paginated. */
    async list(principal: Principal, page: { limit: number; cursor?: string }) {
      const rows = await repo.listLive(keysOf(principal), deps.clock.now(), decodeCursor(page.cursor), page.limit);
      const { items, nextCursor } = pageOf(rows, page.limit);
      return { apiKeys: items.map(publicKeyView), nextCursor };
    },

    /** A new key with the same name, scopes and expiry; the old one keeps working for 24 h. */
    async rotate(principal: Principal, id: string) {
      const old = await findManageable(principal, id);
      // The new key acts as its holder: an organization's admin revokes another member's key, never takes it over.
      if (old.userId !== actorOf(principal)) {
        throw new AppError('FORBIDDEN', "Only the key's holder rotates it; revoke it instead");
      }
      if (old.replacedById) {
        throw new AppError('CONFLICT', 'This key was already rotated; rotate its replacement instead');
      }
      const now = deps.clock.now();
      const graceEnd = new Date(now.getTime() + ROTATION_GRACE_MS);
      const { key, row } = await mint(old.userId, {
        name: old.name,
        scopes: old.scopes,
        expiresAt: old.expiresAt,
        orgId: old.orgId,
      });
      const oldExpiry = old.expiresAt && old.expiresAt < graceEnd ? old.expiresAt : graceEnd;
      await repo.update(old.id, { expiresAt: oldExpiry, replacedById: row.id });
      await invalidate(old.keyHash);
      return { ...publicKeyView(row), key, previousKey: { id: old.id, expiresAt: oldExpiry.toISOString() } };
    },

    /**
     * Whether a key is still usable (not revoked, not expired): credentials it minted that outlive a request (a
     * browser session's cdpUrl) are honoured only while it is.
     */
    isLive: (keyId: string): Promise<boolean> => repo.isLive(keyId, deps.clock.now()),
    /** `isLive` of many keys in one query: the ids of those that still stand. */
    liveKeyIds: (keyIds: string[]): Promise<Set<string>> =>
      keyIds.length ? repo.liveIds(keyIds, deps.clock.now()) : Promise.resolve(new Set()),

    /** Ends a web console sign-in (docs/console.md): its key stops working in every process at once. */
    async revokeConsoleKey(token: string): Promise<void> {
      if (!tokenLooksValid(KEY_PREFIX, token)) return;
      const keyHash = sha256(token);
      const key = await repo.revokeConsoleByHash(keyHash, deps.clock.now());
      if (key) await revoked(key);
    },

    /**
     * Deletes console sessions that ended (signed out, replaced or expired) more than CONSOLE_SESSION_RETENTION_MS
     * ago: each sign-in mints a key, so without this the table grows with every visit. Run by the daily maintenance.
     */
    purgeEndedConsoleSessions: (): Promise<number> =>
      repo.deleteEndedConsoleKeys(new Date(deps.clock.now().getTime() - CONSOLE_SESSION_RETENTION_MS)),

    /** Ends a person's console sessions but `exceptKeyId` (a password change), in every process. */
    async revokeConsoleSessionsOf(userId: string, exceptKeyId?: string): Promise<void> {
      for (const key of await repo.revokeConsoleOfUser(userId, exceptKeyId, deps.clock.now())) await revoked(key);
    },

    async revoke(principal: Principal, id: string) {
      const row = await findManageable(principal, id);
      await repo.update(row.id, { revokedAt: deps.clock.now() });
      await revoked(row);
    },

    /**
     * Runs `watcher` in this process whenever a user's account changes (suspension, reactivation, deletion), for
     * credentials other than keys that must follow it (a browser session's cdpUrl). Returns its removal.
     */
    watchUsers(watcher: (userId: string) => void): () => void {
      userWatchers.add(watcher);
      return () => void userWatchers.delete(watcher);
    },

    /**
     * Runs `watcher` in this process whenever a key is revoked in any process, so credentials it minted that hold a
     * connection open (a cdpUrl's socket, a live view's viewer) are closed at once. Expiry is no event: holders of
     * such connections also check `isLive` from time to time. Returns its removal.
     */
    watchKeys(watcher: (keyId: string) => void): () => void {
      keyWatchers.add(watcher);
      return () => void keyWatchers.delete(watcher);
    },

    /**
     * Revokes a person's keys of one organization (removed from it) and drops their cached identities in every
     * process, so a changed role or a removal applies to the next request anywhere.
     */
    async revokeOrgKeys(orgId: string, userId: string) {
      for (const key of await repo.revokeOrgKeys(orgId, userId, deps.clock.now())) await revoked(key);
      evict(`user:${userId}`);
      await deps.notifier.publish(INVALIDATE_CHANNEL, `user:${userId}`);
    },

    /** Drops cached identities of a user or an organization (suspension, role change, deletion) in every process. */
    async invalidateUser(userId: string) {
      evict(`user:${userId}`);
      await deps.notifier.publish(INVALIDATE_CHANNEL, `user:${userId}`);
    },
  };
}
