import type { Db, Tx } from '../../db/client.ts';
import type { AppDeps } from '../../deps.ts';
import { actorOf, type Principal } from '../../shared/auth.ts';
import { assertAuthorized, type OrgRole, roleAtLeast } from '../../shared/authorization.ts';
import { DAY_MS } from '../../shared/clock.ts';
import { randomUrlToken, sha256 } from '../../shared/crypto.ts';
import { AppError, notFound } from '../../shared/errors.ts';
import { findOwned, storedId } from '../../shared/ids.ts';
import { insertOrganizationAccount } from '../users/index.ts';
import { type InvitationRow, type MemberRow, organizationRepository } from './organizations.repository.ts';

/** Invitations expire after 7 days (docs/organizations.md "Invitations"). */
export const INVITATION_TTL_MS = 7 * DAY_MS;

type Deps = Pick<AppDeps, 'db' | 'clock' | 'mailer' | 'apiKeys' | 'credits' | 'config' | 'logger'>;

const lastOwner = () =>
  new AppError('LAST_OWNER', 'The last owner cannot leave or be demoted: make another member an owner first');

/** A member change under way: the caller's role, the member's current role, and how many owners there are. */
interface Change {
  orgId: string;
  role: OrgRole;
  memberId: string;
  target: OrgRole;
  owners: number;
}

const invalidInvitation = (field: string) =>
  new AppError('INVALID_TOKEN', 'The invitation is invalid, expired or already used', {
    details: [{ field, message: 'invalid, expired or already used' }],
  });

const memberView = (m: MemberRow) => ({
  id: m.userId,
  email: m.email,
  name: m.name,
  role: m.role,
  joinedAt: m.joinedAt.toISOString(),
});

const invitationView = (i: InvitationRow) => ({
  id: i.id,
  email: i.email,
  role: i.role,
  expiresAt: i.expiresAt.toISOString(),
  createdAt: i.createdAt.toISOString(),
});

function invitationMail(to: string, org: string, role: OrgRole, token: string, expiresAt: Date, publicUrl?: string) {
  const base = publicUrl?.replace(/\/$/, '') ?? '';
  return {
    to,
    subject: `You are invited to join ${org} on Quarry`,
    text: [
      `You are invited to join the organization ${org} on Quarry as ${role}.`,
      '',
      `Your invitation token (valid until ${expiresAt.toISOString()}, 7 days; it works once):`,
      '',
      `    ${token}`,
      '',
      `With an account for ${to}:   POST ${base}/api/orgs/invitations/accept   {"token": "${token}"}`,
      `Without one, sign up with it: POST ${base}/api/auth/signup   {..., "invitationToken": "${token}"}`,
      '',
      'If you did not expect this, ignore this message.',
    ].join('\n'),
  };
}

/**
 * Joins the person to the organization an invitation names, in the caller's transaction (accepting, or signing up
 * with `invitationToken`): the token must be open and unexpired, and name this person's email.
 */
export async function joinByInvitation(
  tx: Db | Tx,
  token: string,
  person: { id: string; email: string },
  now: Date,
  field = 'token',
) {
  const repo = organizationRepository(tx);
  const invitation = await repo.findInvitationByHash(sha256(token));
  if (!invitation || invitation.acceptedAt || invitation.expiresAt.getTime() <= now.getTime()) {
    throw invalidInvitation(field);
  }
  if (invitation.email !== person.email) {
    throw new AppError('FORBIDDEN', 'This invitation was sent to another email address', {
      details: [{ field, message: 'names another email address' }],
    });
  }
  if (!(await repo.takeInvitation(invitation.id, now))) throw invalidInvitation(field);
  if (!(await repo.addMember(invitation.orgId, person.id, invitation.role, now))) {
    throw new AppError('CONFLICT', 'You are already a member of this organization');
  }
  return invitation;
}

/**
 * Locks the member rows of the person's organizations until the caller's transaction ends, so the last-owner
 * checks below cannot race a co-owner's concurrent demotion or departure (account deletion calls it first).
 */
export const lockMembershipsOf = (tx: Tx, userId: string) => organizationRepository(tx).lockMembershipsOf(userId);

/** Organizations where the person is the last owner while others are members (account deletion refuses). */
export const orgsBlockingDeletion = (db: Db | Tx, userId: string) =>
  organizationRepository(db).soleOwnerWithOthers(userId);

/** Organizations whose only member is the person: their accounts are deleted with the person's. */
export const orgsDeletedWith = (db: Db | Tx, userId: string) => organizationRepository(db).soleMemberOf(userId);

export function createOrganizationService(deps: Deps) {
  const repo = organizationRepository(deps.db);

  /**
   * The caller's role in the organization; 404 when they are not a member, or their key is another organization's.
   * An organization's key acts with the role it resolved with; a personal key with the caller's membership.
   */
  async function roleIn(principal: Principal, orgId: string): Promise<{ orgId: string; role: OrgRole }> {
    const id = storedId(orgId);
    if (!id || (principal.orgId && principal.orgId !== id)) throw notFound('Organization');
    const role = principal.orgId ? principal.orgRole : await repo.roleOf(id, actorOf(principal));
    if (!role) throw notFound('Organization');
    return { orgId: id, role };
  }

  async function detail(orgId: string, role: OrgRole) {
    const [org, members, invitations] = await Promise.all([
      repo.find(orgId),
      repo.members(orgId),
      repo.pendingInvitations(orgId, deps.clock.now()),
    ]);
    if (!org) throw notFound('Organization');
    return {
      id: org.id,
      name: org.name,
      role,
      createdAt: org.createdAt.toISOString(),
      members: members.map(memberView),
      invitations: invitations.map(invitationView),
    };
  }

  /**
   * Changes under the members' row locks, refusing what would leave the organization without an owner; the
   * target must be a member (404). `ownerOnly` decides whether the caller must be an owner (admins never touch
   * owners, nor make one).
   */
  async function changeMember(
    principal: Principal,
    orgId: string,
    memberId: string,
    change: (repo: ReturnType<typeof organizationRepository>, member: Change) => Promise<void>,
  ) {
    const { orgId: id } = await roleIn(principal, orgId);
    const target = storedId(memberId);
    const role = await deps.db.transaction(async (tx) => {
      const members = await organizationRepository(tx).lockMembers(id);
      // The caller's role as the locked rows hold it: one read before the lock could be stale by now.
      const role = members.find((m) => m.userId === actorOf(principal))?.role;
      if (!role) throw notFound('Organization');
      const member = members.find((m) => m.userId === target);
      if (!member) throw notFound('Member');
      const owners = members.filter((m) => m.role === 'owner').length;
      await change(organizationRepository(tx), {
        orgId: id,
        role,
        memberId: member.userId,
        target: member.role,
        owners,
      });
      return role;
    });
    return { orgId: id, role, memberId: target! };
  }

  return {
    /** Creates the organization's account, its row, the caller as owner and a credit account at 0. */
    async create(principal: Principal, name: string) {
      const now = deps.clock.now();
      const orgId = await deps.db.transaction(async (tx) => {
        const id = await insertOrganizationAccount(tx, name, now);
        await organizationRepository(tx).insert(id, name, now);
        await organizationRepository(tx).addMember(id, actorOf(principal), 'owner', now);
        // No signup grant: organizations are funded by a checkout with an org key or an admin's adjustment.
        await deps.credits.openAccount(tx, id, 0);
        return id;
      });
      return detail(orgId, 'owner');
    },

    async list(principal: Principal) {
      const rows = await repo.membershipsOf(actorOf(principal));
      return rows.map((r) => ({ id: r.id, name: r.name, role: r.role, createdAt: r.createdAt.toISOString() }));
    },

    async get(principal: Principal, orgId: string) {
      const access = await roleIn(principal, orgId);
      assertAuthorized(principal, 'orgs:read', { orgRole: access.role });
      return detail(access.orgId, access.role);
    },

    /** Admins and owners invite; only owners invite owners. The mail carries the token, stored only hashed. */
    async invite(principal: Principal, orgId: string, input: { email: string; role: OrgRole }) {
      const access = await roleIn(principal, orgId);
      assertAuthorized(principal, 'orgs:write', { orgRole: access.role, ownerOnly: input.role === 'owner' });
      const org = await repo.find(access.orgId);
      if (!org) throw notFound('Organization');
      if ((await repo.members(access.orgId)).some((m) => m.email === input.email)) {
        throw new AppError('CONFLICT', 'This person is already a member', {
          details: [{ field: 'email', message: 'already a member' }],
        });
      }
      const now = deps.clock.now();
      const token = randomUrlToken(32);
      const expiresAt = new Date(now.getTime() + INVITATION_TTL_MS);
      const row = await repo.insertInvitation({
        orgId: access.orgId,
        email: input.email,
        role: input.role,
        tokenHash: sha256(token),
        invitedBy: actorOf(principal),
        expiresAt,
        createdAt: now,
      });
      try {
        await deps.mailer.send(
          invitationMail(input.email, org.name, input.role, token, expiresAt, deps.config.PUBLIC_URL),
        );
      } catch (err) {
        // No mail, no way to accept: the invitation is withdrawn.
        await repo.deleteInvitation(row.id).catch(() => {});
        deps.logger.error({ err }, 'could not send an organization invitation');
        throw new AppError('SERVICE_UNAVAILABLE', 'The invitation email could not be sent; try again later');
      }
      return invitationView(row);
    },

    async accept(principal: Principal, token: string) {
      const person = { id: actorOf(principal), email: principal.email };
      const invitation = await deps.db.transaction((tx) => joinByInvitation(tx, token, person, deps.clock.now()));
      return detail(invitation.orgId, invitation.role);
    },

    /** Admins change members and admins; owners anyone. The last owner is never demoted. */
    async changeRole(principal: Principal, orgId: string, memberId: string, role: OrgRole) {
      const changed = await changeMember(principal, orgId, memberId, async (members, c) => {
        const touchesOwner = c.target === 'owner' || role === 'owner';
        assertAuthorized(principal, 'orgs:write', { orgRole: c.role, ownerOnly: touchesOwner });
        if (c.target === 'owner' && role !== 'owner' && c.owners === 1) throw lastOwner();
        await members.setRole(c.orgId, c.memberId, role);
        // What they may no longer invite, they no longer have invited (docs/organizations.md "Invitations").
        if (!roleAtLeast(role, 'admin')) await members.deleteInvitationsSentBy(c.orgId, c.memberId);
        else if (role !== 'owner') await members.deleteInvitationsSentBy(c.orgId, c.memberId, 'owner');
      });
      // The member's organization keys act with the new role from their next request, in every process.
      await deps.apiKeys.invalidateUser(changed.memberId);
      return detail(changed.orgId, changed.memberId === actorOf(principal) ? role : changed.role);
    },

    /**
     * Removes a member, or the caller leaves (any role, with a key holding orgs:write). Their keys of the
     * organization are revoked at once in every process. The last owner cannot leave.
     */
    async remove(principal: Principal, orgId: string, memberId: string) {
      const self = storedId(memberId) === actorOf(principal);
      const changed = await changeMember(principal, orgId, memberId, async (members, c) => {
        if (!self) assertAuthorized(principal, 'orgs:write', { orgRole: c.role, ownerOnly: c.target === 'owner' });
        if (c.target === 'owner' && c.owners === 1) throw lastOwner();
        await members.removeMember(c.orgId, c.memberId);
        await members.deleteInvitationsSentBy(c.orgId, c.memberId);
      });
      await deps.apiKeys.revokeOrgKeys(changed.orgId, changed.memberId);
    },

    /** Withdraws an open invitation (admins and owners; one to the owner role only owners): its token stops. */
    async withdrawInvitation(principal: Principal, orgId: string, invitationId: string) {
      const access = await roleIn(principal, orgId);
      const invitation = await findOwned(invitationId, 'Invitation', (id) => repo.findOpenInvitation(access.orgId, id));
      assertAuthorized(principal, 'orgs:write', { orgRole: access.role, ownerOnly: invitation.role === 'owner' });
      await repo.deleteInvitation(invitation.id);
    },
  };
}

export type OrganizationService = ReturnType<typeof createOrganizationService>;
