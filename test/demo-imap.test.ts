import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { createDemoImapServer, DemoInbox } from '../demo/imap.ts';

// The demo IMAP server (demo/imap.ts) spoken to over a raw socket: what it refuses, which a client library never
// sends. Its everyday use by Quarry's inbox reader is in test/demo-outreach.test.ts and test/walkthroughs.test.ts.
const USER = 'you@quarry-demo.example';
const PASSWORD = 'the demo password';
const inbox = new DemoInbox();
const server = createDemoImapServer({ accounts: new Map([[USER, { password: PASSWORD, inbox }]]) });
let port: number;

before(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as net.AddressInfo).port;
});
const sockets: net.Socket[] = [];
after(() => {
  for (const socket of sockets) socket.destroy(); // so a failed test leaves no connection holding the server
  return new Promise((resolve) => server.close(resolve));
});

/** A raw connection: `say` sends a line; `until` waits for the answer to match (or the socket to close). */
async function connect() {
  const socket = net.connect(port, '127.0.0.1');
  sockets.push(socket);
  let heard = '';
  let closed = false;
  socket.on('data', (chunk) => {
    heard += chunk.toString('utf8');
  });
  socket.on('close', () => {
    closed = true;
  });
  socket.on('error', () => {});
  const gone = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const until = async (pattern: RegExp) => {
    const deadline = Date.now() + 5000;
    while (!pattern.test(heard) && !closed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.match(heard, pattern);
  };
  await until(/^\* OK .*\r\n/);
  return {
    socket,
    say: (line: string) => socket.write(`${line}\r\n`),
    until,
    heard: () => heard,
    /** Settles when the server has closed the connection. */
    gone,
    closed: () => closed,
  };
}

test('a wrong password is refused, the right one logs in; a second LOGIN is BAD and adds no watcher', async () => {
  const c = await connect();
  c.say(`a1 LOGIN "${USER}" "the demo passwore"`);
  await c.until(/a1 NO \[AUTHENTICATIONFAILED\]/);
  c.say(`a2 LOGIN "${USER}" "the demo"`); // a prefix of the password, another length
  await c.until(/a2 NO \[AUTHENTICATIONFAILED\]/);
  c.say(`a3 LOGIN "${USER}" "${PASSWORD}"`);
  await c.until(/a3 OK /);
  const watchers = (inbox as unknown as { listeners: Set<unknown> }).listeners;
  assert.equal(watchers.size, 1);
  c.say(`a4 LOGIN "${USER}" "${PASSWORD}"`);
  await c.until(/a4 BAD already authenticated\r\n/);
  assert.equal(watchers.size, 1, 'the second LOGIN leaves no second watcher behind');
  c.say('a5 SELECT INBOX');
  await c.until(/a5 OK /);
  c.socket.destroy();
  await once(c.socket, 'close');
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(watchers.size, 0, 'closing the connection stops its watcher');
});

test('before LOGIN a large literal is refused before it is asked for, and the connection closed', async () => {
  const c = await connect();
  c.say(`b1 LOGIN {${USER.length}}`);
  await c.until(/\+ go ahead\r\n/);
  c.say(`${USER} {100000}`);
  await c.until(/\* BYE command too long\r\n/);
  assert.equal(c.heard().split('+ go ahead').length - 1, 1, 'the large literal was not asked for');
  await c.gone;
});

test('before LOGIN a long line without an end is cut off; after LOGIN the same literal is taken', async () => {
  const long = await connect();
  long.socket.write(`c1 NOOP ${'x'.repeat(10_000)}`);
  await long.until(/\* BYE command too long\r\n/);
  await long.gone;

  const c = await connect();
  c.say(`d1 LOGIN "${USER}" "${PASSWORD}"`);
  await c.until(/d1 OK /);
  c.say('d2 LIST "" {5000}');
  await c.until(/\+ go ahead\r\n/);
  c.say('*'.repeat(5000));
  await c.until(/d2 OK/);
  assert.ok(!c.closed());
  c.socket.destroy();
});
