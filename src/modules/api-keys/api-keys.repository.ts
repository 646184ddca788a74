import { and, desc, eq, gt, isNull, lt, or, type SQL, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import type { Db } from '../../db/client.ts';
import { apiKeys, type OrgRole, organizationMembers, users } from '../../db/schema/index.ts';

export type ApiKeyRow = typeof apiKeys.$inferSelect;

export interface KeyIdentity {
  keyId: string;
  userId: string;
  email: string;
  scopes: string[];
  expiresAt: Date | null;
  revokedAt: Date | null;
  userStatus: 'active' | 'suspended';
  /** An organization key's organization account status (null for a personal key). */
  orgStatus: 'active' | 'suspended' | null;
  /** An organization's key: the organization, and the holder's role in it now (null once no longer a member). */
  orgId: string | null;
  orgRole: OrgRole | null;
}

/**
 * Whose keys a caller sees and manages: a person's own (`userId`), an organization's (`orgId`: its admins), or a
 * member's keys of one organization (both).
 */
export type KeyOwner = { userId?: string; orgId?: string };

const ownedBy = (owner: KeyOwner): SQL[] => {
  const where: SQL[] = [];
  if (owner.orgId) where.push(eq(apiKeys.orgId, owner.orgId));
  if (owner.userId) where.push(eq(apiKeys.userId, owner.userId));
  return where;
};

/** The organization's own account row, next to the key holder's. */
const orgAccounts = alias(users, 'org_accounts');

export function apiKeyRepository(db: Db) {
  return {
    async insert(values: typeof apiKeys.$inferInsert): Promise<ApiKeyRow> {
      const [row] = await db.insert(apiKeys).values(values).returning();
      return row!;
    },
    /** The key with its owner, or undefined. */
    async findIdentityByHash(keyHash: string): Promise<KeyIdentity | undefined> {
      const [row] = await db
        .select({
          keyId: apiKeys.id,
          userId: apiKeys.userId,
          // A person's key always has an email (users_person_credentials); keys belong to persons.
          email: sql<string>`${users.email}`,
          scopes: apiKeys.scopes,
          expiresAt: apiKeys.expiresAt,
          revokedAt: apiKeys.revokedAt,
          userStatus: users.status,
          orgStatus: orgAccounts.status,
          orgId: apiKeys.orgId,
          orgRole: organizationMembers.role,
        })
        .from(apiKeys)
        .innerJoin(users, eq(users.id, apiKeys.userId))
        .leftJoin(orgAccounts, eq(orgAccounts.id, apiKeys.orgId))
        .leftJoin(
          organizationMembers,
          and(eq(organizationMembers.orgId, apiKeys.orgId), eq(organizationMembers.userId, apiKeys.userId)),
        )
        .where(eq(apiKeys.keyHash, keyHash))
        .limit(1);
      return row;
    },
    /** Unrevoked, unexpired keys, newest first; `limit + 1` rows so the caller can tell whether another page exists. */
    listLive(owner: KeyOwner, now: Date, beforeId: string | undefined, limit: number): Promise<ApiKeyRow[]> {
      return db
        .select()
        .from(apiKeys)
        .where(
          and(
            ...ownedBy(owner),
            isNull(apiKeys.revokedAt),
            or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, now)),
            beforeId ? lt(apiKeys.id, beforeId) : undefined,
          ),
        )
        .orderBy(desc(apiKeys.id))
        .limit(limit + 1);
    },
    async findOwnedBy(owner: KeyOwner, id: string): Promise<ApiKeyRow | undefined> {
      const [row] = await db
        .select()
        .from(apiKeys)
        .where(and(...ownedBy(owner), eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
        .limit(1);
      return row;
    },
    /** The person's role in the organization, or undefined when they are not a member. */
    async roleIn(orgId: string, userId: string): Promise<OrgRole | undefined> {
      const [row] = await db
        .select({ role: organizationMembers.role })
        .from(organizationMembers)
        .where(and(eq(organizationMembers.orgId, orgId), eq(organizationMembers.userId, userId)))
        .limit(1);
      return row?.role;
    },
    /** Revokes the person's live keys of one organization; returns their hashes. */
    async revokeOrgKeys(orgId: string, userId: string, at: Date): Promise<string[]> {
      const rows = await db
        .update(apiKeys)
        .set({ revokedAt: at })
        .where(and(eq(apiKeys.orgId, orgId), eq(apiKeys.userId, userId), isNull(apiKeys.revokedAt)))
        .returning({ keyHash: apiKeys.keyHash });
      return rows.map((r) => r.keyHash);
    },
    /** Whether the key is neither revoked nor expired at `now`. */
    async isLive(id: string, now: Date): Promise<boolean> {
      const [row] = await db
        .select({ id: apiKeys.id })
        .from(apiKeys)
        .where(
          and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt), or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, now))),
        )
        .limit(1);
      return row !== undefined;
    },
    async update(id: string, values: Partial<typeof apiKeys.$inferInsert>): Promise<void> {
      await db.update(apiKeys).set(values).where(eq(apiKeys.id, id));
    },
    async touch(id: string, at: Date): Promise<void> {
      await db
        .update(apiKeys)
        .set({ lastUsedAt: at })
        .where(
          and(
            eq(apiKeys.id, id),
            sql`(${apiKeys.lastUsedAt} IS NULL
                 OR ${apiKeys.lastUsedAt} < ${new Date(at.getTime() - 60_000).toISOString()})`,
          ),
        );
    },
  };
}
