import { and, asc, eq, gt, isNull, sql } from 'drizzle-orm';
import { type Db, queryRows, type Tx } from '../../db/client.ts';
import {
  type OrgRole,
  organizationInvitations,
  organizationMembers,
  organizations,
  users,
} from '../../db/schema/index.ts';

export type OrganizationRow = typeof organizations.$inferSelect;
export type InvitationRow = typeof organizationInvitations.$inferSelect;

export interface MemberRow {
  userId: string;
  email: string;
  name: string | null;
  role: OrgRole;
  joinedAt: Date;
}

/** The only writer of organizations, organization_members and organization_invitations. */
export function organizationRepository(db: Db | Tx) {
  return {
    async insert(id: string, name: string, at: Date): Promise<OrganizationRow> {
      const [row] = await db.insert(organizations).values({ id, name, createdAt: at }).returning();
      return row!;
    },
    async find(id: string): Promise<OrganizationRow | undefined> {
      const [row] = await db.select().from(organizations).where(eq(organizations.id, id)).limit(1);
      return row;
    },
    /** The person's role in the organization, or undefined when they are not a member. */
    async roleOf(orgId: string, userId: string): Promise<OrgRole | undefined> {
      const [row] = await db
        .select({ role: organizationMembers.role })
        .from(organizationMembers)
        .where(and(eq(organizationMembers.orgId, orgId), eq(organizationMembers.userId, userId)))
        .limit(1);
      return row?.role;
    },
    /** The organization's member rows locked until the transaction ends: role changes and removals queue up. */
    async lockMembers(orgId: string): Promise<Array<{ userId: string; role: OrgRole }>> {
      return db
        .select({ userId: organizationMembers.userId, role: organizationMembers.role })
        .from(organizationMembers)
        .where(eq(organizationMembers.orgId, orgId))
        .orderBy(asc(organizationMembers.id))
        .for('update');
    },
    /**
     * The member rows of every organization the person is in, locked in (organization, member) order, the order
     * `lockMembers` takes one organization's in: a concurrent role change or removal waits, never deadlocks.
     */
    async lockMembershipsOf(userId: string): Promise<void> {
      await db
        .select({ id: organizationMembers.id })
        .from(organizationMembers)
        .where(
          sql`${organizationMembers.orgId} IN (SELECT m.org_id FROM ${organizationMembers} m WHERE m.user_id = ${userId})`,
        )
        .orderBy(asc(organizationMembers.orgId), asc(organizationMembers.id))
        .for('update');
    },
    async addMember(orgId: string, userId: string, role: OrgRole, at: Date): Promise<boolean> {
      const rows = await db
        .insert(organizationMembers)
        .values({ orgId, userId, role, createdAt: at })
        .onConflictDoNothing()
        .returning({ id: organizationMembers.id });
      return rows.length > 0;
    },
    async setRole(orgId: string, userId: string, role: OrgRole): Promise<void> {
      await db
        .update(organizationMembers)
        .set({ role })
        .where(and(eq(organizationMembers.orgId, orgId), eq(organizationMembers.userId, userId)));
    },
    async removeMember(orgId: string, userId: string): Promise<void> {
      await db
        .delete(organizationMembers)
        .where(and(eq(organizationMembers.orgId, orgId), eq(organizationMembers.userId, userId)));
    },
    async members(orgId: string): Promise<MemberRow[]> {
      return db
        .select({
          userId: organizationMembers.userId,
          email: sql<string>`${users.email}`,
          name: users.name,
          role: organizationMembers.role,
          joinedAt: organizationMembers.createdAt,
        })
        .from(organizationMembers)
        .innerJoin(users, eq(users.id, organizationMembers.userId))
        .where(eq(organizationMembers.orgId, orgId))
        .orderBy(asc(organizationMembers.id));
    },
    /** The person's organizations with their role, oldest membership first. */
    async membershipsOf(userId: string) {
      return db
        .select({
          id: organizations.id,
          name: organizations.name,
          createdAt: organizations.createdAt,
          role: organizationMembers.role,
          joinedAt: organizationMembers.createdAt,
        })
        .from(organizationMembers)
        .innerJoin(organizations, eq(organizations.id, organizationMembers.orgId))
        .where(eq(organizationMembers.userId, userId))
        .orderBy(asc(organizationMembers.id));
    },
    async pendingInvitations(orgId: string, now: Date): Promise<InvitationRow[]> {
      return db
        .select()
        .from(organizationInvitations)
        .where(
          and(
            eq(organizationInvitations.orgId, orgId),
            isNull(organizationInvitations.acceptedAt),
            gt(organizationInvitations.expiresAt, now),
          ),
        )
        .orderBy(asc(organizationInvitations.id));
    },
    /** A new invitation replaces the open ones for the same address: only the newest token joins. */
    async insertInvitation(values: typeof organizationInvitations.$inferInsert): Promise<InvitationRow> {
      await db
        .delete(organizationInvitations)
        .where(
          and(
            eq(organizationInvitations.orgId, values.orgId),
            eq(organizationInvitations.email, values.email),
            isNull(organizationInvitations.acceptedAt),
          ),
        );
      const [row] = await db.insert(organizationInvitations).values(values).returning();
      return row!;
    },
    async deleteInvitation(id: string): Promise<void> {
      await db.delete(organizationInvitations).where(eq(organizationInvitations.id, id));
    },
    /** An open (unaccepted) invitation of the organization, or undefined. */
    async findOpenInvitation(orgId: string, id: string): Promise<InvitationRow | undefined> {
      const [row] = await db
        .select()
        .from(organizationInvitations)
        .where(
          and(
            eq(organizationInvitations.orgId, orgId),
            eq(organizationInvitations.id, id),
            isNull(organizationInvitations.acceptedAt),
          ),
        )
        .limit(1);
      return row;
    },
    /** Deletes the open invitations a person sent for the organization (all, or only those of `role`). */
    async deleteInvitationsSentBy(orgId: string, userId: string, role?: OrgRole): Promise<void> {
      await db
        .delete(organizationInvitations)
        .where(
          and(
            eq(organizationInvitations.orgId, orgId),
            eq(organizationInvitations.invitedBy, userId),
            isNull(organizationInvitations.acceptedAt),
            role ? eq(organizationInvitations.role, role) : undefined,
          ),
        );
    },
    async findInvitationByHash(tokenHash: string): Promise<InvitationRow | undefined> {
      const [row] = await db
        .select()
        .from(organizationInvitations)
        .where(eq(organizationInvitations.tokenHash, tokenHash))
        .limit(1);
      return row;
    },
    /** Marks the invitation used unless it already is or has expired: true when this call took it. */
    async takeInvitation(id: string, now: Date): Promise<boolean> {
      const rows = await db
        .update(organizationInvitations)
        .set({ acceptedAt: now })
        .where(
          and(
            eq(organizationInvitations.id, id),
            isNull(organizationInvitations.acceptedAt),
            gt(organizationInvitations.expiresAt, now),
          ),
        )
        .returning({ id: organizationInvitations.id });
      return rows.length > 0;
    },
    /**
     * Organizations where the person is the only owner while others are members: they must hand over first
     * (account deletion refuses, docs/organizations.md "Leaving and deleting").
     */
    async soleOwnerWithOthers(userId: string): Promise<Array<{ id: string; name: string }>> {
      return queryRows<{ id: string; name: string }>(
        db,
        sql`
        SELECT o.id, o.name FROM ${organizations} o
        JOIN ${organizationMembers} me ON me.org_id = o.id AND me.user_id = ${userId} AND me.role = 'owner'
        WHERE NOT EXISTS (SELECT 1 FROM ${organizationMembers} m
                          WHERE m.org_id = o.id AND m.role = 'owner' AND m.user_id <> ${userId})
          AND EXISTS (SELECT 1 FROM ${organizationMembers} m WHERE m.org_id = o.id AND m.user_id <> ${userId})
        ORDER BY o.id`,
      );
    },
    /** Organizations whose only member is the person: deleted with them. */
    async soleMemberOf(userId: string): Promise<string[]> {
      const rows = await db
        .select({ orgId: organizationMembers.orgId })
        .from(organizationMembers)
        .where(
          and(
            eq(organizationMembers.userId, userId),
            sql`NOT EXISTS (SELECT 1 FROM ${organizationMembers} m
                            WHERE m.org_id = ${organizationMembers.orgId} AND m.user_id <> ${userId})`,
          ),
        );
      return rows.map((r) => r.orgId);
    },
  };
}
