import { ORG_ROLES, type OrgRole } from '../db/schema/organizations.ts';
import { AppError } from './errors.ts';
import { hasScope } from './scopes.ts';

/**
 * The one authorization decision (docs/organizations.md "Roles"): a request is allowed when its key holds the
 * scope AND, for an organization's key, the holder's current role in the organization permits it. Personal keys
 * are decided by their scopes alone. Pure: no database, unit-tested in test/authorization.test.ts.
 */

export { ORG_ROLES, type OrgRole };

/** Resources whose writes administer the organization (members, its keys, its money): admins and owners only. */
const ADMINISTRATION = new Set(['orgs', 'api-keys', 'credits']);
/** A person's own account (profile, password, consent, export, deletion): never through an organization's key. */
const PERSONAL = new Set(['users']);

const RANK: Record<OrgRole, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };

/** Whether `role` may act on `scope` (`resource:read|write|*`, or `*`), whatever scopes the key holds. */
export function roleAllows(role: OrgRole, scope: string): boolean {
  if (scope === '*') return RANK[role] >= RANK.admin;
  const [resource = '', action = ''] = scope.split(':');
  if (PERSONAL.has(resource)) return false;
  if (action === 'read') return true;
  if (role === 'viewer') return false;
  if (ADMINISTRATION.has(resource)) return RANK[role] >= RANK.admin;
  return true;
}

/** Whether a role may hand out a key with these scopes (no key above the role). */
export const roleMayGrant = (role: OrgRole, scopes: readonly string[]): boolean =>
  scopes.every((scope) => roleAllows(role, scope.endsWith(':*') ? scope.replace(/\*$/, 'write') : scope));

/** Whether `role` ranks at least `minimum` (member management: an admin manages up to admins, owners owners). */
export const roleAtLeast = (role: OrgRole, minimum: OrgRole): boolean => RANK[role] >= RANK[minimum];

export type Decision = { allowed: true } | { allowed: false; reason: 'scope' | 'role' | 'owner'; role?: OrgRole };

export interface Actor {
  scopes: readonly string[];
  orgRole?: OrgRole;
}

/**
 * The decision for `scope`. `orgRole` in `options` overrides the key's (a personal key managing an organization
 * it belongs to acts with the caller's role there); `ownerOnly` demands the owner role (owners, renaming or deleting
 * the organization).
 */
export function authorize(actor: Actor, scope: string, options: { orgRole?: OrgRole; ownerOnly?: boolean } = {}) {
  const role = options.orgRole ?? actor.orgRole;
  if (!hasScope(actor.scopes, scope)) return { allowed: false, reason: 'scope' } as Decision;
  if (role === undefined)
    return (options.ownerOnly ? { allowed: false, reason: 'owner' } : { allowed: true }) as Decision;
  if (!roleAllows(role, scope)) return { allowed: false, reason: 'role', role } as Decision;
  if (options.ownerOnly && role !== 'owner') return { allowed: false, reason: 'owner', role } as Decision;
  return { allowed: true } as Decision;
}

/** The error that answers a refused decision: 403 INSUFFICIENT_SCOPE for the key, 403 FORBIDDEN for the role. */
export function refusal(decision: Decision, scope: string): AppError {
  if (decision.allowed) throw new Error('refusal of an allowed decision');
  if (decision.reason === 'scope') {
    return new AppError('INSUFFICIENT_SCOPE', `This API key lacks the scope ${scope}`, {
      details: [{ field: 'authorization', message: `requires scope ${scope}` }],
    });
  }
  if (decision.reason === 'owner') {
    return new AppError('FORBIDDEN', 'Only an owner of the organization may do this', {
      details: [{ field: 'authorization', message: 'requires the owner role' }],
    });
  }
  const personal = PERSONAL.has(scope.split(':')[0] ?? '');
  return new AppError(
    'FORBIDDEN',
    personal
      ? 'Your own account is managed with a personal key, not an organization key'
      : `The role ${decision.role} in this organization does not permit ${scope}`,
    { details: [{ field: 'authorization', message: personal ? 'requires a personal key' : `role ${decision.role}` }] },
  );
}

/** Throws the refusal unless the decision allows. */
export function assertAuthorized(actor: Actor, scope: string, options?: { orgRole?: OrgRole; ownerOnly?: boolean }) {
  const decision = authorize(actor, scope, options);
  if (!decision.allowed) throw refusal(decision, scope);
}
