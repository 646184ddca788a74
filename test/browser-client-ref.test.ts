/**
 * The full X-Client-Ref matrix (api-spec.md, Authentication 4; issue 21, "Tests"): requests with header `a`, with
 * header `b` and without the header, against sessions recorded with ref `a`, with `b` and with none, in every
 * endpoint family (session GET/PATCH/DELETE, the list and its filter, actions, page, tabs, cookies, storage, logs
 * and their stream, the CDP WebSocket). With the header only same-ref sessions exist (anything else answers exactly
 * as an unknown id does); without it the key-wide view. The cdpUrl token is bound to its session and ref; another user's sessions
 * are 404 everywhere, the WebSocket included.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestUser } from './helpers/app.ts';
import { type BrowserTestContext, createBrowserContext, upgradeStatus } from './helpers/browser.ts';

let ctx: BrowserTestContext;
let alice: TestUser;
let bob: TestUser;
const S = '/api/browser/sessions';
const UNKNOWN = '0190a000-0000-7000-8000-000000000000';
const ORIGIN = 'http://127.0.0.1:9';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT';
interface Probe {
  family: string;
  method: Method;
  path: (id: string) => string;
  body?: object;
}

/** One request per endpoint family, each harmless to the session it reaches (DELETE comes last, separately). */
const probes: Probe[] = [
  { family: 'session GET', method: 'GET', path: (id) => `${S}/${id}` },
  { family: 'session PATCH', method: 'PATCH', path: (id) => `${S}/${id}`, body: { metadata: { seen: 'yes' } } },
  { family: 'actions', method: 'POST', path: (id) => `${S}/${id}/actions/evaluate`, body: { expression: '1 + 1' } },
  { family: 'page', method: 'GET', path: (id) => `${S}/${id}/page/content?format=text` },
  { family: 'tabs', method: 'GET', path: (id) => `${S}/${id}/tabs` },
  { family: 'cookies GET', method: 'GET', path: (id) => `${S}/${id}/cookies` },
  {
    family: 'cookies POST',
    method: 'POST',
    path: (id) => `${S}/${id}/cookies`,
    body: { cookies: [{ name: 'k', value: 'v', url: `${ORIGIN}/` }] },
  },
  { family: 'storage GET', method: 'GET', path: (id) => `${S}/${id}/storage?origin=${ORIGIN}` },
  {
    family: 'storage PUT',
    method: 'PUT',
    path: (id) => `${S}/${id}/storage`,
    body: { origin: ORIGIN, localStorage: { k: 'v' } },
  },
  { family: 'logs', method: 'GET', path: (id) => `${S}/${id}/logs` },
];

const call = async (user: TestUser, method: Method, url: string, body?: object, headers: object = {}) => {
  const res = await ctx.app.inject({
    method,
    url,
    headers: { ...user.headers, host: ctx.hostPort, ...headers },
    ...(body ? { payload: body } : {}),
  });
  return { status: res.statusCode, json: res.json() };
};
const refHeader = (ref: string | null) => (ref === null ? {} : { 'x-client-ref': ref });

/** The status `GET logs/stream` (SSE, it never ends by itself) answers with, over real HTTP. */
const streamStatus = async (user: TestUser, id: string, headers: object) => {
  const stop = new AbortController();
  const res = await fetch(`http://${ctx.hostPort}${S}/${id}/logs/stream`, {
    headers: { ...user.headers, ...headers },
    signal: stop.signal,
  });
  stop.abort();
  return res.status;
};

interface Session {
  id: string;
  clientRef: string | null;
}
const sessions: Record<'a' | 'b' | 'none' | 'bob', Session> = {} as never;
const viewers = [
  { name: 'header a', ref: 'a' },
  { name: 'header b', ref: 'b' },
  { name: 'no header', ref: null },
] as const;
/** What a request of `viewer` may see of alice's session: same ref with the header, everything without. */
const visible = (viewer: string | null, session: Session) => viewer === null || viewer === session.clientRef;

before(async () => {
  ctx = await createBrowserContext({ env: { BROWSER_MAX_SESSIONS: '10', BROWSER_MAX_SESSIONS_PER_USER: '5' } });
  [alice, bob] = await Promise.all([ctx.signup(), ctx.signup()]);
});
after(async () => {
  await ctx.close();
});

describe('X-Client-Ref matrix', () => {
  /** How an id that never existed is answered, per family: what an invisible session must look like. */
  const absent = new Map<string, { status: number; code: string }>();

  before(async () => {
    const create = async (user: TestUser, body: object, headers: object) => {
      const res = await call(user, 'POST', S, { keepAlive: true, ...body }, headers);
      assert.equal(res.status, 201, JSON.stringify(res.json));
      return res.json.data.session as Session;
    };
    [sessions.a, sessions.b, sessions.none, sessions.bob] = await Promise.all([
      create(alice, {}, refHeader('a')),
      create(alice, { clientRef: 'b' }, refHeader('b')),
      create(alice, {}, {}),
      create(bob, {}, refHeader('a')),
    ]);
    for (const probe of probes) {
      const res = await call(alice, probe.method, probe.path(UNKNOWN), probe.body);
      absent.set(probe.family, { status: res.status, code: res.json.error?.code });
    }
  });

  it('create takes the ref from the header, or the body; a different body ref is 400 CLIENT_REF_MISMATCH', async () => {
    assert.equal(sessions.a.clientRef, 'a', 'header only');
    assert.equal(sessions.b.clientRef, 'b', 'body and the same header');
    assert.equal(sessions.none.clientRef, null);
    const before = (await call(alice, 'GET', S)).json.data.sessions.length;
    const mismatch = await call(alice, 'POST', S, { clientRef: 'a' }, refHeader('b'));
    assert.equal(mismatch.status, 400);
    assert.equal(mismatch.json.error.code, 'CLIENT_REF_MISMATCH');
    assert.equal((await call(alice, 'GET', S)).json.data.sessions.length, before, 'nothing was created');
    for (const [family, answer] of absent)
      assert.deepEqual(answer, { status: 404, code: 'NOT_FOUND' }, `${family}: an unknown id is 404`);
  });

  for (const viewer of viewers) {
    for (const key of ['a', 'b', 'none'] as const) {
      it(`${viewer.name} × session with ${key === 'none' ? 'no ref' : `ref ${key}`}: every family`, async () => {
        const session = sessions[key];
        const expectVisible = visible(viewer.ref, session);
        for (const probe of probes) {
          const res = await call(alice, probe.method, probe.path(session.id), probe.body, refHeader(viewer.ref));
          if (expectVisible) assert.ok(res.status < 300, `${probe.family}: ${res.status} ${JSON.stringify(res.json)}`);
          else
            assert.deepEqual(
              { status: res.status, code: res.json.error?.code },
              absent.get(probe.family),
              `${probe.family}: answered as if absent`,
            );
        }
        assert.equal(await streamStatus(alice, session.id, refHeader(viewer.ref)), expectVisible ? 200 : 404, 'stream');
        // The list (newest first), unfiltered and filtered by the session's own ref.
        const listed = async (query: string) =>
          (await call(alice, 'GET', `${S}?${query}`, undefined, refHeader(viewer.ref))).json.data.sessions.map(
            (s: Session) => s.id,
          );
        assert.equal((await listed('status=LIVE')).includes(session.id), expectVisible, 'list');
        if (session.clientRef !== null)
          assert.equal((await listed(`clientRef=${session.clientRef}`)).includes(session.id), expectVisible, 'filter');
        // The WebSocket: a visible session's cdpUrl opens it; an invisible one gives none to mint.
        const got = await call(alice, 'GET', `${S}/${session.id}`, undefined, refHeader(viewer.ref));
        if (expectVisible) assert.equal(await upgradeStatus(got.json.data.session.cdpUrl), 101, 'cdpUrl opens');
        else assert.equal(got.json.data, undefined);
      });
    }
  }

  it('with a header, the list holds that ref only; without it, every session of the key', async () => {
    const ids = async (headers: object) =>
      new Set(
        (await call(alice, 'GET', `${S}?status=LIVE`, undefined, headers)).json.data.sessions.map((s: Session) => s.id),
      );
    assert.deepEqual(await ids(refHeader('a')), new Set([sessions.a.id]));
    assert.deepEqual(await ids(refHeader('b')), new Set([sessions.b.id]));
    assert.deepEqual(await ids(refHeader('c')), new Set());
    assert.deepEqual(await ids({}), new Set([sessions.a.id, sessions.b.id, sessions.none.id]));
    // A filter naming another ref than the header's finds nothing, never the other ref's sessions.
    const crossed = await call(alice, 'GET', `${S}?clientRef=b`, undefined, refHeader('a'));
    assert.deepEqual(crossed.json.data.sessions, []);
  });

  it('a cdpUrl token is bound to its session and ref: it opens no other session, of any ref or user', async () => {
    const urlOf = async (user: TestUser, s: Session) =>
      (await call(user, 'GET', `${S}/${s.id}`, undefined, refHeader(s.clientRef))).json.data.session.cdpUrl as string;
    const urls = {
      a: await urlOf(alice, sessions.a),
      b: await urlOf(alice, sessions.b),
      none: await urlOf(alice, sessions.none),
      bob: await urlOf(bob, sessions.bob),
    };
    const all = ['a', 'b', 'none', 'bob'] as const;
    for (const from of all) {
      for (const to of all) {
        const swapped = urls[from].replace(sessions[from].id, sessions[to].id);
        assert.equal(await upgradeStatus(swapped), from === to ? 101 : 404, `token of ${from} on session ${to}`);
      }
    }
    // A token whose ref (or session) was edited no longer verifies.
    const [head, query] = urls.a.split('?token=');
    const [body, signature] = query!.split('.');
    const grant = JSON.parse(Buffer.from(body!, 'base64url').toString('utf8'));
    for (const [forged, target] of [
      [{ ...grant, r: 'b' }, sessions.a],
      [{ ...grant, r: null }, sessions.a],
      [{ ...grant, s: sessions.b.id, r: 'b' }, sessions.b],
    ] as const) {
      const edited = Buffer.from(JSON.stringify(forged)).toString('base64url');
      const url = `${head!.replace(sessions.a.id, target.id)}?token=${edited}.${signature}`;
      assert.equal(await upgradeStatus(url), 401, JSON.stringify(forged));
    }
    assert.equal(await upgradeStatus(`${head}?token=`), 401);
  });

  it("another user's sessions are 404 in every family and on the WebSocket, with or without a header", async () => {
    for (const headers of [{}, refHeader('a'), refHeader('b')]) {
      for (const [user, session] of [
        [bob, sessions.a],
        [bob, sessions.none],
        [alice, sessions.bob],
      ] as const) {
        for (const probe of probes) {
          const res = await call(user, probe.method, probe.path(session.id), probe.body, headers);
          assert.deepEqual({ status: res.status, code: res.json.error?.code }, absent.get(probe.family), probe.family);
        }
        assert.equal((await call(user, 'DELETE', `${S}/${session.id}`, undefined, headers)).status, 404);
        assert.equal(await streamStatus(user, session.id, headers), 404, 'logs/stream');
      }
      const listed = (await call(bob, 'GET', S, undefined, headers)).json.data.sessions.map((s: Session) => s.id);
      assert.ok(!listed.includes(sessions.a.id) && !listed.includes(sessions.none.id));
    }
    // Bob's own cdpUrl names his session; pointed at alice's (same ref "a") it is 404.
    const bobUrl = (await call(bob, 'GET', `${S}/${sessions.bob.id}`)).json.data.session.cdpUrl as string;
    assert.equal(await upgradeStatus(bobUrl.replace(sessions.bob.id, sessions.a.id)), 404);
  });

  it('DELETE and release-all: invisible sessions are 404 and stay live; each viewer releases only its own', async () => {
    const statusOf = async (s: Session) =>
      (await call(alice, 'GET', `${S}/${s.id}`)).json.data.session.status as string;
    for (const viewer of viewers) {
      for (const key of ['a', 'b', 'none'] as const) {
        if (visible(viewer.ref, sessions[key])) continue;
        const res = await call(alice, 'DELETE', `${S}/${sessions[key].id}`, undefined, refHeader(viewer.ref));
        assert.equal(res.status, 404, `${viewer.name} deletes ${key}`);
      }
    }
    for (const key of ['a', 'b', 'none'] as const) assert.equal(await statusOf(sessions[key]), 'LIVE');
    const releasedB = await call(alice, 'POST', `${S}/release-all`, undefined, refHeader('b'));
    assert.deepEqual(releasedB.json.data, { released: 1, elsewhere: 0 });
    assert.equal(await statusOf(sessions.b), 'RELEASED');
    assert.equal(await statusOf(sessions.a), 'LIVE');
    assert.equal(await statusOf(sessions.none), 'LIVE');
    assert.equal((await call(alice, 'DELETE', `${S}/${sessions.a.id}`, undefined, refHeader('a'))).status, 200);
    assert.equal((await call(alice, 'DELETE', `${S}/${sessions.none.id}`)).status, 200);
    assert.equal((await call(alice, 'GET', `${S}/${sessions.bob.id}`)).status, 404);
    assert.equal((await call(bob, 'GET', `${S}/${sessions.bob.id}`)).json.data.session.status, 'LIVE');
  });
});
