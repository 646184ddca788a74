import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  assertAuthorized,
  authorize,
  ORG_ROLES,
  type OrgRole,
  roleAllows,
  roleMayGrant,
} from '../src/shared/authorization.ts';

describe('authorization: the role table (docs/organizations.md "Roles")', () => {
  // role → [scope, allowed] rows written out, not derived from the code under test.
  const table: Record<OrgRole, Record<string, boolean>> = {
    viewer: {
      'leads:read': true,
      'leads:write': false,
      'projects:write': false,
      'orgs:read': true,
      'orgs:write': false,
      'api-keys:read': true,
      'api-keys:write': false,
      'credits:write': false,
      'users:read': false,
      '*': false,
    },
    member: {
      'leads:read': true,
      'leads:write': true,
      'projects:write': true,
      'orgs:read': true,
      'orgs:write': false,
      'api-keys:read': true,
      'api-keys:write': false,
      'credits:write': false,
      'users:read': false,
      '*': false,
    },
    admin: {
      'leads:read': true,
      'leads:write': true,
      'projects:write': true,
      'orgs:read': true,
      'orgs:write': true,
      'api-keys:read': true,
      'api-keys:write': true,
      'credits:write': true,
      'users:read': false,
      '*': true,
    },
    owner: {
      'leads:read': true,
      'leads:write': true,
      'projects:write': true,
      'orgs:read': true,
      'orgs:write': true,
      'api-keys:read': true,
      'api-keys:write': true,
      'credits:write': true,
      'users:write': false,
      '*': true,
    },
  };
  for (const role of ORG_ROLES) {
    test(`${role}`, () => {
      for (const [scope, expected] of Object.entries(table[role])) {
        assert.equal(roleAllows(role, scope), expected, `${role} ${scope}`);
      }
    });
  }
});

describe('authorization: the decision', () => {
  test('a personal key is decided by its scopes alone', () => {
    assert.deepEqual(authorize({ scopes: ['*'] }, 'orgs:write'), { allowed: true });
    assert.deepEqual(authorize({ scopes: ['leads:write'] }, 'leads:read'), { allowed: true });
    assert.deepEqual(authorize({ scopes: ['leads:read'] }, 'leads:write'), { allowed: false, reason: 'scope' });
  });

  test('an organization key needs the scope AND the role', () => {
    assert.deepEqual(authorize({ scopes: ['*'], orgRole: 'viewer' }, 'leads:write'), {
      allowed: false,
      reason: 'role',
      role: 'viewer',
    });
    assert.deepEqual(authorize({ scopes: ['leads:read'], orgRole: 'owner' }, 'leads:write'), {
      allowed: false,
      reason: 'scope',
    });
    assert.deepEqual(authorize({ scopes: ['leads:*'], orgRole: 'member' }, 'leads:write'), { allowed: true });
  });

  test('owner-only decisions: admins are refused, a given role overrides the key', () => {
    assert.deepEqual(authorize({ scopes: ['*'], orgRole: 'admin' }, 'orgs:write', { ownerOnly: true }), {
      allowed: false,
      reason: 'owner',
      role: 'admin',
    });
    assert.deepEqual(authorize({ scopes: ['*'] }, 'orgs:write', { orgRole: 'owner', ownerOnly: true }), {
      allowed: true,
    });
    assert.equal(authorize({ scopes: ['*'] }, 'orgs:write', { ownerOnly: true }).allowed, false);
    assert.equal(authorize({ scopes: ['*'], orgRole: 'viewer' }, 'orgs:read', { orgRole: 'admin' }).allowed, true);
  });

  test('refusals: 403 INSUFFICIENT_SCOPE for the key, FORBIDDEN for the role', () => {
    assert.throws(() => assertAuthorized({ scopes: ['leads:read'] }, 'leads:write'), { code: 'INSUFFICIENT_SCOPE' });
    assert.throws(() => assertAuthorized({ scopes: ['*'], orgRole: 'member' }, 'orgs:write'), {
      code: 'FORBIDDEN',
      message: /role member/,
    });
    assert.throws(() => assertAuthorized({ scopes: ['*'], orgRole: 'owner' }, 'users:read'), {
      code: 'FORBIDDEN',
      message: /personal key/,
    });
    assert.doesNotThrow(() => assertAuthorized({ scopes: ['*'], orgRole: 'owner' }, 'orgs:write', { ownerOnly: true }));
  });

  test('what a role may grant to a key', () => {
    assert.equal(roleMayGrant('viewer', ['leads:read', 'projects:read']), true);
    assert.equal(roleMayGrant('viewer', ['leads:write']), false);
    assert.equal(roleMayGrant('viewer', ['leads:*']), false);
    assert.equal(roleMayGrant('member', ['leads:*', 'sources:write']), true);
    assert.equal(roleMayGrant('member', ['api-keys:write']), false);
    assert.equal(roleMayGrant('member', ['*']), false);
    assert.equal(roleMayGrant('admin', ['*']), true);
  });
});
