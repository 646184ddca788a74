/**
 * What a CDP client may not do (browser/cdp/policy.ts) and what it cannot break (browser/cdp/mux.ts): host files
 * through browser-started navigations or file inputs, the protocol handed to pages, downloads outside the session's
 * directory; and a message that is JSON but no command (`null`, an array, a number) closes that client only.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import { CdpMux } from '../../src/modules/browser/cdp/mux.ts';
import { police } from '../../src/modules/browser/cdp/policy.ts';

const policy = { downloadDir: '/tmp/session-x/Downloads', guarded: true };

describe('CDP command policy', () => {
  test('browser-started loads open http(s), about: and data: only', () => {
    for (const method of ['Page.navigate', 'Target.createTarget', 'Network.loadNetworkResource']) {
      for (const url of ['https://example.com/', 'http://127.0.0.1:9/', 'about:blank', 'data:text/html,hi'])
        assert.equal(police({ method, params: { url } }, policy), undefined, `${method} ${url}`);
      for (const url of [
        'file:///etc/hostname',
        'FILE:///etc/passwd',
        'view-source:file:///etc/hostname',
        'chrome://settings',
        'devtools://devtools/bundled/inspector.html',
        'filesystem:http://x/temporary/a',
        'javascript:alert(1)',
        'not a url',
      ])
        assert.match(police({ method, params: { url } }, policy) ?? '', /http\(s\)/, `${method} ${url}`);
    }
  });

  test("file inputs take the session's own files only; pages never get the protocol", () => {
    const set = (files: unknown[]) => police({ method: 'DOM.setFileInputFiles', params: { files } }, policy);
    assert.equal(set(['/tmp/session-x/Downloads/report.pdf', 'a.txt']), undefined);
    for (const file of ['/etc/passwd', '../../secret.key', '/tmp/session-x/Downloads/../../other/x', 7])
      assert.match(set([file]) ?? '', /own directory/, String(file));
    assert.match(police({ method: 'Target.exposeDevToolsProtocol', params: {} }, policy) ?? '', /protocol/);
  });

  test("downloads land in the session's directory, an empty path included", () => {
    for (const params of [
      { behavior: 'allow', downloadPath: '/etc' },
      { behavior: 'allow', downloadPath: '' },
      { behavior: 'allowAndName' },
    ]) {
      const command = { method: 'Browser.setDownloadBehavior', params: { ...params } as Record<string, unknown> };
      assert.equal(police(command, policy), undefined);
      assert.equal(command.params.downloadPath, policy.downloadDir, JSON.stringify(params));
    }
    const deny = { method: 'Browser.setDownloadBehavior', params: { behavior: 'deny' } as Record<string, unknown> };
    police(deny, policy);
    assert.equal(deny.params.downloadPath, undefined);
  });
});

describe('CDP multiplexer', () => {
  test('JSON that is no command closes that client, and the multiplexer goes on', async () => {
    const toBrowser = new PassThrough();
    const fromBrowser = new PassThrough();
    const sent: string[] = [];
    // A browser that answers every command with an empty result (attachToBrowserTarget: a session id).
    toBrowser.on('data', (data: Buffer) => {
      for (const raw of data.toString().split('\0').filter(Boolean)) {
        const { id, method } = JSON.parse(raw);
        const result = method === 'Target.attachToBrowserTarget' ? { sessionId: `browser-${id}` } : {};
        fromBrowser.write(`${JSON.stringify({ id, result })}\0`);
      }
    });
    const mux = new CdpMux(toBrowser, fromBrowser, policy);
    const sink = (closed: string[]) => ({
      send: (text: string) => sent.push(text),
      close: (_code: number, reason: string) => closed.push(reason),
      bufferedAmount: 0,
    });
    for (const junk of ['null', '[1, 2]', '5', '"text"', '{"id": "1", "method": "x"}']) {
      const closed: string[] = [];
      const client = await mux.attach(sink(closed));
      client.receive(junk);
      assert.deepEqual(closed, ['not a CDP command'], junk);
    }
    // A well-formed client still gets its answer.
    const closed: string[] = [];
    const client = await mux.attach(sink(closed));
    client.receive(JSON.stringify({ id: 41, method: 'Browser.getVersion' }));
    await new Promise((r) => setTimeout(r, 20));
    assert.ok(
      sent.some((text) => JSON.parse(text).id === 41),
      sent.join('\n'),
    );
    assert.deepEqual(closed, []);
    fromBrowser.write('null\0[]\0'); // and junk from the browser side is ignored
    await new Promise((r) => setTimeout(r, 20));
    mux.close('done');
  });
});

test("the request log never shows a cdpUrl's token", async () => {
  const { scrubUrl } = await import('../../src/shared/logger.ts');
  assert.equal(scrubUrl('/api/browser/sessions/x/cdp?token=abc.def'), '/api/browser/sessions/x/cdp?token=[redacted]');
  assert.equal(scrubUrl('/a?x=1&Token=t&y=2'), '/a?x=1&Token=[redacted]&y=2');
  assert.equal(scrubUrl('/api/leads?limit=5'), '/api/leads?limit=5');
});

describe("a client's Browser.close", () => {
  /** A browser over a pipe that answers Browser.close as told (`accept`), or not at all, and everything else at once. */
  function browser(closeAnswer: 'accept' | 'refuse' | 'none' | 'refuse-first') {
    const toBrowser = new PassThrough();
    const fromBrowser = new PassThrough();
    let closes = 0;
    toBrowser.on('data', (data: Buffer) => {
      for (const raw of data.toString().split('\0').filter(Boolean)) {
        const { id, method } = JSON.parse(raw);
        const nth = method === 'Browser.close' ? ++closes : 0;
        if (nth && (closeAnswer === 'none' || (closeAnswer === 'refuse-first' && nth > 1))) continue;
        const answer =
          nth && (closeAnswer === 'refuse' || closeAnswer === 'refuse-first')
            ? { id, error: { code: -32000, message: 'refused' } }
            : { id, result: method === 'Target.attachToBrowserTarget' ? { sessionId: `browser-${id}` } : {} };
        fromBrowser.write(`${JSON.stringify(answer)}\0`);
      }
    });
    return new CdpMux(toBrowser, fromBrowser, policy);
  }
  const sink = { send: () => {}, close: () => {}, bufferedAmount: 0 };
  const settle = () => new Promise((r) => setImmediate(r));

  test('accepted, or sent and not answered yet: the browser exits because a client asked', async () => {
    for (const answer of ['accept', 'none'] as const) {
      const mux = browser(answer);
      const client = await mux.attach(sink);
      assert.equal(mux.closedByClient, false);
      client.receive(JSON.stringify({ id: 1, method: 'Browser.close' }));
      await settle();
      assert.equal(mux.closedByClient, true, answer);
      client.close(); // a client gone after asking still asked
      assert.equal(mux.closedByClient, true, `${answer}, client gone`);
    }
  });

  test('refused by the browser: a later exit is not a close a client asked for, nor does it undo another', async () => {
    const refusing = browser('refuse');
    const client = await refusing.attach(sink);
    client.receive(JSON.stringify({ id: 1, method: 'Browser.close' }));
    await settle();
    assert.equal(refusing.closedByClient, false);

    const twice = browser('refuse-first');
    const [a, b] = [await twice.attach(sink), await twice.attach(sink)];
    a.receive(JSON.stringify({ id: 1, method: 'Browser.close' }));
    b.receive(JSON.stringify({ id: 1, method: 'Browser.close' }));
    await settle();
    assert.equal(twice.closedByClient, true, "one client's refused close leaves another's standing");
  });
});

describe('the browser session attached ahead', () => {
  test("goes to the first user's client, not to the service's own clients", async () => {
    const toBrowser = new PassThrough();
    const fromBrowser = new PassThrough();
    const attaches: number[] = [];
    toBrowser.on('data', (data: Buffer) => {
      for (const raw of data.toString().split('\0').filter(Boolean)) {
        const { id, method } = JSON.parse(raw);
        if (method === 'Target.attachToBrowserTarget') attaches.push(id);
        fromBrowser.write(`${JSON.stringify({ id, result: { sessionId: `browser-${id}` } })}\0`);
      }
    });
    const mux = new CdpMux(toBrowser, fromBrowser, policy);
    const sink = { send: () => {}, close: () => {}, bufferedAmount: 0 };
    mux.prepareAttach();
    assert.equal(attaches.length, 1, 'attached ahead');
    await mux.attach(sink, { spare: false });
    assert.equal(attaches.length, 2, "the service's client attaches a session of its own");
    await mux.attach(sink);
    assert.equal(attaches.length, 2, "the user's client takes the one attached ahead");
    await mux.attach(sink);
    assert.equal(attaches.length, 3, 'later clients attach their own');
  });
});
