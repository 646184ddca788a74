import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../src/app.ts';
import { assembleDeps } from '../src/assemble-deps.ts';
import { createAccountDeletionService } from '../src/modules/account-deletion/account-deletion.service.ts';
import { DAY_MS, ManualClock } from '../src/shared/clock.ts';
import { createNotifier } from '../src/shared/notify.ts';
import { asAnotherInstance, createTestContext, eventually, type TestContext } from './helpers/app.ts';
import { assertError, assertValidation } from './helpers/assertions.ts';
import { addMember, createOrg, invitationTokenIn, invite, orgKey } from './helpers/orgs.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';

let ctx: TestContext;
let smtp: TestSmtpServer;
const clock = new ManualClock(new Date());
before(async () => {
  smtp = await startSmtpServer();
  ctx = await createTestContext({ clock, env: { SMTP_URL: smtp.url, ADMIN_EMAILS: 'orgs-root@example.com' } });
});
after(async () => {
  await ctx?.close();
  await smtp?.close();
});

let signups = 0;
/** Signup through the API with an invitation token, from its own client address (the per-IP limit). */
const signupWith = (email: string, invitationToken: string) =>
  ctx.inject({
    method: 'POST',
    url: '/api/auth/signup',
    remoteAddress: `127.9.${Math.floor(++signups / 250)}.${(signups % 250) + 1}`,
    payload: { email, password: 'correct horse battery', termsAccepted: true, privacyAccepted: true, invitationToken },
  });

describe('organizations: create, read, list', () => {
  test('the creator is the owner; the organization is listed, read, and has a balance of 0', async () => {
    const owner = await ctx.signup();
    const res = await ctx.call(owner, 'POST', '/api/orgs', { name: '  Acme  ' });
    assert.equal(res.statusCode, 201, res.body);
    const org = res.json().data.organization;
    assert.equal(org.name, 'Acme');
    assert.equal(org.role, 'owner');
    assert.deepEqual(
      org.members.map((m: { id: string; email: string; role: string }) => [m.id, m.email, m.role]),
      [[owner.id, owner.email, 'owner']],
    );
    assert.deepEqual(org.invitations, []);
    const list = (await ctx.call(owner, 'GET', '/api/orgs')).json().data.organizations;
    assert.deepEqual(
      list.map((o: { id: string; role: string }) => [o.id, o.role]),
      [[org.id, 'owner']],
    );
    const read = await ctx.call(owner, 'GET', `/api/orgs/${org.id}`);
    assert.equal(read.json().data.organization.id, org.id);
    // Its own account: no signup grant (docs/organizations.md "Credits").
    const key = await orgKey(ctx, owner, org.id);
    assert.equal((await ctx.call(key, 'GET', '/api/credits/balance')).json().data.balance, 0);
  });

  test('bad input is a 400 naming the field; others and unknown ids are 404', async () => {
    const owner = await ctx.signup();
    const stranger = await ctx.signup();
    assertValidation(await ctx.call(owner, 'POST', '/api/orgs', {}), 'name');
    assertValidation(await ctx.call(owner, 'POST', '/api/orgs', { name: '   ' }), 'name');
    const org = await createOrg(ctx, owner);
    assertError(await ctx.call(stranger, 'GET', `/api/orgs/${org.id}`), 404, 'NOT_FOUND');
    assertError(await ctx.call(owner, 'GET', '/api/orgs/not-a-uuid'), 404, 'NOT_FOUND');
    assertError(await ctx.call(owner, 'GET', `/api/orgs/${owner.id}`), 404, 'NOT_FOUND');
    assert.deepEqual((await ctx.call(stranger, 'GET', '/api/orgs')).json().data.organizations, []);
    // A key of one organization does not reach another the same person owns.
    const other = await createOrg(ctx, owner, 'Other');
    const key = await orgKey(ctx, owner, org.id);
    assertError(await ctx.call(key, 'GET', `/api/orgs/${other.id}`), 404, 'NOT_FOUND');
    // An organization key for an organization one is not in: 404 naming orgId.
    const res = await ctx.call(stranger, 'POST', '/api/api-keys', { name: 'x', scopes: ['*'], orgId: org.id });
    assertError(res, 404, 'NOT_FOUND');
    assert.equal(res.json().error.details[0].field, 'orgId');
  });

  test('an organization key acts for the organization: what it creates is the organization’s', async () => {
    const owner = await ctx.signup();
    const member = await ctx.signup();
    const org = await createOrg(ctx, owner);
    await addMember(ctx, smtp, owner, org.id, member, 'member');
    const ownerKey = await orgKey(ctx, owner, org.id);
    const memberKey = await orgKey(ctx, member, org.id, ['projects:write']);
    const created = await ctx.call(memberKey, 'POST', '/api/projects', { name: 'Team project' });
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json().data.project.id;
    assert.equal((await ctx.call(ownerKey, 'GET', `/api/projects/${id}`)).statusCode, 200);
    // Not the member's own: their personal key does not see it.
    assert.equal((await ctx.call(member, 'GET', `/api/projects/${id}`)).statusCode, 404);
    // The personal account's routes need a personal key.
    assertError(await ctx.call(ownerKey, 'GET', '/api/users'), 403, 'FORBIDDEN');
    // The key's scopes bound it as before.
    assertError(await ctx.call(memberKey, 'GET', '/api/leads'), 403, 'INSUFFICIENT_SCOPE');
  });

  test('an organization key cannot grant more than the role allows', async () => {
    const owner = await ctx.signup();
    const viewer = await ctx.signup();
    const org = await createOrg(ctx, owner);
    await addMember(ctx, smtp, owner, org.id, viewer, 'viewer');
    const wide = await ctx.call(viewer, 'POST', '/api/api-keys', { name: 'x', scopes: ['*'], orgId: org.id });
    assertError(wide, 403, 'FORBIDDEN');
    assert.equal(wide.json().error.details[0].field, 'scopes');
    assertError(
      await ctx.call(viewer, 'POST', '/api/api-keys', { name: 'x', scopes: ['leads:write'], orgId: org.id }),
      403,
      'FORBIDDEN',
    );
    await orgKey(ctx, viewer, org.id, ['leads:read', 'projects:read']);
  });
});

describe('organizations: invitations', () => {
  test('the mail carries a token; an existing user accepts it and joins with the role', async () => {
    const owner = await ctx.signup();
    const invitee = await ctx.signup();
    const org = await createOrg(ctx, owner, 'Mailers');
    const res = await ctx.call(owner, 'POST', `/api/orgs/${org.id}/members`, { email: invitee.email, role: 'admin' });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.json().data.invitation.email, invitee.email);
    const mail = await smtp.waitFor(invitee.email);
    assert.match(mail.subject, /Mailers/);
    const token = invitationTokenIn(mail);
    const pending = (await ctx.call(owner, 'GET', `/api/orgs/${org.id}`)).json().data.organization.invitations;
    assert.deepEqual(
      pending.map((i: { email: string; role: string }) => [i.email, i.role]),
      [[invitee.email, 'admin']],
    );
    // The token is stored only as a hash.
    const stored = await ctx.deps.database.query<{ token_hash: string }>(
      'SELECT token_hash FROM organization_invitations WHERE org_id = $1',
      [org.id],
    );
    assert.ok(stored.every((r) => r.token_hash !== token && r.token_hash.length === 64));
    const accepted = await ctx.call(invitee, 'POST', '/api/orgs/invitations/accept', { token });
    assert.equal(accepted.statusCode, 200, accepted.body);
    assert.equal(accepted.json().data.organization.role, 'admin');
    const detail = (await ctx.call(owner, 'GET', `/api/orgs/${org.id}`)).json().data.organization;
    assert.deepEqual(
      detail.members.map((m: { id: string; role: string }) => [m.id, m.role]),
      [
        [owner.id, 'owner'],
        [invitee.id, 'admin'],
      ],
    );
    assert.deepEqual(detail.invitations, []);
    // Single use.
    assertError(await ctx.call(invitee, 'POST', '/api/orgs/invitations/accept', { token }), 400, 'INVALID_TOKEN');
    // Already a member: 409.
    assertError(
      await ctx.call(owner, 'POST', `/api/orgs/${org.id}/members`, { email: invitee.email, role: 'member' }),
      409,
      'CONFLICT',
    );
  });

  test('a new person joins on signup; a refused token refuses the signup and writes nothing', async () => {
    const owner = await ctx.signup();
    const org = await createOrg(ctx, owner);
    const email = `new-${Date.now()}@example.com`;
    const token = await invite(ctx, smtp, owner, org.id, email, 'member');
    // Another email with this token: 403, and no account is created.
    const wrong = await signupWith(`other-${Date.now()}@example.com`, token);
    assertError(wrong, 403, 'FORBIDDEN');
    assert.equal(wrong.json().error.details[0].field, 'invitationToken');
    assertError(await signupWith(email, 'not-a-token'), 400, 'INVALID_TOKEN');
    const res = await signupWith(email, token);
    assert.equal(res.statusCode, 201, res.body);
    const user = res.json().data.user;
    const members = (await ctx.call(owner, 'GET', `/api/orgs/${org.id}`)).json().data.organization.members;
    assert.ok(members.some((m: { id: string; role: string }) => m.id === user.id && m.role === 'member'));
  });

  test('expired, unknown and other people’s tokens are refused; bad input is a 400', async () => {
    const owner = await ctx.signup();
    const invitee = await ctx.signup();
    const other = await ctx.signup();
    const org = await createOrg(ctx, owner);
    assertValidation(
      await ctx.call(owner, 'POST', `/api/orgs/${org.id}/members`, { email: 'nope', role: 'member' }),
      'email',
    );
    assertValidation(
      await ctx.call(owner, 'POST', `/api/orgs/${org.id}/members`, { email: invitee.email, role: 'boss' }),
      'role',
    );
    assertValidation(await ctx.call(invitee, 'POST', '/api/orgs/invitations/accept', {}), 'token');
    const token = await invite(ctx, smtp, owner, org.id, invitee.email, 'member');
    const wrong = await ctx.call(other, 'POST', '/api/orgs/invitations/accept', { token });
    assertError(wrong, 403, 'FORBIDDEN');
    assertError(
      await ctx.call(invitee, 'POST', '/api/orgs/invitations/accept', { token: 'x'.repeat(43) }),
      400,
      'INVALID_TOKEN',
    );
    clock.advance(7 * DAY_MS + 1000);
    try {
      assertError(await ctx.call(invitee, 'POST', '/api/orgs/invitations/accept', { token }), 400, 'INVALID_TOKEN');
      assert.deepEqual((await ctx.call(owner, 'GET', `/api/orgs/${org.id}`)).json().data.organization.invitations, []);
    } finally {
      clock.advance(-(7 * DAY_MS + 1000));
    }
  });

  test('members do not invite; admins do, but not owners; non-members get 404', async () => {
    const owner = await ctx.signup();
    const admin = await ctx.signup();
    const member = await ctx.signup();
    const stranger = await ctx.signup();
    const org = await createOrg(ctx, owner);
    await addMember(ctx, smtp, owner, org.id, admin, 'admin');
    await addMember(ctx, smtp, owner, org.id, member, 'member');
    const body = { email: `x-${Date.now()}@example.com`, role: 'member' };
    assertError(await ctx.call(member, 'POST', `/api/orgs/${org.id}/members`, body), 403, 'FORBIDDEN');
    assertError(await ctx.call(stranger, 'POST', `/api/orgs/${org.id}/members`, body), 404, 'NOT_FOUND');
    assertError(
      await ctx.call(admin, 'POST', `/api/orgs/${org.id}/members`, { ...body, role: 'owner' }),
      403,
      'FORBIDDEN',
    );
    await invite(ctx, smtp, admin, org.id, body.email, 'member');
  });
});

describe('organizations: roles and removal', () => {
  test('role changes: 400 for a bad role, 404 for a non-member, 409 for the last owner, 403 admin over owner', async () => {
    const owner = await ctx.signup();
    const admin = await ctx.signup();
    const member = await ctx.signup();
    const org = await createOrg(ctx, owner);
    await addMember(ctx, smtp, owner, org.id, admin, 'admin');
    await addMember(ctx, smtp, owner, org.id, member, 'member');
    const path = (id: string) => `/api/orgs/${org.id}/members/${id}`;
    assertValidation(await ctx.call(owner, 'PATCH', path(member.id), { role: 'king' }), 'role');
    // A well-formed id of nobody in the organization (an edited owner id could collide with the owner's own).
    assertError(await ctx.call(owner, 'PATCH', path(crypto.randomUUID()), { role: 'member' }), 404, 'NOT_FOUND');
    assertError(await ctx.call(owner, 'PATCH', path('nope'), { role: 'member' }), 404, 'NOT_FOUND');
    assertError(await ctx.call(owner, 'PATCH', path(owner.id), { role: 'admin' }), 409, 'LAST_OWNER');
    assertError(await ctx.call(admin, 'PATCH', path(owner.id), { role: 'member' }), 403, 'FORBIDDEN');
    assertError(await ctx.call(admin, 'PATCH', path(member.id), { role: 'owner' }), 403, 'FORBIDDEN');
    assertError(await ctx.call(member, 'PATCH', path(member.id), { role: 'admin' }), 403, 'FORBIDDEN');
    const viewer = await ctx.call(admin, 'PATCH', path(member.id), { role: 'viewer' });
    assert.equal(viewer.statusCode, 200, viewer.body);
    // Two owners: now one may step down.
    assert.equal((await ctx.call(owner, 'PATCH', path(admin.id), { role: 'owner' })).statusCode, 200);
    const down = await ctx.call(owner, 'PATCH', path(owner.id), { role: 'member' });
    assert.equal(down.statusCode, 200, down.body);
    assert.equal(down.json().data.organization.role, 'member');
    assertError(await ctx.call(admin, 'DELETE', path(admin.id)), 409, 'LAST_OWNER');
  });

  test('a role change applies to the member’s organization keys at once', async () => {
    const owner = await ctx.signup();
    const member = await ctx.signup();
    const org = await createOrg(ctx, owner);
    await addMember(ctx, smtp, owner, org.id, member, 'member');
    const key = await orgKey(ctx, member, org.id, ['projects:write']);
    assert.equal((await ctx.call(key, 'POST', '/api/projects', { name: 'a' })).statusCode, 201);
    await ctx.call(owner, 'PATCH', `/api/orgs/${org.id}/members/${member.id}`, { role: 'viewer' });
    assertError(await ctx.call(key, 'POST', '/api/projects', { name: 'b' }), 403, 'FORBIDDEN');
    assert.equal((await ctx.call(key, 'GET', '/api/projects')).statusCode, 200);
  });

  test('leaving, removing; a removed member’s keys are revoked', async () => {
    const owner = await ctx.signup();
    const admin = await ctx.signup();
    const member = await ctx.signup();
    const org = await createOrg(ctx, owner);
    await addMember(ctx, smtp, owner, org.id, admin, 'admin');
    await addMember(ctx, smtp, owner, org.id, member, 'member');
    const path = (id: string) => `/api/orgs/${org.id}/members/${id}`;
    assertError(await ctx.call(owner, 'DELETE', path(owner.id)), 409, 'LAST_OWNER');
    assertError(await ctx.call(admin, 'DELETE', path(owner.id)), 403, 'FORBIDDEN');
    assertError(await ctx.call(member, 'DELETE', path(admin.id)), 403, 'FORBIDDEN');
    const key = await orgKey(ctx, member, org.id, ['projects:read']);
    assert.equal((await ctx.call(key, 'GET', '/api/projects')).statusCode, 200);
    assert.equal((await ctx.call(admin, 'DELETE', path(member.id))).statusCode, 200);
    assertError(await ctx.call(key, 'GET', '/api/projects'), 401, 'UNAUTHORIZED');
    const revoked = await ctx.deps.database.query<{ revoked_at: Date | null }>(
      'SELECT revoked_at FROM api_keys WHERE org_id = $1 AND user_id = $2',
      [org.id, member.id],
    );
    assert.ok(revoked.length === 1 && revoked[0]!.revoked_at);
    assertError(await ctx.call(member, 'GET', `/api/orgs/${org.id}`), 404, 'NOT_FOUND');
    assertError(await ctx.call(admin, 'DELETE', path(member.id)), 404, 'NOT_FOUND');
    // The admin leaves by themself.
    assert.equal((await ctx.call(admin, 'DELETE', path(admin.id))).statusCode, 200);
    const members = (await ctx.call(owner, 'GET', `/api/orgs/${org.id}`)).json().data.organization.members;
    assert.deepEqual(
      members.map((m: { id: string }) => m.id),
      [owner.id],
    );
  });

  test('a removed member’s organization key gets 401 at once in another process', async () => {
    const notifier = createNotifier(ctx.deps.database, ctx.deps.config.DATABASE_URL);
    const app2 = await buildApp(assembleDeps(asAnotherInstance({ ...ctx.deps, notifier })));
    await app2.ready();
    try {
      const owner = await ctx.signup();
      const member = await ctx.signup();
      const org = await createOrg(ctx, owner);
      await addMember(ctx, smtp, owner, org.id, member, 'member');
      const key = await orgKey(ctx, member, org.id, ['projects:read']);
      const inApp2 = () => app2.inject({ method: 'GET', url: '/api/projects', headers: key.headers });
      assert.equal((await inApp2()).statusCode, 200, 'cached in the second instance');
      await eventually(async () => true, 200); // the listener is attached
      assert.equal((await ctx.call(owner, 'DELETE', `/api/orgs/${org.id}/members/${member.id}`)).statusCode, 200);
      // No clock movement: without the broadcast the second instance would serve its cache for 30 s.
      await eventually(async () => (await inApp2()).statusCode === 401, 3000, 20);
    } finally {
      await app2.close();
      await notifier.close();
    }
  });
});

describe('organizations: admin and GDPR', () => {
  test('admin user search lists people only; stats count organizations', async () => {
    const root = await ctx.signup({ email: 'orgs-root@example.com' });
    const owner = await ctx.signup({ name: 'Findable Owner' });
    await createOrg(ctx, owner, 'Findable Org');
    const users = (await ctx.call(root, 'GET', '/api/admin/users?q=Findable')).json().data.users;
    assert.deepEqual(
      users.map((u: { id: string }) => u.id),
      [owner.id],
    );
    const stats = (await ctx.call(root, 'GET', '/api/admin/stats')).json().data;
    const orgs = await ctx.deps.database.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM users WHERE kind = 'organization'",
    );
    const people = await ctx.deps.database.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM users WHERE kind = 'person'",
    );
    assert.equal(stats.organizations.total, Number(orgs[0]!.n));
    assert.ok(stats.organizations.total >= 1);
    assert.equal(stats.users.total, Number(people[0]!.n));
    // An organization key of an admin still acts as that admin (the human decides).
    const rootOrg = await createOrg(ctx, root);
    const key = await orgKey(ctx, root, rootOrg.id);
    assert.equal((await ctx.call(key, 'GET', '/api/admin/stats')).statusCode, 200);
    // An admin funds an organization by its id (docs/organizations.md "Credits").
    const funded = await ctx.call(root, 'PATCH', `/api/admin/users/${rootOrg.id}`, {
      creditAdjustment: { amount: 40, reason: 'team trial' },
    });
    assert.equal(funded.statusCode, 200, funded.body);
    assert.equal((await ctx.call(key, 'GET', '/api/credits/balance')).json().data.balance, 40);
  });

  test('an export holds the member’s memberships, not the organization’s resources', async () => {
    const owner = await ctx.signup();
    const org = await createOrg(ctx, owner, 'Exported Org');
    const key = await orgKey(ctx, owner, org.id);
    assert.equal((await ctx.call(key, 'POST', '/api/projects', { name: 'org-only project' })).statusCode, 201);
    assert.equal((await ctx.call(owner, 'POST', '/api/projects', { name: 'my project' })).statusCode, 201);
    const { collectUserData } = await import('../src/modules/data-export/data-export.builder.ts');
    const { data } = await collectUserData(ctx.deps.db, owner.id, clock.now());
    assert.deepEqual(
      (data.organizationMemberships as Array<Record<string, unknown>>).map((m) => [m.orgId, m.organization, m.role]),
      [[org.id, 'Exported Org', 'owner']],
    );
    assert.deepEqual(
      (data.projects as Array<{ name: string }>).map((p) => p.name),
      ['my project'],
    );
  });

  test('deletion: refused for the last owner of an organization with members; a sole-member organization goes too', async () => {
    const owner = await ctx.signup();
    const member = await ctx.signup();
    const shared = await createOrg(ctx, owner, 'Shared Org');
    const solo = await createOrg(ctx, owner, 'Solo Org');
    await addMember(ctx, smtp, owner, shared.id, member, 'member');
    const refused = await ctx.call(owner, 'POST', '/api/users/deletion');
    assertError(refused, 409, 'LAST_OWNER');
    assert.match(refused.json().error.message, /Shared Org/);
    assert.doesNotMatch(refused.json().error.message, /Solo Org/);
    // The member deletes their account: their membership and keys go, the organization stays.
    const memberKey = await orgKey(ctx, member, shared.id, ['projects:read']);
    assert.equal((await ctx.call(member, 'POST', '/api/users/deletion')).statusCode, 200);
    const token = invitationTokenIn(await smtp.waitFor(member.email));
    assert.equal((await ctx.call(member, 'POST', '/api/users/deletion/confirm', { token })).statusCode, 200);
    // The owner hands the shared organization over by leaving it to... nobody: promote the member first.
    assert.equal(
      (await ctx.call(owner, 'PATCH', `/api/orgs/${shared.id}/members/${member.id}`, { role: 'owner' })).statusCode,
      200,
    );
    assert.equal((await ctx.call(owner, 'POST', '/api/users/deletion')).statusCode, 200);
    const ownerToken = invitationTokenIn(await smtp.waitFor(owner.email));
    assert.equal((await ctx.call(owner, 'POST', '/api/users/deletion/confirm', { token: ownerToken })).statusCode, 200);
    const soloKey = await orgKey(ctx, owner, solo.id);
    assert.equal((await ctx.call(soloKey, 'POST', '/api/projects', { name: 'solo project' })).statusCode, 201);
    clock.advance(31 * DAY_MS);
    try {
      // The member is purged first (same due time, earlier confirmation) or together: both go in one run.
      const { purged } = await createAccountDeletionService(ctx.deps).purgeDueAccounts();
      assert.ok(purged.includes(owner.id) && purged.includes(member.id), JSON.stringify(purged));
    } finally {
      clock.advance(-31 * DAY_MS);
    }
    const rows = async (q: string, p: unknown[]) => (await ctx.deps.database.query(q, p)).length;
    assert.equal(await rows('SELECT 1 FROM users WHERE id = $1', [solo.id]), 0, 'the sole-member organization is gone');
    assert.equal(await rows('SELECT 1 FROM projects WHERE user_id = $1', [solo.id]), 0, 'with what it owned');
    assert.equal(await rows('SELECT 1 FROM organization_members WHERE user_id = $1', [member.id]), 0);
    assert.equal(await rows('SELECT 1 FROM api_keys WHERE user_id = $1', [member.id]), 0);
    assertError(await ctx.call(memberKey, 'GET', '/api/projects'), 401, 'UNAUTHORIZED');
    assertError(await ctx.call(soloKey, 'GET', '/api/projects'), 401, 'UNAUTHORIZED');
  });
});
