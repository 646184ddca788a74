import { z } from 'zod';
import { ORG_ROLES } from '../../shared/authorization.ts';
import { emailInput } from '../users/index.ts';

const role = z.enum(ORG_ROLES).describe('owner, admin, member or viewer (docs/organizations.md "Roles")');

export const createOrganizationBody = z.object({ name: z.string().trim().min(1).max(200) });
export const inviteBody = z.object({ email: emailInput, role });
export const changeRoleBody = z.object({ role });
export const acceptInvitationBody = z.object({ token: z.string().min(1).max(200) });

export const orgParams = z.object({ orgId: z.string().min(1) });
export const memberParams = z.object({
  orgId: z.string().min(1),
  memberId: z.string().min(1).describe("The member's user id"),
});
export const invitationParams = z.object({
  orgId: z.string().min(1),
  invitationId: z.string().min(1).describe('The invitation id, as the organization detail lists it'),
});

export const organizationView = z
  .object({
    id: z.string().describe("The organization's id, which is also its account's (what it owns is keyed by it)"),
    name: z.string(),
    role: role.describe("The caller's role in it"),
    createdAt: z.string(),
  })
  .meta({ id: 'Organization' });

export const memberView = z
  .object({
    id: z.string().describe("The member's user id (the memberId of the member routes)"),
    email: z.string(),
    name: z.string().nullable(),
    role,
    joinedAt: z.string(),
  })
  .meta({ id: 'OrganizationMember' });

export const invitationView = z
  .object({ id: z.string(), email: z.string(), role, expiresAt: z.string(), createdAt: z.string() })
  .meta({ id: 'OrganizationInvitation' });

export const organizationDetailView = organizationView
  .extend({ members: z.array(memberView), invitations: z.array(invitationView).describe('Pending invitations') })
  .meta({ id: 'OrganizationDetail' });
