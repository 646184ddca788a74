import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { mailboxAddress } from '../src/shared/mail/mailbox.ts';
import { assertPublicHost, ipLiteral, privateAddressReason, SsrfBlockedError } from '../src/shared/ssrf.ts';
import { startTestDnsServer, type TestDnsServer } from './helpers/dns.ts';

// README "Scraping" (the SSRF guard): the one classification every outbound connection goes through. An address
// is judged by what it reaches: IPv6 forms that carry an IPv4 address by that address, and nothing but global
// unicast is allowed. Each row: the address as given, and the reason it is refused (a pattern), or null when it
// must be allowed.
const TABLE: Array<[string, RegExp | null]> = [
  // From the report: IPv4-compatible IPv6 (::/96).
  ['::127.0.0.1', /loopback.*IPv4-compatible.*127\.0\.0\.1/],
  ['[::a9fe:a9fe]', /link-local.*IPv4-compatible.*169\.254\.169\.254/],
  ['::10.0.0.1', /private.*IPv4-compatible.*10\.0\.0\.1/],
  ['::7f00:1', /loopback/],
  ['0:0:0:0:0:0:c0a8:101', /private.*192\.168\.1\.1/],
  ['::8.8.8.8', null],
  // IPv4-mapped and IPv4-translated.
  ['::ffff:127.0.0.1', /loopback.*IPv4-mapped/],
  ['::ffff:a9fe:a9fe', /link-local.*IPv4-mapped/],
  ['[::ffff:10.0.0.1]', /private/],
  ['::ffff:0:a9fe:a9fe', /link-local.*IPv4-translated/],
  ['::ffff:8.8.8.8', null],
  // NAT64: the well-known prefix carries the address; the local-use prefix is never global.
  ['64:ff9b::7f00:1', /loopback.*NAT64/],
  ['64:ff9b::169.254.169.254', /link-local.*NAT64/],
  ['64:ff9b::808:808', null],
  ['64:ff9b:1::a00:1', /local-use NAT64/],
  // 6to4: the address in bits 16-47.
  ['2002:7f00:1::', /loopback.*6to4.*127\.0\.0\.1/],
  ['2002:a9fe:a9fe::1', /link-local.*6to4/],
  ['2002:c0a8:101::1', /private.*6to4.*192\.168\.1\.1/],
  ['2002:808:808::1', null],
  // Teredo: the server in clear, the client inverted; RFC 4380's example has a documentation client.
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', /documentation.*Teredo.*client.*192\.0\.2\.45/],
  ['2001:0:808:808::80ff:fffe', /loopback.*Teredo.*client.*127\.0\.0\.1/],
  ['2001:0:a00:1::f7f7:f7f7', /private.*Teredo.*server.*10\.0\.0\.1/],
  ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', null],
  // IPv6 outside global unicast, or special inside it.
  ['::', /unspecified/],
  ['::1', /loopback/],
  ['[::1]', /loopback/],
  ['fe80::1', /link-local/],
  ['fe80::1%eth0', /link-local/],
  ['fc00::1', /unique-local/],
  ['fd12:3456:789a::1', /unique-local/],
  ['fec0::1', /site-local/],
  ['ff02::1', /multicast/],
  ['100::1', /discard/],
  ['4000::1', /reserved/],
  ['2001:db8::1', /documentation/],
  ['3fff::1', /documentation/],
  ['2001:2::1', /benchmarking/],
  ['2001:10::1', /ORCHID/],
  ['2001:20::1', /ORCHID/],
  ['2001:100::1', /IETF protocol assignment/],
  ['2606:4700:4700::1111', null],
  ['2001:4860:4860::8888', null],
  ['2a00:1450:4001:80b::200e', null],
  // IPv4 ranges that are not global unicast.
  ['0.0.0.0', /unspecified/],
  ['0.1.2.3', /unspecified/],
  ['10.1.2.3', /private/],
  ['100.64.0.1', /carrier-grade NAT/],
  ['100.127.255.254', /carrier-grade NAT/],
  ['127.0.0.1', /loopback/],
  ['127.255.255.254', /loopback/],
  ['169.254.169.254', /link-local/],
  ['172.16.0.1', /private/],
  ['172.31.255.255', /private/],
  ['192.0.0.8', /IETF protocol assignment/],
  ['192.0.2.1', /documentation/],
  ['192.88.99.1', /6to4 relay/],
  ['192.168.1.1', /private/],
  ['198.18.0.1', /benchmarking/],
  ['198.19.255.255', /benchmarking/],
  ['198.51.100.7', /documentation/],
  ['203.0.113.9', /documentation/],
  ['224.0.0.1', /multicast/],
  ['239.255.255.250', /multicast/],
  ['240.0.0.1', /reserved/],
  ['255.255.255.255', /broadcast/],
  // Spellings inet_aton and WHATWG URL accept for 127.0.0.1.
  ['127.1', /loopback/],
  ['0x7f.1', /loopback/],
  ['0x7f.0.0.1', /loopback/],
  ['0177.0.0.1', /loopback/],
  ['2130706433', /loopback/],
  ['0x7f000001', /loopback/],
  ['0xa9.0xfe.0xa9.0xfe', /link-local/],
  ['127.0.0.1.', /loopback/],
  // Public IPv4, including neighbours of refused ranges.
  ['1.1.1.1', null],
  ['8.8.8.8', null],
  ['93.184.215.14', null],
  ['11.0.0.1', null],
  ['100.128.0.1', null],
  ['169.253.255.255', null],
  ['172.32.0.1', null],
  ['192.0.3.1', null],
  ['198.20.0.1', null],
  ['223.255.255.254', null],
  // Not an IP address at all.
  ['example.com', /not a valid IP address/],
  ['', /not a valid IP address/],
  ['1.2.3.4.5', /not a valid IP address/],
  ['08.1.1.1', /not a valid IP address/],
  ['::g', /not a valid IP address/],
];

describe('privateAddressReason', () => {
  test(`refuses everything that is not global unicast (${TABLE.length} forms)`, () => {
    assert.ok(TABLE.length >= 40);
    const wrong = TABLE.flatMap(([ip, expected]) => {
      const reason = privateAddressReason(ip);
      const ok = expected === null ? reason === undefined : reason !== undefined && expected.test(reason);
      return ok ? [] : [`${ip}: got ${reason ?? 'allowed'}, wanted ${expected ?? 'allowed'}`];
    });
    assert.deepEqual(wrong, []);
  });

  test('ipLiteral gives the address a literal names, in the form connections use', () => {
    const forms: Array<[string, string | undefined]> = [
      ['[::127.0.0.1]', '::7f00:1'],
      ['::FFFF:10.0.0.1', '::ffff:a00:1'],
      ['fe80::1%eth0', 'fe80::1%eth0'],
      ['127.1', '127.0.0.1'],
      ['1.2.3', '1.2.0.3'],
      ['0x7f.1', '127.0.0.1'],
      ['2130706433', '127.0.0.1'],
      ['8.8.8.8', '8.8.8.8'],
      ['mail.example.com', undefined],
      ['4294967296', undefined],
    ];
    assert.deepEqual(
      forms.map(([host]) => [host, ipLiteral(host)]),
      forms,
    );
  });
});

describe('hosts given as strings', () => {
  let dns: TestDnsServer;
  before(async () => {
    // Any name asked for is NXDOMAIN here, so a literal taken for a name would show as "does not resolve".
    dns = await startTestDnsServer({});
  });
  after(async () => dns?.close());

  test('assertPublicHost refuses every spelling of a private address without a DNS look-up', async () => {
    for (const host of ['[::127.0.0.1]', '::a9fe:a9fe', '0x7f.1', '2130706433', '0177.0.0.1', '64:ff9b::a00:1']) {
      await assert.rejects(assertPublicHost(host, false), SsrfBlockedError, host);
    }
    await assertPublicHost('2606:4700:4700::1111', false);
    await assertPublicHost('[::127.0.0.1]', true);
  });

  test('a mailbox host is refused in any spelling, and reached at the address it names when allowed', async () => {
    const servers = [dns.address];
    for (const [host, reason] of [
      ['::a9fe:a9fe', /link-local.*169\.254\.169\.254/],
      ['::10.0.0.1', /private/],
      ['0x7f.1', /loopback/],
      ['2130706433', /loopback/],
      ['2002:7f00:1::', /loopback.*6to4/],
    ] as const) {
      const reach = await mailboxAddress(host, { servers, allowPrivate: false });
      assert.ok('refused' in reach, host);
      assert.match(reach.refused, reason);
    }
    assert.deepEqual(await mailboxAddress('0x7f.1', { servers, allowPrivate: true }), { address: '127.0.0.1' });
  });
});
