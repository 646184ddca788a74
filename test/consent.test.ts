import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../src/shared/clock.ts';
import { createTestContext, type TestContext } from './helpers/app.ts';

let ctx: TestContext;
const clock = new ManualClock(new Date('2030-01-15T10:00:00.000Z'));
before(async () => {
  ctx = await createTestContext({ clock, workers: false });
});
after(async () => ctx?.close());

const mintKey = async (headers: { authorization: string }, scopes: string[]) => {
  const res = await ctx.inject({ method: 'POST', url: '/api/api-keys', headers, payload: { name: 'scoped', scopes } });
  assert.equal(res.statusCode, 201, res.body);
  return { authorization: `Bearer ${res.json().data.apiKey.key}` };
};

describe('GET /api/users/consent', () => {
  test('answers the signup choices with updatedAt', async () => {
    const u = await ctx.signup({ marketingConsent: true });
    const res = await ctx.inject({ method: 'GET', url: '/api/users/consent', headers: u.headers });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), {
      success: true,
      data: {
        consent: {
          termsAccepted: true,
          privacyAccepted: true,
          marketingConsent: true,
          updatedAt: clock.now().toISOString(),
        },
      },
    });
    const other = await ctx.signup();
    const res2 = await ctx.inject({ method: 'GET', url: '/api/users/consent', headers: other.headers });
    assert.equal(res2.json().data.consent.marketingConsent, false);
  });

  test('401 without a key', async () => {
    const res = await ctx.inject({ method: 'GET', url: '/api/users/consent' });
    assert.equal(res.statusCode, 401);
    assert.equal(res.json().error.code, 'UNAUTHORIZED');
  });
});

describe('PATCH /api/users/consent', () => {
  test('changes marketing consent, persists it and appends an audit event with the client address', async () => {
    const u = await ctx.signup();
    clock.advance(60_000);
    const res = await ctx.inject({
      method: 'PATCH',
      url: '/api/users/consent',
      headers: u.headers,
      remoteAddress: '203.0.113.7',
      payload: { marketingConsent: true },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().data.consent, {
      termsAccepted: true,
      privacyAccepted: true,
      marketingConsent: true,
      updatedAt: clock.now().toISOString(),
    });

    const again = await ctx.inject({ method: 'GET', url: '/api/users/consent', headers: u.headers });
    assert.equal(again.json().data.consent.marketingConsent, true);
    const [row] = await ctx.deps.database.query<{ marketing_consent: boolean }>(
      'SELECT marketing_consent FROM users WHERE id = $1',
      [u.id],
    );
    assert.equal(row!.marketing_consent, true);

    clock.advance(60_000);
    const off = await ctx.inject({
      method: 'PATCH',
      url: '/api/users/consent',
      headers: u.headers,
      remoteAddress: '198.51.100.9',
      payload: { marketingConsent: false },
    });
    assert.equal(off.json().data.consent.marketingConsent, false);
    const events = await ctx.deps.database.query<{ consent_type: string; granted: boolean; ip: string }>(
      `SELECT consent_type, granted, host(ip_address) AS ip FROM consent_events WHERE user_id = $1 AND consent_type ` +
        `= 'marketing' ORDER BY changed_at`,
      [u.id],
    );
    assert.equal(events.length, 3);
    assert.equal(events[0]!.granted, false); // signup, from the helper's 127.1.x.y address
    assert.match(events[0]!.ip, /^127\.1\.\d+\.\d+$/);
    assert.deepEqual(
      events.slice(1).map((e) => [e.granted, e.ip]),
      [
        [true, '203.0.113.7'],
        [false, '198.51.100.9'],
      ],
    );
  });

  const invalid: Array<[string, unknown, string]> = [
    ['missing', {}, 'marketingConsent'],
    ['wrong type', { marketingConsent: 'yes' }, 'marketingConsent'],
    ['null', { marketingConsent: null }, 'marketingConsent'],
  ];
  for (const [name, payload, field] of invalid) {
    test(`400 VALIDATION_ERROR naming ${field}: ${name}`, async () => {
      const u = await ctx.signup();
      const res = await ctx.inject({
        method: 'PATCH',
        url: '/api/users/consent',
        headers: u.headers,
        payload: payload as object,
      });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().error.code, 'VALIDATION_ERROR');
      assert.ok(
        res.json().error.details.some((d: { field: string }) => d.field === field),
        res.body,
      );
      const after = await ctx.inject({ method: 'GET', url: '/api/users/consent/history', headers: u.headers });
      assert.equal(after.json().data.history.length, 3, 'no event for a refused change');
    });
  }

  test('400 for consents that cannot be changed here (terms) and for a body that is not JSON', async () => {
    const u = await ctx.signup();
    const terms = await ctx.inject({
      method: 'PATCH',
      url: '/api/users/consent',
      headers: u.headers,
      payload: { marketingConsent: true, termsAccepted: false },
    });
    assert.equal(terms.statusCode, 400);
    assert.equal(terms.json().error.code, 'VALIDATION_ERROR');
    assert.deepEqual(
      terms.json().error.details.map((d: { field: string }) => d.field),
      ['termsAccepted'],
    );
    const bad = await ctx.inject({
      method: 'PATCH',
      url: '/api/users/consent',
      headers: { ...u.headers, 'content-type': 'application/json' },
      payload: '{"marketingConsent":',
    });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().error.code, 'VALIDATION_ERROR');
    const consent = await ctx.inject({ method: 'GET', url: '/api/users/consent', headers: u.headers });
    assert.equal(consent.json().data.consent.marketingConsent, false);
  });

  test('needs users:write; users:read may only read', async () => {
    const u = await ctx.signup();
    const readOnly = await mintKey(u.headers, ['users:read']);
    assert.equal((await ctx.inject({ method: 'GET', url: '/api/users/consent', headers: readOnly })).statusCode, 200);
    const res = await ctx.inject({
      method: 'PATCH',
      url: '/api/users/consent',
      headers: readOnly,
      payload: { marketingConsent: true },
    });
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().error.code, 'INSUFFICIENT_SCOPE');
  });
});

describe('GET /api/users/consent/history', () => {
  test(
    'signup writes terms, privacy and marketing; changes follow, newest first, each user sees only their ' + 'own',
    async () => {
      const signupAt = clock.now().toISOString();
      const u = await ctx.signup({ marketingConsent: false });
      const other = await ctx.signup({ marketingConsent: true });
      clock.advance(5_000);
      const changedAt = clock.now().toISOString();
      await ctx.inject({
        method: 'PATCH',
        url: '/api/users/consent',
        headers: u.headers,
        remoteAddress: '192.0.2.44',
        payload: { marketingConsent: true },
      });

      const res = await ctx.inject({ method: 'GET', url: '/api/users/consent/history', headers: u.headers });
      assert.equal(res.statusCode, 200);
      const { history, nextCursor } = res.json().data;
      assert.equal(nextCursor, null);
      assert.equal(history.length, 4);
      assert.deepEqual(history[0], { consentType: 'marketing', granted: true, changedAt, ipAddress: '192.0.2.44' });
      assert.deepEqual(
        history
          .slice(1)
          .map((h: { consentType: string; granted: boolean; changedAt: string }) => [
            h.consentType,
            h.granted,
            h.changedAt,
          ]),
        [
          ['marketing', false, signupAt],
          ['privacy', true, signupAt],
          ['terms', true, signupAt],
        ],
      );
      for (const h of history) assert.match(h.ipAddress, /^\d+\.\d+\.\d+\.\d+$/);

      const theirs = await ctx.inject({ method: 'GET', url: '/api/users/consent/history', headers: other.headers });
      assert.equal(theirs.json().data.history.length, 3);
      assert.ok(theirs.json().data.history.every((h: { ipAddress: string }) => h.ipAddress !== '192.0.2.44'));
      assert.equal(theirs.json().data.history[0].granted, true);
    },
  );

  test('an event without a known address leaves ipAddress out', async () => {
    const u = await ctx.signup();
    await ctx.deps.database.query(`UPDATE consent_events SET ip_address = NULL WHERE user_id = $1`, [u.id]);
    const res = await ctx.inject({ method: 'GET', url: '/api/users/consent/history', headers: u.headers });
    assert.equal(res.json().data.history.length, 3);
    for (const h of res.json().data.history) assert.equal('ipAddress' in h, false);
  });

  test('paginates with limit and cursor; a bad cursor or limit is a 400 naming it', async () => {
    const u = await ctx.signup();
    for (const v of [true, false, true]) {
      clock.advance(1000);
      await ctx.inject({
        method: 'PATCH',
        url: '/api/users/consent',
        headers: u.headers,
        payload: { marketingConsent: v },
      });
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await ctx.inject({
        method: 'GET',
        url: `/api/users/consent/history?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        headers: u.headers,
      });
      assert.equal(res.statusCode, 200);
      const data = res.json().data as {
        history: Array<{ changedAt: string; consentType: string }>;
        nextCursor: string | null;
      };
      assert.ok(data.history.length <= 2);
      seen.push(...data.history.map((h) => `${h.consentType}@${h.changedAt}`));
      cursor = data.nextCursor;
      pages++;
    } while (cursor);
    assert.equal(pages, 3);
    assert.equal(seen.length, 6);
    assert.equal(new Set(seen).size, 6);
    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=abc', 'limit'],
      ['cursor=nope', 'cursor'],
    ]) {
      const res = await ctx.inject({ method: 'GET', url: `/api/users/consent/history?${query}`, headers: u.headers });
      assert.equal(res.statusCode, 400, query);
      assert.equal(res.json().error.code, 'VALIDATION_ERROR');
      assert.equal(res.json().error.details[0].field, field);
    }
  });

  test('401 without a key', async () => {
    const res = await ctx.inject({ method: 'GET', url: '/api/users/consent/history' });
    assert.equal(res.statusCode, 401);
  });
});

describe('client address behind a proxy', () => {
  test('with TRUST_PROXY a forwarded address that is not an IP is not stored (and is no 500)', async () => {
    const proxied = await createTestContext({ env: { TRUST_PROXY: 'true' }, workers: false });
    try {
      const u = await proxied.signup();
      for (const forwarded of ['garbage', '203.0.113.7']) {
        const res = await proxied.inject({
          method: 'PATCH',
          url: '/api/users/consent',
          headers: { ...u.headers, 'x-forwarded-for': forwarded },
          payload: { marketingConsent: true },
        });
        assert.equal(res.statusCode, 200, res.body);
      }
      const history = (
        await proxied.inject({ method: 'GET', url: '/api/users/consent/history', headers: u.headers })
      ).json().data.history;
      assert.equal(history[0].ipAddress, '203.0.113.7');
      assert.ok(!history[1].ipAddress, 'the non-IP value was dropped');
      const signup = await proxied.inject({
        method: 'POST',
        url: '/api/auth/signup',
        headers: { 'x-forwarded-for': 'unknown' },
        payload: { email: 'xff@example.com', password: 'long enough pw', termsAccepted: true, privacyAccepted: true },
      });
      assert.equal(signup.statusCode, 201, signup.body);
    } finally {
      await proxied.close();
    }
  });
});
