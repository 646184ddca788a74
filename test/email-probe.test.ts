import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { loadConfig } from '../src/config.ts';
import { leads, suppressions } from '../src/db/schema/index.ts';
import { createTestContext, eventually, type TestContext, type TestUser } from './helpers/app.ts';
import { startTestDnsServer, TEST_ZONES, type TestDnsServer, type Zone } from './helpers/dns.ts';
import { startProbeServer, type TestProbeServer } from './helpers/smtp-probe-server.ts';

const MX = [{ exchange: 'mx.probe.test', priority: 10 }];
const ZONES: Record<string, Zone> = {
  ...TEST_ZONES,
  'mx.probe.test': { a: ['127.0.0.1'] },
  // Refuses connections: nothing listens on 127.0.0.2 at the probe port.
  'mx-dead.probe.test': { a: ['127.0.0.2'] },
  'probe.test': { mx: MX },
  'catchall.test': { mx: MX },
  'slow.test': { mx: MX },
  'bulk.test': { mx: MX },
  'fallback.test': {
    mx: [
      { exchange: 'mx.probe.test', priority: 20 },
      { exchange: 'mx-dead.probe.test', priority: 5 },
    ],
  },
  // No MX: the implicit MX is the domain's own address.
  'implicit.test': { a: ['127.0.0.1'] },
};

let dns: TestDnsServer;
let smtp: TestProbeServer;
let ctx: TestContext;
let alice: TestUser;

function env(extra: Record<string, string> = {}): Record<string, string> {
  return {
    DNS_SERVERS: dns.address,
    SMTP_PROBE: 'true',
    SMTP_PROBE_FROM: 'probe@quarry.example',
    SMTP_PROBE_HELO: 'probe.quarry.example',
    SMTP_PROBE_PORT: String(smtp.port),
    // Long enough for a busy machine (a step of the first probe must never time out), short for the one that hangs.
    SMTP_PROBE_TIMEOUT_MS: '3000',
    SMTP_PROBE_PER_DOMAIN: '2',
    ALLOW_PRIVATE_NETWORK: 'true',
    ...extra,
  };
}

before(async () => {
  dns = await startTestDnsServer(ZONES);
  smtp = await startProbeServer({
    mailboxes: ['jane@probe.test', 'jane@fallback.test', 'jane@implicit.test', 'grey@probe.test'],
    openDomains: ['bulk.test'],
    catchAllDomains: ['catchall.test'],
    hangDomains: ['slow.test'],
  });
  ctx = await createTestContext({ env: env() });
  alice = await ctx.signup();
});
after(async () => {
  await ctx?.close();
  await smtp?.close();
  await dns?.close();
});

async function createLead(c: TestContext, user: TestUser, email: string): Promise<string> {
  const res = await c.call(user, 'POST', '/api/leads', { sourceUrl: 'https://example.org/team', email });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.lead.id;
}

async function validate(c: TestContext, user: TestUser, email: string) {
  const id = await createLead(c, user, email);
  const res = await c.call(user, 'POST', `/api/leads/${id}/validate-email`);
  assert.equal(res.statusCode, 200, res.body);
  return { id, data: res.json().data };
}

const leadRow = async (id: string) => (await ctx.deps.db.select().from(leads).where(eq(leads.id, id)))[0]!;

describe('validate-email with SMTP_PROBE on', () => {
  test('an accepted address reaches tier mailbox; the server saw EHLO, MAIL, RCPT (address, random), QUIT', async () => {
    smtp.reset();
    const { id, data } = await validate(ctx, alice, 'jane@probe.test');
    assert.deepEqual(
      { status: data.status, tier: data.tier, errors: data.errors, flags: data.flags },
      { status: 'valid', tier: 'mailbox', errors: [], flags: [] },
    );
    assert.equal((await leadRow(id)).status, 'VALID');
    const [conn, ...others] = smtp.connections;
    assert.equal(others.length, 0);
    assert.deepEqual(conn!.commands, ['EHLO', 'MAIL', 'RCPT', 'RCPT', 'QUIT']);
    assert.equal(conn!.rcpts[0], 'jane@probe.test');
    assert.match(conn!.rcpts[1]!, /^qprobe-[0-9a-f]{16}@probe\.test$/);
  });

  test('550 5.1.1 → mailbox_not_found, status invalid', async () => {
    smtp.reset();
    const { id, data } = await validate(ctx, alice, 'ghost.user@probe.test');
    assert.deepEqual(
      { status: data.status, tier: data.tier, errors: data.errors, flags: data.flags },
      { status: 'invalid', tier: 'mailbox', errors: ['mailbox_not_found'], flags: [] },
    );
    assert.equal((await leadRow(id)).status, 'INVALID');
    assert.deepEqual(smtp.connections[0]!.commands, ['EHLO', 'MAIL', 'RCPT', 'QUIT']);
  });

  test('a catch-all domain → flag catch_all, status risky; the next address there is not probed again', async () => {
    smtp.reset();
    const { data } = await validate(ctx, alice, 'anyone@catchall.test');
    assert.deepEqual(
      { status: data.status, tier: data.tier, errors: data.errors, flags: data.flags },
      { status: 'risky', tier: 'mailbox', errors: [], flags: ['catch_all'] },
    );
    assert.equal(smtp.connectionsTo('catchall.test').length, 1);
    assert.equal(smtp.connectionsTo('catchall.test')[0]!.rcpts.length, 2);
    const second = await validate(ctx, alice, 'someone-else@catchall.test');
    assert.deepEqual(second.data.flags, ['catch_all']);
    assert.equal(second.data.status, 'risky');
    // The cached catch-all answer: no new connection, so no second random RCPT.
    assert.equal(smtp.connectionsTo('catchall.test').length, 1);
    assert.equal(smtp.connections.flatMap((c) => c.rcpts).filter((r) => r.startsWith('qprobe-')).length, 1);
  });

  test('greylisting (451) → smtp_unverified, tier domain', async () => {
    const { data } = await validate(ctx, alice, 'grey@probe.test');
    assert.deepEqual(
      { status: data.status, tier: data.tier, errors: data.errors, flags: data.flags },
      { status: 'valid', tier: 'domain', errors: [], flags: ['smtp_unverified'] },
    );
  });

  test('a server that never answers RCPT → smtp_unverified after the per-step timeout, and QUIT is sent', async () => {
    smtp.reset();
    const { data } = await validate(ctx, alice, 'jane@slow.test');
    assert.equal(data.tier, 'domain');
    assert.deepEqual(data.flags, ['smtp_unverified']);
    assert.equal(data.status, 'valid');
    const conn = smtp.connectionsTo('slow.test')[0]!;
    assert.deepEqual(conn.commands.slice(0, 3), ['EHLO', 'MAIL', 'RCPT']);
    assert.ok(!conn.commands.includes('DATA'));
  });

  test('a refused connection falls back to the next MX by preference; the implicit MX is the domain', async () => {
    for (const email of ['jane@fallback.test', 'jane@implicit.test']) {
      const { data } = await validate(ctx, alice, email);
      assert.equal(data.tier, 'mailbox', email);
      assert.equal(data.status, 'valid', email);
    }
  });

  test('a suppressed address answers errors [suppressed] with no connection at all', async () => {
    await ctx.deps.db
      .insert(suppressions)
      .values({ userId: alice.id, type: 'email', value: 'jane@probe.test', reason: 'unsubscribed' });
    smtp.reset();
    const { data } = await validate(ctx, alice, 'Jane@probe.test');
    assert.equal(data.status, 'invalid');
    assert.deepEqual(data.errors, ['suppressed']);
    assert.equal(smtp.connections.length, 0);
  });

  test('validate-bulk of many leads at one domain never holds more than SMTP_PROBE_PER_DOMAIN connections', async () => {
    smtp.reset();
    const ids = await Promise.all(Array.from({ length: 30 }, (_, i) => createLead(ctx, alice, `p${i}@bulk.test`)));
    const res = await ctx.call(alice, 'POST', '/api/leads/validate-bulk', { leadIds: ids });
    assert.equal(res.json().data.totalQueued, 30);
    const rows = await eventually(async () => {
      const all = await Promise.all(ids.map(leadRow));
      return all.every((r) => r.validatedAt) && all;
    }, 30_000);
    assert.ok(rows.every((r) => r.status === 'VALID' && r.emailValidation?.tier === 'mailbox'));
    assert.equal(smtp.connectionsTo('bulk.test').length, 30);
    const most = smtp.maxConcurrent.get('bulk.test') ?? 0;
    assert.ok(most >= 1 && most <= 2, `at most 2 connections at once, saw ${most}`);
    assert.ok(smtp.maxConcurrentOverall <= 2, `saw ${smtp.maxConcurrentOverall} at once`);
    // The first connection learnt the domain is no catch-all: the others ask only about their address.
    assert.equal(smtp.connections.flatMap((c) => c.rcpts).filter((r) => r.startsWith('qprobe-')).length <= 2, true);
    // MX answers and the exchanger's addresses come from the per-process DNS cache: one lookup each.
    assert.equal(dns.queries.get('bulk.test'), 1);
    assert.equal(dns.queries.get('mx.probe.test'), 2, 'one A and one AAAA query for the exchanger');
  });

  test('no probe ever sends DATA', () => {
    assert.ok(smtp.connections.every((c) => !c.commands.includes('DATA')));
  });
});

describe('SMTP_PROBE off, or a private exchanger without ALLOW_PRIVATE_NETWORK', () => {
  test('SMTP_PROBE off: no connection, tier domain with smtp_unverified', async () => {
    const off = await createTestContext({ env: env({ SMTP_PROBE: 'false' }) });
    try {
      const user = await off.signup();
      smtp.reset();
      const { data } = await validate(off, user, 'jane@implicit.test');
      assert.equal(data.tier, 'domain');
      assert.deepEqual(data.flags, ['smtp_unverified']);
      assert.equal(smtp.connections.length, 0);
    } finally {
      await off.close();
    }
  });

  test('the SSRF rules: a loopback exchanger is refused without ALLOW_PRIVATE_NETWORK (no connection)', async () => {
    const guarded = await createTestContext({ env: env({ ALLOW_PRIVATE_NETWORK: 'false' }) });
    try {
      const user = await guarded.signup();
      smtp.reset();
      const { data } = await validate(guarded, user, 'jane@implicit.test');
      assert.equal(data.tier, 'domain');
      assert.deepEqual(data.flags, ['smtp_unverified']);
      assert.equal(smtp.connections.length, 0);
    } finally {
      await guarded.close();
    }
  });

  test('configuration: SMTP_PROBE on needs SMTP_PROBE_FROM', () => {
    assert.throws(() => loadConfig({ SMTP_PROBE: 'true' }), /SMTP_PROBE_FROM.*required when SMTP_PROBE is on/);
    assert.throws(() => loadConfig({ SMTP_PROBE_FROM: 'not an address' }), /SMTP_PROBE_FROM/);
    const config = loadConfig({ SMTP_PROBE: 'true', SMTP_PROBE_FROM: 'probe@example.com' });
    assert.equal(config.SMTP_PROBE_PORT, 25);
    assert.equal(config.SMTP_PROBE_PER_DOMAIN, 2);
    assert.equal(config.SMTP_PROBE_TIMEOUT_MS, 10_000);
  });
});
