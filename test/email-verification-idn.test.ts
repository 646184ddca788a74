import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createTwoUserContext, type TestContext, type TestUser } from './helpers/app.ts';

// A hard bounce names the address with its domain in punycode; leads may hold it in Unicode (README, Email
// verification): both spellings are the same mailbox.
let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
before(async () => {
  ({ ctx, alice, bob } = await createTwoUserContext());
});
after(() => ctx?.close());

const createLead = async (user: TestUser, email: string) => {
  const res = await ctx.call(user, 'POST', '/api/leads', { sourceUrl: 'https://example.com/team', email });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.lead.id as string;
};
const leadOf = async (user: TestUser, id: string) => (await ctx.call(user, 'GET', `/api/leads/${id}`)).json().data.lead;

test('a hard bounce of an IDN address marks leads stored in Unicode and in punycode', async () => {
  const unicode = await createLead(alice, 'Jörg@Bücher.example');
  const ascii = await createLead(alice, 'jörg@xn--bcher-kva.example');
  const other = await createLead(alice, 'anna@bücher.example');
  const bobs = await createLead(bob, 'jörg@bücher.example');
  const res = await ctx.call(alice, 'POST', '/api/email-verification/bounces', {
    email: 'jörg@bücher.example',
    enhancedStatus: '5.1.1',
    diagnostic: '550 5.1.1 user unknown',
  });
  assert.equal(res.statusCode, 200, res.body);
  const [bounce] = res.json().data.bounces;
  assert.equal(bounce.email, 'jörg@xn--bcher-kva.example');
  for (const id of [unicode, ascii]) {
    const lead = await leadOf(alice, id);
    assert.equal(lead.status, 'INVALID', `${lead.email} marked`);
    assert.ok(lead.emailValidation.errors.includes('hard_bounced'));
  }
  assert.notEqual((await leadOf(alice, other)).status, 'INVALID');
  assert.notEqual((await leadOf(bob, bobs)).status, 'INVALID');
});
