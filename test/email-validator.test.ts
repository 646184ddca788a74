import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isReservedDomain } from '../src/db/free-mail-domains.ts';
import { addressFlags } from '../src/modules/email-verification/index.ts';
import { createMailDomainResolver } from '../src/shared/mail/dns.ts';
import { checkEmailSyntax } from '../src/shared/mail/syntax.ts';
import { startTestDnsServer, TEST_ZONES, type TestDnsServer } from './helpers/dns.ts';

describe('email syntax', () => {
  const valid = [
    'a@b.co',
    'ada.lovelace+leads@example.com',
    "o'brien@example.ie",
    'x_y-z!#$%&*/=?^`{|}~@sub.example.co.uk',
    'josé@exämple.de',
    'user@xn--exmple-cua.de',
    `${'a'.repeat(64)}@example.com`,
  ];
  const invalid = [
    '',
    'plain',
    '@example.com',
    'a@',
    'a@b',
    'a..b@example.com',
    '.a@example.com',
    'a.@example.com',
    'a b@example.com',
    '"quoted"@example.com',
    'a@[192.0.2.1]',
    'a@192.0.2.1',
    'a@-example.com',
    'a@example-.com',
    'a@exa_mple.com',
    'a@example..com',
    'a@example.com.',
    'a@example.c',
    'a@@example.com',
    'zero\u200bwidth@example.com',
    `${'a'.repeat(65)}@example.com`,
    `a@${'b'.repeat(64)}.com`,
    `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(60)}.com`, // 257 characters: over 254
  ];
  for (const email of valid) test(`valid: ${email.slice(0, 40)}`, () => assert.equal(checkEmailSyntax(email).ok, true));
  for (const email of invalid)
    test(`invalid: ${JSON.stringify(email.slice(0, 40))}`, () => assert.equal(checkEmailSyntax(email).ok, false));

  test('the domain is lower-cased and converted to ASCII for DNS', () => {
    const r = checkEmailSyntax(' Ada@Exämple.DE ');
    assert.ok(r.ok);
    assert.deepEqual([r.address, r.local, r.asciiDomain], ['Ada@exämple.de', 'Ada', 'xn--exmple-cua.de']);
  });
});

describe('address flags', () => {
  const cases: Array<[string, string, string[], string?]> = [
    ['info', 'acme.test', ['role_account']],
    ['Sales+eu', 'acme.test', ['role_account']],
    ['jane', 'gmail.com', ['free_provider']],
    ['jane', 'mailinator.com', ['disposable', 'free_provider']],
    ['jane', 'inbox.mailinator.com', ['disposable']],
    ['jane', 'gmail.co', ['free_provider', 'possible_typo'], 'jane@gmail.com'],
    ['jane', 'hotmial.com', ['disposable', 'free_provider', 'possible_typo'], 'jane@hotmail.com'],
    ['jane', 'yahoo.co', ['possible_typo'], 'jane@yahoo.com'],
    ['jane', 'gmx.com', ['free_provider']],
    ['jane', 'acme.com', []],
    ['jane', 'ge.com', []],
    // Reserved for documentation and testing (RFC 2606, RFC 6761), though the providers list carries example.com.
    ['jane', 'example.com', []],
    ['jane', 'EXAMPLE.org', []],
    ['jane', 'mail.example.net', []],
  ];
  for (const [local, domain, flags, suggestion] of cases) {
    test(`${local}@${domain} → ${flags.join(', ') || 'no flags'}`, () => {
      const r = addressFlags(local, domain);
      assert.deepEqual(r.flags, flags);
      assert.equal(r.suggestion, suggestion);
    });
  }
  test('reserved names: example.com/.net/.org and their subdomains, *.example, *.test, *.invalid, *.localhost', () => {
    for (const d of [
      'example.com',
      'a.example.org',
      'acme.example',
      'acme.test',
      'x.invalid',
      'localhost',
      'a.localhost',
    ]) {
      assert.ok(isReservedDomain(d), d);
    }
    for (const d of ['example.co', 'myexample.com', 'gmail.com', 'test.com', 'example.com.au'])
      assert.ok(!isReservedDomain(d), d);
  });
});

describe('mail domain resolver (real DNS server on loopback)', () => {
  let dns: TestDnsServer;
  before(async () => {
    dns = await startTestDnsServer({
      ...TEST_ZONES,
      'mixed-null.test': {
        mx: [
          { exchange: '', priority: 0 },
          { exchange: 'mx.mixed-null.test', priority: 10 },
        ],
      },
      'cached.test': { mx: [{ exchange: 'mx.cached.test', priority: 10 }] },
    });
  });
  after(() => dns?.close());

  test('every answer maps to its status', async () => {
    // Answers get time to arrive on a busy machine; only the server that never answers is asked with a short timeout.
    const resolver = createMailDomainResolver({ servers: [dns.address], timeoutMs: 5000, tries: 2 });
    const impatient = createMailDomainResolver({ servers: [dns.address], timeoutMs: 300, tries: 1 });
    assert.equal(await impatient.check('hang.test'), 'unknown', 'hang.test');
    const expected: Record<string, string> = {
      'acme.test': 'ok',
      'a-only.test': 'ok',
      'aaaa-only.test': 'ok',
      'nullmx.test': 'null_mx',
      'mixed-null.test': 'ok',
      'nomail.test': 'no_mx',
      'nothing-here.test': 'not_found',
      'servfail.test': 'unknown',
    };
    for (const [domain, status] of Object.entries(expected)) assert.equal(await resolver.check(domain), status, domain);
  });

  test('concurrent checks of one domain share one lookup; answers are kept for the TTL', async () => {
    let now = 1_000_000;
    const resolver = createMailDomainResolver({ servers: [dns.address], ttlMs: 60_000, now: () => now });
    const results = await Promise.all(Array.from({ length: 200 }, () => resolver.check('cached.test')));
    assert.ok(results.every((r) => r === 'ok'));
    assert.equal(dns.queries.get('cached.test'), 1);
    now += 59_000;
    await resolver.check('CACHED.test');
    assert.equal(dns.queries.get('cached.test'), 1);
    now += 2_000;
    await resolver.check('cached.test');
    assert.equal(dns.queries.get('cached.test'), 2);
  });
});
