import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import net from 'node:net';
import { test } from 'node:test';
import { ImapFlow } from 'imapflow';
import nodemailer from 'nodemailer';
import { DEMO_MAILBOX, MEMBERS } from '../demo/site.ts';
import type { GroupProcess } from './helpers/process.ts';
import { freePort, freeUdpPort, pollUntil, shellEnv, startGroup } from './helpers/process.ts';

// `npm run demo-site`'s mail side as a newcomer meets it: the lines it prints, and what it refuses. The offline
// outreach walk-through itself (docs/walkthroughs/outreach.sh, with outreach.env) runs in test/walkthroughs.test.ts.
const members = MEMBERS.flat();

/** The demo's printed line after `label`, once it is there. */
async function printed(demo: GroupProcess, label: string): Promise<string> {
  const text = await pollUntil(
    async () => demo.output(),
    (out) => out.includes(label) || out.includes('demo mail is off'),
    30_000,
  );
  const line = text.split('\n').find((l) => l.includes(label));
  assert.ok(line, `the demo prints "${label}":\n${text}`);
  return line.slice(line.indexOf(label) + label.length).trim();
}

test('npm run demo-site prints how to start Quarry and the walk-through, and its mail side takes only its own login and domains', {
  timeout: 60_000,
}, async () => {
  const [sitePort, smtpPort, imapPort] = await Promise.all([1, 2, 3].map(() => freePort()));
  const dnsPort = await freeUdpPort();
  const demo = startGroup('npm', ['run', 'demo-site'], {
    env: shellEnv({
      DEMO_SITE_PORT: String(sitePort),
      DEMO_SMTP_PORT: String(smtpPort),
      DEMO_IMAP_PORT: String(imapPort),
      DEMO_DNS_PORT: String(dnsPort),
    }),
  });
  try {
    const startLine = await printed(demo, 'start Quarry with:');
    assert.equal(startLine, `ALLOW_PRIVATE_NETWORK=true DNS_SERVERS=127.0.0.1:${dnsPort} npm start`);
    const runLine = await printed(demo, 'then:');
    // Without DEMO_MAIL_PASSWORD the password is made up at start, and printed with the ports the script needs.
    const password = /DEMO_MAIL_PASSWORD=(\S+)/.exec(runLine)?.[1];
    assert.ok(password && password.length >= 16, `a random password is printed: ${runLine}`);
    const site = `http://127.0.0.1:${sitePort}`;
    assert.equal(
      runLine,
      `DEMO_URL=${site} DEMO_SMTP_PORT=${smtpPort} DEMO_IMAP_PORT=${imapPort} DEMO_MAIL_PASSWORD=${password} ` +
        'bash docs/walkthroughs/outreach.sh',
    );

    const basic = (pass: string) => ({
      authorization: `Basic ${Buffer.from(`${DEMO_MAILBOX}:${pass}`).toString('base64')}`,
    });
    assert.equal((await fetch(`${site}/mail`)).status, 401);
    assert.equal((await fetch(`${site}/mail`, { headers: basic('nope') })).status, 401);
    assert.equal((await fetch(`${site}/mail`, { headers: basic(password) })).status, 200);

    const imap = (pass: string) =>
      new ImapFlow({
        host: '127.0.0.1',
        port: imapPort,
        secure: false,
        auth: { user: DEMO_MAILBOX, pass },
        logger: false,
        verifyOnly: true,
      });
    await assert.rejects(
      imap('nope').connect(),
      (err: { authenticationFailed?: boolean }) => !!err.authenticationFailed,
    );
    await imap(password).connect();

    const smtp = (pass: string) =>
      nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, auth: { user: DEMO_MAILBOX, pass } });
    await assert.rejects(smtp('nope').verify(), /535/);
    assert.equal(await smtp(password).verify(), true);
    // Only the directory's members get mail; anyone else is refused for good (the sequencer then stops).
    await assert.rejects(
      smtp(password).sendMail({ from: DEMO_MAILBOX, to: 'someone@elsewhere.test', subject: 'x', text: 'x' }),
      /550/,
    );

    const resolver = new Resolver({ timeout: 2000, tries: 1 });
    resolver.setServers([`127.0.0.1:${dnsPort}`]);
    for (const domain of new Set(members.map((m) => m.email.split('@')[1]!)))
      assert.deepEqual(
        (await resolver.resolveMx(domain)).map((r) => `${r.priority} ${r.exchange}`),
        ['10 mail.quarry-demo.example'],
      );
    assert.deepEqual(await resolver.resolve4('mail.quarry-demo.example'), ['127.0.0.1']);
    await assert.rejects(resolver.resolveMx('nope.holt-castings.example'), { code: 'ENOTFOUND' });
    await assert.rejects(resolver.resolveMx('example.com'), { code: 'EREFUSED' });
  } finally {
    demo.signalGroup('SIGKILL');
    await demo.exited;
  }
});

test('a mail port that is taken turns demo mail off, and what did start is closed again', {
  timeout: 60_000,
}, async () => {
  const [sitePort, smtpPort, imapPort] = await Promise.all([1, 2, 3].map(() => freePort()));
  // The DNS port taken: SMTP and IMAP start first, then the DNS server cannot.
  const taken = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => taken.bind(0, '127.0.0.1', resolve));
  const demo = startGroup('npm', ['run', 'demo-site'], {
    env: shellEnv({
      DEMO_SITE_PORT: String(sitePort),
      DEMO_SMTP_PORT: String(smtpPort),
      DEMO_IMAP_PORT: String(imapPort),
      DEMO_DNS_PORT: String(taken.address().port),
    }),
  });
  try {
    await pollUntil(
      async () => demo.output(),
      (out) => out.includes('demo mail is off'),
      30_000,
    );
    assert.equal((await fetch(`http://127.0.0.1:${sitePort}/members`)).status, 200, 'the directory keeps running');
    for (const port of [smtpPort, imapPort]) {
      const server = net.createServer();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', resolve);
      }).then(
        () => new Promise((resolve) => server.close(resolve)),
        (err: Error) => assert.fail(`port ${port} is still held by the demo: ${err.message}`),
      );
    }
  } finally {
    taken.close();
    demo.signalGroup('SIGKILL');
    await demo.exited;
  }
});
