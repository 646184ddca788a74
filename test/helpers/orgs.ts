import assert from 'node:assert/strict';
import type { TestContext, TestUser } from './app.ts';
import type { TestSmtpServer } from './smtp.ts';

/** The invitation token in a received mail (an indented line of 43 base64url characters). */
export function invitationTokenIn(mail: { text: string }): string {
  const match = /^\s+([A-Za-z0-9_-]{43})$/m.exec(mail.text);
  assert.ok(match, mail.text);
  return match[1]!;
}

/** Creates an organization owned by `owner` through the API; answers its detail. */
export async function createOrg(ctx: TestContext, owner: TestUser, name = 'Acme') {
  const res = await ctx.call(owner, 'POST', '/api/orgs', { name });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.organization as { id: string; name: string; members: Array<{ id: string; role: string }> };
}

/** An organization key minted by `user` with their personal key. */
export async function orgKey(ctx: TestContext, user: TestUser, orgId: string, scopes = ['*']): Promise<TestUser> {
  const res = await ctx.call(user, 'POST', '/api/api-keys', { name: `org ${orgId}`, scopes, orgId });
  assert.equal(res.statusCode, 201, res.body);
  const { key, id } = res.json().data.apiKey;
  return {
    id: user.id,
    email: user.email,
    apiKey: key,
    headers: { authorization: `Bearer ${key}` },
    keyId: id,
  } as TestUser;
}

/** Invites `email` by mail through the real SMTP server and answers the token the mail carries. */
export async function invite(
  ctx: TestContext,
  smtp: TestSmtpServer,
  by: TestUser,
  orgId: string,
  email: string,
  role: string,
): Promise<string> {
  const res = await ctx.call(by, 'POST', `/api/orgs/${orgId}/members`, { email, role });
  assert.equal(res.statusCode, 201, res.body);
  return invitationTokenIn(await smtp.waitFor(email));
}

/** Invites an existing user and has them accept: they are a member with `role`. */
export async function addMember(
  ctx: TestContext,
  smtp: TestSmtpServer,
  by: TestUser,
  orgId: string,
  user: TestUser,
  role: string,
): Promise<void> {
  const token = await invite(ctx, smtp, by, orgId, user.email, role);
  const res = await ctx.call(user, 'POST', '/api/orgs/invitations/accept', { token });
  assert.equal(res.statusCode, 200, res.body);
}
