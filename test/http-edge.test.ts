import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createTestContext, type TestContext, type TestUser } from './helpers/app.ts';
import { assertValidation } from './helpers/assertions.ts';

/** `[[[…"x"…]]]` nested `depth` levels, as raw JSON text. */
const nestedArrays = (depth: number) => `${'['.repeat(depth)}"x"${']'.repeat(depth)}`;

/** Sends raw bytes on one socket and collects everything the server writes until it closes or `until` matches. */
function rawExchange(
  port: number,
  chunks: string[],
  until: (received: string) => boolean,
): Promise<{ received: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const done = (closed: boolean) => {
      socket.removeAllListeners();
      socket.on('error', () => {});
      socket.destroy();
      resolve({ received, closed });
    };
    socket.on('data', (d) => {
      received += d.toString('latin1');
      if (until(received)) done(false);
    });
    socket.on('close', () => done(true));
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? done(true) : reject(error)));
    socket.on('connect', () => {
      for (const chunk of chunks) socket.write(chunk);
    });
  });
}

describe('HTTP edges', () => {
  let ctx: TestContext;
  let alice: TestUser;
  before(async () => {
    ctx = await createTestContext({ workers: false });
    alice = await ctx.signup();
  });
  after(async () => ctx?.close());

  test('a JSON body nested beyond 64 levels is a 400 naming body on every route, before any work', async () => {
    const deep = `{"leadIds": ${nestedArrays(5000)}}`;
    const routes: Array<['POST' | 'PATCH', string, string]> = [
      ['POST', '/api/leads/validate-bulk', deep],
      ['POST', '/api/leads/bulk', deep],
      ['PATCH', '/api/leads/bulk', `{"leadIds": ${nestedArrays(5000)}, "updates": {"status": "CONTACTED"}}`],
      ['POST', '/api/projects', `{"name": "Deep", "description": ${nestedArrays(5000)}}`],
      // Exactly one level too deep, and objects as well as arrays.
      ['POST', '/api/projects', `{"name": "Deep", "x": ${'{"a":'.repeat(64)}1${'}'.repeat(64)}}`],
    ];
    for (const [method, url, payload] of routes) {
      const res = await ctx.inject({
        method,
        url,
        payload,
        headers: { ...alice.headers, 'content-type': 'application/json' },
      });
      assertValidation(res, 'body');
      assert.match(res.json().error.details[0].message, /nested more than 64 levels/, `${method} ${url}`);
    }
  });

  test('JSON nested up to 64 levels, and brackets inside strings, parse as before', async () => {
    // 64 levels in all: the body object plus 63 arrays.
    const res = await ctx.inject({
      method: 'POST',
      url: '/api/leads/bulk',
      payload: `{"leadIds": [${nestedArrays(62)}, "[[[[\\"${'['.repeat(200)}"]}`,
      headers: { ...alice.headers, 'content-type': 'application/json' },
    });
    assert.equal(res.statusCode, 200, res.body);
    const { deleted, failed, errors } = res.json().data;
    assert.equal(deleted, 0);
    assert.equal(failed, 2);
    assert.equal(errors[0].id, JSON.stringify(JSON.parse(nestedArrays(62))));
    assert.equal(errors[1].id, `[[[["${'['.repeat(200)}`);
  });

  test(
    'a multipart body without its closing boundary is a 400 naming the part it broke off in, not a ' + '500',
    async () => {
      const boundary = '----quarryTruncated';
      const cases: Array<[string, string]> = [
        // Cut inside the file: names `file`.
        [
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="brief.pdf"\r\n` +
            'Content-Type: application/pdf\r\n\r\n%PDF-1.4 half',
          'file',
        ],
        // Cut inside a field (the parser hands fields over only once complete): names `body`.
        [`--${boundary}\r\nContent-Disposition: form-data; name="url"\r\n\r\nhttp://example.org/`, 'body'],
      ];
      for (const [payload, field] of cases) {
        const res = await ctx.inject({
          method: 'POST',
          url: '/api/sources/analyze',
          payload,
          headers: { ...alice.headers, 'content-type': `multipart/form-data; boundary=${boundary}` },
        });
        assertValidation(res, field);
        assert.match(
          res.json().error.details[0].message,
          /cut short or malformed \(Unexpected end of multipart data\)/,
        );
      }
    },
  );

  describe('on a listening socket', () => {
    let port: number;
    before(async () => {
      await ctx.app.listen({ port: 0, host: '127.0.0.1' });
      port = (ctx.app.server.address() as AddressInfo).port;
    });

    test('a request line over the header limit answers 431 with Connection: close, in the error envelope', async () => {
      const longUrl = `/api/health?q=${'a'.repeat(20_000)}`;
      const { received, closed } = await rawExchange(
        port,
        [`GET ${longUrl} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n`],
        () => false,
      );
      assert.ok(closed);
      const [head, body] = received.split('\r\n\r\n');
      assert.match(head!, /^HTTP\/1\.1 431 /);
      assert.match(head!, /\r\nConnection: close(\r\n|$)/i);
      const json = JSON.parse(body!);
      assert.equal(json.success, false);
      assert.equal(json.error.code, 'HEADERS_TOO_LARGE');
      assert.equal(Number(/content-length: (\d+)/i.exec(head!)?.[1]), Buffer.byteLength(body!));
    });

    test('a keep-alive client that reads Connection: close opens a new connection and is served', async () => {
      // What an HTTP client does after the 431: the next request goes out on a fresh socket and succeeds.
      const first = await fetch(`http://127.0.0.1:${port}/api/health?q=${'a'.repeat(20_000)}`);
      assert.equal(first.status, 431);
      assert.equal(first.headers.get('connection'), 'close');
      await first.text();
      const second = await fetch(`http://127.0.0.1:${port}/api/health`);
      assert.equal(second.status, 200, await second.text());
    });
  });
});
