import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestContext, type TestContext } from './helpers/app.ts';
import { assertError } from './helpers/assertions.ts';
import { addMember, createOrg, orgKey } from './helpers/orgs.ts';
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
