import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { deletionRepository } from '../src/modules/account-deletion/account-deletion.repository.ts';
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
