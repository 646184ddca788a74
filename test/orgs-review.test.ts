import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { deletionRepository } from '../src/modules/account-deletion/account-deletion.repository.ts';
import { buildTools, executeWriteTool } from '../src/modules/chat/chat.tools.ts';
import type { Principal } from '../src/shared/auth.ts';
import { DAY_MS } from '../src/shared/clock.ts';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertError } from './helpers/assertions.ts';
import { addMember, createOrg, invitationTokenIn, orgKey } from './helpers/orgs.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';

let ctx: TestContext;
let smtp: TestSmtpServer;
before(async () => {
  smtp = await startSmtpServer();
  ctx = await createTestContext({ env: { SMTP_URL: smtp.url, ADMIN_EMAILS: 'orgs-review-root@example.com' } });
});
after(async () => {
  await ctx?.close();
  await smtp?.close();
});

describe('organizations: a suspended organization', () => {
  test('every key of a suspended organization answers 403 ACCOUNT_SUSPENDED at once; reactivated, it works', async () => {
    const root = await ctx.signup({ email: 'orgs-review-root@example.com' });
    const owner = await ctx.signup();
    const member = await ctx.signup();
    const org = await createOrg(ctx, owner);
    await addMember(ctx, smtp, owner, org.id, member, 'member');
    const ownerKey = await orgKey(ctx, owner, org.id);
    const memberKey = await orgKey(ctx, member, org.id, ['leads:read']);
    // Cached before the suspension: the suspension must evict them.
    assert.equal((await ctx.call(ownerKey, 'GET', '/api/leads')).statusCode, 200);
    assert.equal((await ctx.call(memberKey, 'GET', '/api/leads')).statusCode, 200);
    const suspend = await ctx.call(root, 'PATCH', `/api/admin/users/${org.id}`, { status: 'suspended' });
    assert.equal(suspend.statusCode, 200, suspend.body);
    assertError(await ctx.call(ownerKey, 'GET', '/api/leads'), 403, 'ACCOUNT_SUSPENDED');
    assertError(await ctx.call(memberKey, 'GET', '/api/leads'), 403, 'ACCOUNT_SUSPENDED');
    // The people themselves are not suspended: their personal keys still work.
    assert.equal((await ctx.call(owner, 'GET', '/api/leads')).statusCode, 200);
    const reactivate = await ctx.call(root, 'PATCH', `/api/admin/users/${org.id}`, { status: 'active' });
    assert.equal(reactivate.statusCode, 200, reactivate.body);
    assert.equal((await ctx.call(memberKey, 'GET', '/api/leads')).statusCode, 200);
  });
});

/**
 * Runs `during` while another transaction holds the organization's member rows locked and changes `memberId`'s
 * role, as a concurrent role change does; that transaction commits 300 ms later, while `during` waits on it.
 */
async function whileRoleChanges<T>(orgId: string, memberId: string, role: string, during: () => Promise<T>) {
  let locked!: () => void;
  const isLocked = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const change = ctx.deps.db.transaction(async (tx) => {
    await tx.execute(sql`SELECT id FROM organization_members WHERE org_id = ${orgId} ORDER BY id FOR UPDATE`);
    await tx.execute(
      sql`UPDATE organization_members SET role = ${role} WHERE org_id = ${orgId} AND user_id = ${memberId}`,
    );
    locked();
    await new Promise((resolve) => setTimeout(resolve, 300));
  });
  await isLocked;
  const result = await during();
  await change;
  return result;
}

describe('organizations: last-owner races (PostgreSQL)', { skip: !process.env.TEST_DATABASE_URL }, () => {
  test('a member change decides with the caller’s role under the lock, not the one read before it', async () => {
    const owner = await ctx.signup();
    const admin = await ctx.signup();
    const member = await ctx.signup();
    const org = await createOrg(ctx, owner);
    await addMember(ctx, smtp, owner, org.id, admin, 'admin');
    await addMember(ctx, smtp, owner, org.id, member, 'member');
    // The owner demotes the admin while the admin removes a member: the removal sees the demotion.
    const res = await whileRoleChanges(org.id, admin.id, 'viewer', () =>
      ctx.call(admin, 'DELETE', `/api/orgs/${org.id}/members/${member.id}`),
    );
    assertError(res, 403, 'FORBIDDEN');
    const members = (await ctx.call(owner, 'GET', `/api/orgs/${org.id}`)).json().data.organization.members;
    assert.ok(
      members.some((m: { id: string }) => m.id === member.id),
      'the member stays',
    );
  });

  test('an owner’s deletion waits for a co-owner stepping down, and is then refused', async () => {
    const owner = await ctx.signup();
    const coOwner = await ctx.signup();
    const org = await createOrg(ctx, owner);
    await addMember(ctx, smtp, owner, org.id, coOwner, 'owner');
    await scheduleDeletion(owner);
    const purged = await whileRoleChanges(org.id, coOwner.id, 'member', () =>
      deletionRepository(ctx.deps.db).purgeUser(owner.id, new Date(Date.now() + 40 * DAY_MS)),
    );
    assert.equal(purged, undefined, 'the last owner of an organization with members stays');
    const owners = await ctx.deps.database.query(
      "SELECT 1 FROM organization_members WHERE org_id = $1 AND role = 'owner'",
      [org.id],
    );
    assert.equal(owners.length, 1);
  });
});

async function scheduleDeletion(user: TestUser) {
  assert.equal((await ctx.call(user, 'POST', '/api/users/deletion')).statusCode, 200);
  const token = invitationTokenIn(await smtp.waitFor(user.email));
  assert.equal((await ctx.call(user, 'POST', '/api/users/deletion/confirm', { token })).statusCode, 200);
}

describe('organizations: withdrawing invitations', () => {
  const invitationsOf = async (owner: TestUser, orgId: string) =>
    (await ctx.call(owner, 'GET', `/api/orgs/${orgId}`)).json().data.organization.invitations as Array<{
      id: string;
      email: string;
    }>;
  const sendInvitation = async (by: TestUser, orgId: string, email: string, role: string) => {
    const res = await ctx.call(by, 'POST', `/api/orgs/${orgId}/members`, { email, role });
    assert.equal(res.statusCode, 201, res.body);
    return { id: res.json().data.invitation.id as string, token: invitationTokenIn(await smtp.waitFor(email)) };
  };

  test('admins withdraw invitations, owners also owner ones; the token stops; others get 403 or 404', async () => {
    const owner = await ctx.signup();
    const admin = await ctx.signup();
    const member = await ctx.signup();
    const stranger = await ctx.signup();
    const invitee = await ctx.signup();
    const org = await createOrg(ctx, owner);
    await addMember(ctx, smtp, owner, org.id, admin, 'admin');
    await addMember(ctx, smtp, owner, org.id, member, 'member');
    const plain = await sendInvitation(admin, org.id, invitee.email, 'member');
    const toOwner = await sendInvitation(owner, org.id, 'future-owner@example.com', 'owner');
    const path = (id: string) => `/api/orgs/${org.id}/invitations/${id}`;
    assertError(await ctx.call(member, 'DELETE', path(plain.id)), 403, 'FORBIDDEN');
    assertError(await ctx.call(admin, 'DELETE', path(toOwner.id)), 403, 'FORBIDDEN');
    assertError(await ctx.call(stranger, 'DELETE', path(plain.id)), 404, 'NOT_FOUND');
    assertError(await ctx.call(owner, 'DELETE', path('not-a-uuid')), 404, 'NOT_FOUND');
    const otherOrg = await createOrg(ctx, owner, 'Other');
    assertError(await ctx.call(owner, 'DELETE', `/api/orgs/${otherOrg.id}/invitations/${plain.id}`), 404, 'NOT_FOUND');
    const withdrawn = await ctx.call(admin, 'DELETE', path(plain.id));
    assert.equal(withdrawn.statusCode, 200, withdrawn.body);
    assert.equal((await ctx.call(owner, 'DELETE', path(toOwner.id))).statusCode, 200);
    assert.deepEqual(await invitationsOf(owner, org.id), []);
    assertError(await ctx.call(owner, 'DELETE', path(plain.id)), 404, 'NOT_FOUND');
    const accept = await ctx.call(invitee, 'POST', '/api/orgs/invitations/accept', { token: plain.token });
    assertError(accept, 400, 'INVALID_TOKEN');
  });

  test('a removed or demoted inviter’s open invitations go; an owner demoted to admin loses owner ones', async () => {
    const owner = await ctx.signup();
    const admin = await ctx.signup();
    const coOwner = await ctx.signup();
    const invitee = await ctx.signup();
    const org = await createOrg(ctx, owner);
    await addMember(ctx, smtp, owner, org.id, admin, 'admin');
    await addMember(ctx, smtp, owner, org.id, coOwner, 'owner');
    const byAdmin = await sendInvitation(admin, org.id, invitee.email, 'member');
    await sendInvitation(coOwner, org.id, 'next-owner@example.com', 'owner');
    const adminInvite = await sendInvitation(coOwner, org.id, 'next-admin@example.com', 'admin');
    const member = (id: string) => `/api/orgs/${org.id}/members/${id}`;
    assert.equal((await ctx.call(owner, 'PATCH', member(coOwner.id), { role: 'admin' })).statusCode, 200);
    assert.deepEqual(
      (await invitationsOf(owner, org.id)).map((i) => i.id),
      [byAdmin.id, adminInvite.id],
    );
    assert.equal((await ctx.call(owner, 'PATCH', member(admin.id), { role: 'viewer' })).statusCode, 200);
    assert.deepEqual(
      (await invitationsOf(owner, org.id)).map((i) => i.id),
      [adminInvite.id],
    );
    const accept = await ctx.call(invitee, 'POST', '/api/orgs/invitations/accept', { token: byAdmin.token });
    assertError(accept, 400, 'INVALID_TOKEN');
    assert.equal((await ctx.call(owner, 'DELETE', member(coOwner.id))).statusCode, 200);
    assert.deepEqual(await invitationsOf(owner, org.id), []);
  });
});

describe('organizations: idempotency keys', () => {
  test('two members of an organization reusing one Idempotency-Key value do not collide', async () => {
    const owner = await ctx.signup();
    const member = await ctx.signup();
    const org = await createOrg(ctx, owner);
    await addMember(ctx, smtp, owner, org.id, member, 'member');
    const ownerKey = await orgKey(ctx, owner, org.id, ['projects:write']);
    const memberKey = await orgKey(ctx, member, org.id, ['projects:write']);
    const create = (key: TestUser, name: string) =>
      ctx.inject({
        method: 'POST',
        url: '/api/projects',
        headers: { ...key.headers, 'idempotency-key': 'same-value-1' },
        payload: { name },
      });
    const first = await create(ownerKey, 'Owner project');
    assert.equal(first.statusCode, 201, first.body);
    const second = await create(memberKey, 'Member project');
    assert.equal(second.statusCode, 201, second.body);
    assert.equal(second.headers['idempotent-replayed'], undefined);
    assert.notEqual(second.json().data.project.id, first.json().data.project.id);
    // Each one's retry still replays their own answer.
    const retry = await create(memberKey, 'Member project');
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.equal(retry.json().data.project.id, second.json().data.project.id);
  });
});

describe('organizations: chat tools decide like routes', () => {
  test('an organization key’s chat tools follow the holder’s role, not only the key’s scopes', async () => {
    const owner = await ctx.signup();
    const org = await createOrg(ctx, owner);
    // A key minted while its holder was a member, who is a viewer now: leads:write stays on the key.
    const viewer: Principal = {
      userId: org.id,
      actorUserId: owner.id,
      orgId: org.id,
      orgRole: 'viewer',
      keyId: 'k',
      email: owner.email,
      scopes: ['leads:write', 'sources:read'],
    };
    const update = { leadIds: ['01900000-0000-7000-8000-000000000000'], updates: { status: 'CONTACTED' } };
    const refused = await executeWriteTool(ctx.deps, viewer, 'updateLeads', update);
    assert.deepEqual(refused.status, 'FAILED');
    assert.match(refused.status === 'FAILED' ? refused.error : '', /role viewer/);
    // The member role may: the lead is simply unknown (a service refusal, not an authorization one).
    const member = await executeWriteTool(ctx.deps, { ...viewer, orgRole: 'member' }, 'updateLeads', update);
    assert.doesNotMatch(member.status === 'FAILED' ? member.error : '', /role|scope/);
    // Read tools: the organization's sources for the viewer; another scope is refused by the key.
    const tools = buildTools(ctx.deps, viewer) as Record<string, { execute: (i: unknown, o: unknown) => unknown }>;
    assert.deepEqual(await tools.listSources!.execute({ limit: 5 }, {}), { sources: [], nextCursor: null });
    await assert.rejects(async () => tools.listJobs!.execute({ limit: 5 }, {}), /lacks the scope jobs:read/);
  });
});
