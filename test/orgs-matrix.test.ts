import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { addMember, createOrg, orgKey } from './helpers/orgs.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';

/**
 * The matrix of docs/organizations.md "Roles": role × resource × operation over real HTTP, compared with the table
 * written below. Every member's key is minted with every scope while they are an admin and their role is changed
 * afterwards, so what refuses a viewer or a member is their role at request time, not the key's scopes.
 * `hidden`: the answer is 200 but the organization's item is not in it.
 */

type Role = 'owner' | 'admin' | 'member' | 'viewer' | 'removed' | 'non-member';
type Op = 'read' | 'create' | 'update' | 'delete';
type Outcome = number | 'hidden' | '-';

// biome-ignore format: the table is read as a table
const expected: Record<string, Record<Role, Record<Op, Outcome>>> = {
  projects: {
    owner:        { read: 200, create: 201, update: 200, delete: 200 },
    admin:        { read: 200, create: 201, update: 200, delete: 200 },
    member:       { read: 200, create: 201, update: 200, delete: 200 },
    viewer:       { read: 200, create: 403, update: 403, delete: 403 },
    removed:      { read: 401, create: 401, update: 401, delete: 401 },
    // Projects answer 403 for another account's project on writes (docs/api.md, API conventions).
    'non-member': { read: 404, create: '-', update: 403, delete: 403 },
  },
  sources: {
    owner:        { read: 200, create: 201, update: 200, delete: 200 },
    admin:        { read: 200, create: 201, update: 200, delete: 200 },
    member:       { read: 200, create: 201, update: 200, delete: 200 },
    viewer:       { read: 200, create: 403, update: 403, delete: 403 },
    removed:      { read: 401, create: 401, update: 401, delete: 401 },
    'non-member': { read: 404, create: '-', update: 404, delete: 404 },
  },
  leads: {
    owner:        { read: 200, create: 201, update: 200, delete: 200 },
    admin:        { read: 200, create: 201, update: 200, delete: 200 },
    member:       { read: 200, create: 201, update: 200, delete: 200 },
    viewer:       { read: 200, create: 403, update: 403, delete: 403 },
    removed:      { read: 401, create: 401, update: 401, delete: 401 },
    'non-member': { read: 404, create: '-', update: 404, delete: 404 },
  },
  webhooks: {
    owner:        { read: 200, create: 201, update: 200, delete: 200 },
    admin:        { read: 200, create: 201, update: 200, delete: 200 },
    member:       { read: 200, create: 201, update: 200, delete: 200 },
    viewer:       { read: 200, create: 403, update: 403, delete: 403 },
    removed:      { read: 401, create: 401, update: 401, delete: 401 },
    'non-member': { read: 404, create: '-', update: 404, delete: 404 },
  },
  suppressions: {
    owner:        { read: 200, create: 200, update: '-', delete: 200 },
    admin:        { read: 200, create: 200, update: '-', delete: 200 },
    member:       { read: 200, create: 200, update: '-', delete: 200 },
    viewer:       { read: 200, create: 403, update: '-', delete: 403 },
    removed:      { read: 401, create: 401, update: '-', delete: 401 },
    'non-member': { read: 'hidden', create: '-', update: '-', delete: 404 },
  },
  // Another member's key of the organization: admins and owners see and revoke every one, but only its holder rotates
  // it (the new key acts as the holder); others see only their own.
  'api-keys': {
    owner:        { read: 200, create: 201, update: 403, delete: 200 },
    admin:        { read: 200, create: 201, update: 403, delete: 200 },
    member:       { read: 'hidden', create: 403, update: 403, delete: 403 },
    viewer:       { read: 'hidden', create: 403, update: 403, delete: 403 },
    removed:      { read: 401, create: 401, update: 401, delete: 401 },
    'non-member': { read: 'hidden', create: 404, update: 404, delete: 404 },
  },
  // update: a member's role; delete: removing a member (not oneself).
  members: {
    owner:        { read: 200, create: 201, update: 200, delete: 200 },
    admin:        { read: 200, create: 201, update: 200, delete: 200 },
    member:       { read: 200, create: 403, update: 403, delete: 403 },
    viewer:       { read: 200, create: 403, update: 403, delete: 403 },
    removed:      { read: 401, create: 401, update: 401, delete: 401 },
    'non-member': { read: 404, create: 404, update: 404, delete: 404 },
  },
};

let ctx: TestContext;
let smtp: TestSmtpServer;
before(async () => {
  smtp = await startSmtpServer();
  ctx = await createTestContext({ env: { SMTP_URL: smtp.url }, workers: false });
});
after(async () => {
  await ctx?.close();
  await smtp?.close();
});

type Caller = TestUser;
interface Resource {
  /** The owner's new item: its id (and what a list must show). */
  seed(): Promise<{ id: string; marker?: string }>;
  read(as: Caller, item: { id: string; marker?: string }): Promise<Outcome>;
  create?(as: Caller): Promise<number>;
  update?(as: Caller, id: string): Promise<number>;
  remove(as: Caller, id: string): Promise<number>;
}

test('role × resource × operation matches the table', async () => {
  const people = {
    owner: await ctx.signup(),
    admin: await ctx.signup(),
    member: await ctx.signup(),
    viewer: await ctx.signup(),
    removed: await ctx.signup(),
    'non-member': await ctx.signup(),
    keyHolder: await ctx.signup(),
  };
  const org = await createOrg(ctx, people.owner, 'Matrix');
  for (const who of ['admin', 'member', 'viewer', 'removed', 'keyHolder'] as const) {
    await addMember(ctx, smtp, people.owner, org.id, people[who], 'admin');
  }
  const keys: Record<Role, Caller> = {
    owner: await orgKey(ctx, people.owner, org.id),
    admin: await orgKey(ctx, people.admin, org.id),
    member: await orgKey(ctx, people.member, org.id),
    viewer: await orgKey(ctx, people.viewer, org.id),
    removed: await orgKey(ctx, people.removed, org.id),
    'non-member': people['non-member'],
  };
  const setRole = async (user: TestUser, role: string) =>
    assert.equal(
      (await ctx.call(people.owner, 'PATCH', `/api/orgs/${org.id}/members/${user.id}`, { role })).statusCode,
      200,
    );
  await setRole(people.member, 'member');
  await setRole(people.viewer, 'viewer');
  assert.equal(
    (await ctx.call(people.owner, 'DELETE', `/api/orgs/${org.id}/members/${people.removed.id}`)).statusCode,
    200,
  );
  const owner = keys.owner;

  const created = async (as: Caller, url: string, body: unknown, pick: (data: any) => string) => {
    const res = await ctx.call(as, 'POST', url, body);
    assert.equal(res.statusCode, url === '/api/suppressions' ? 200 : 201, res.body);
    return pick(res.json().data);
  };
  let n = 0;
  const unique = () => `${Date.now()}-${++n}`;
  const status = async (p: Promise<{ statusCode: number }>) => (await p).statusCode;
  const crud = (base: string, body: () => unknown, patch: unknown, pick: (d: any) => string): Resource => ({
    seed: async () => ({ id: await created(owner, base, body(), pick) }),
    read: (as, item) => status(ctx.call(as, 'GET', `${base}/${item.id}`)),
    create: (as) => status(ctx.call(as, 'POST', base, body())),
    update: (as, id) => status(ctx.call(as, 'PATCH', `${base}/${id}`, patch)),
    remove: (as, id) => status(ctx.call(as, 'DELETE', `${base}/${id}`)),
  });
  const source = () => ({
    name: `Directory ${unique()}`,
    url: 'https://example.com/lenders',
    scrapeType: 'STATIC',
    selectors: { item: '.card', email: 'a.mail@href' },
  });
  const suppression = () => ({ items: [{ type: 'email', value: `x${unique()}@example.com` }] });
  /** A fresh member to change or remove. */
  const newMember = async () => {
    const user = await ctx.signup();
    await addMember(ctx, smtp, people.owner, org.id, user, 'member');
    return { id: user.id };
  };
  const resources: Record<string, Resource> = {
    projects: crud(
      '/api/projects',
      () => ({ name: `P ${unique()}` }),
      { name: 'renamed' },
      (d) => d.project.id,
    ),
    sources: crud('/api/sources', source, { name: 'renamed' }, (d) => d.source.id),
    leads: crud(
      '/api/leads',
      () => ({ sourceUrl: 'https://example.org/people', email: `l${unique()}@example.org` }),
      { firstName: 'Renamed' },
      (d) => d.lead.id,
    ),
    webhooks: {
      ...crud(
        '/api/webhooks',
        () => ({ url: 'http://127.0.0.1:9/hooks', eventTypes: ['webhook.test'] }),
        { description: 'renamed' },
        (d) => d.webhook.id,
      ),
      read: (as, item) => status(ctx.call(as, 'GET', `/api/webhooks/${item.id}/deliveries`)),
    },
    suppressions: {
      seed: async () => {
        const body = suppression();
        const id = await created(owner, '/api/suppressions', body, (d) => d.suppressions[0].id);
        return { id, marker: body.items[0]!.value };
      },
      read: async (as, item) => {
        const res = await ctx.call(as, 'GET', `/api/suppressions?value=${encodeURIComponent(item.marker!)}`);
        if (res.statusCode !== 200) return res.statusCode;
        return res.json().data.suppressions.some((s: { id: string }) => s.id === item.id) ? 200 : 'hidden';
      },
      create: (as) => status(ctx.call(as, 'POST', '/api/suppressions', suppression())),
      remove: (as, id) => status(ctx.call(as, 'DELETE', `/api/suppressions/${id}`)),
    },
    'api-keys': {
      seed: async () => {
        const res = await ctx.call(people.keyHolder, 'POST', '/api/api-keys', {
          name: 'holder',
          scopes: ['projects:read'],
          orgId: org.id,
        });
        assert.equal(res.statusCode, 201, res.body);
        return { id: res.json().data.apiKey.id };
      },
      read: async (as, item) => {
        const res = await ctx.call(as, 'GET', '/api/api-keys?limit=100');
        if (res.statusCode !== 200) return res.statusCode;
        return res.json().data.apiKeys.some((k: { id: string }) => k.id === item.id) ? 200 : 'hidden';
      },
      create: (as) =>
        status(ctx.call(as, 'POST', '/api/api-keys', { name: 'new', scopes: ['projects:read'], orgId: org.id })),
      update: (as, id) => status(ctx.call(as, 'POST', `/api/api-keys/${id}/rotate`)),
      remove: (as, id) => status(ctx.call(as, 'DELETE', `/api/api-keys/${id}`)),
    },
    members: {
      seed: newMember,
      read: (as) => status(ctx.call(as, 'GET', `/api/orgs/${org.id}`)),
      create: (as) =>
        status(
          ctx.call(as, 'POST', `/api/orgs/${org.id}/members`, { email: `i${unique()}@example.com`, role: 'member' }),
        ),
      update: (as, id) => status(ctx.call(as, 'PATCH', `/api/orgs/${org.id}/members/${id}`, { role: 'viewer' })),
      remove: (as, id) => status(ctx.call(as, 'DELETE', `/api/orgs/${org.id}/members/${id}`)),
    },
  };

  const actual: typeof expected = {};
  for (const [name, resource] of Object.entries(resources)) {
    actual[name] = {} as Record<Role, Record<Op, Outcome>>;
    for (const role of Object.keys(keys) as Role[]) {
      const as = keys[role];
      const row = {} as Record<Op, Outcome>;
      row.read = await resource.read(as, await resource.seed());
      // A non-member has no way to create in the organization's account: their creations are their own.
      row.create =
        resource.create && !(role === 'non-member' && name !== 'api-keys' && name !== 'members')
          ? await resource.create(as)
          : '-';
      row.update = resource.update ? await resource.update(as, (await resource.seed()).id) : '-';
      row.delete = await resource.remove(as, (await resource.seed()).id);
      actual[name][role] = row;
    }
  }
  assert.deepEqual(actual, expected);
});
