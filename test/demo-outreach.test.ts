import assert from 'node:assert/strict';
import { Resolver } from 'node:dns/promises';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ImapFlow } from 'imapflow';
import nodemailer from 'nodemailer';
import { DEMO_MAILBOX, MEMBERS } from '../demo/site.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import type { GroupProcess } from './helpers/process.ts';
import { freePort, pollUntil, shellEnv, startGroup, waitHealthy } from './helpers/process.ts';

// The offline outreach walk-through (docs/walkthroughs/outreach.sh) as a newcomer runs it: `npm run demo-site`,
// then the service started with the line the demo prints, then the script with the env the demo prints, twice.
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

test('the offline outreach walk-through runs twice: leads validate, step 1 arrives, a reply stops the sequence', {
  timeout: 600_000,
}, async (t) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-demo-outreach-'));
  const [port, sitePort, smtpPort, imapPort, dnsPort] = await Promise.all([1, 2, 3, 4, 5].map(() => freePort()));
  const demo = startGroup('npm', ['run', 'demo-site'], {
    env: shellEnv({
      DEMO_SITE_PORT: String(sitePort),
      DEMO_SMTP_PORT: String(smtpPort),
      DEMO_IMAP_PORT: String(imapPort),
      DEMO_DNS_PORT: String(dnsPort),
    }),
  });
  let service: GroupProcess | undefined;
  let database: TestDatabase | undefined;
  try {
    const startLine = await printed(demo, 'start Quarry with:');
    assert.equal(startLine, `ALLOW_PRIVATE_NETWORK=true DNS_SERVERS=127.0.0.1:${dnsPort} npm start`);
    const runLine = await printed(demo, 'then:');
    const password = /DEMO_MAIL_PASSWORD=(\S+)/.exec(runLine)?.[1];
    assert.ok(password && password.length >= 16, `a random password is printed: ${runLine}`);
    const site = `http://127.0.0.1:${sitePort}`;

    await t.test('the demo mail side takes only its own login and answers only for its own domains', async () => {
      assert.equal((await fetch(`${site}/mail`)).status, 401);
      const wrong = { authorization: `Basic ${Buffer.from(`${DEMO_MAILBOX}:nope`).toString('base64')}` };
      assert.equal((await fetch(`${site}/mail`, { headers: wrong })).status, 401);
      const imap = new ImapFlow({
        host: '127.0.0.1',
        port: imapPort,
        secure: false,
        auth: { user: DEMO_MAILBOX, pass: 'nope' },
        logger: false,
        verifyOnly: true,
      });
      await assert.rejects(imap.connect(), (err: { authenticationFailed?: boolean }) => !!err.authenticationFailed);
      const smtp = (pass: string) =>
        nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, auth: { user: DEMO_MAILBOX, pass } });
      await assert.rejects(smtp('nope').verify(), /535/);
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
    });

    const env: Record<string, string> = { PORT: String(port), DATA_DIR: path.join(tmp, 'data') };
    if (process.env.TEST_DATABASE_URL) {
      database = await createTestDatabase();
      await database.database.close();
      env.DATABASE_URL = database.url!;
    }
    service = startGroup('bash', ['-c', startLine], { env: shellEnv(env) });
    await waitHealthy(port, service);

    const keyFile = path.join(tmp, 'key');
    const runs: string[] = [];
    for (const run of [1, 2]) {
      const script = startGroup('bash', ['-c', runLine], {
        env: shellEnv({ QUARRY_URL: `http://127.0.0.1:${port}`, QUARRY_KEY_FILE: keyFile, HOME: tmp }),
      });
      const timer = setTimeout(() => script.signalGroup('SIGKILL'), 400_000);
      const code = await script.exited;
      clearTimeout(timer);
      const out = script.output();
      runs.push(out);
      assert.equal(code, 0, `run ${run} failed:\n${out}\n--- service:\n${service.output().slice(-3000)}`);
      assert.match(out, /crawled 10 leads with an email/);
      assert.match(out, /validated 10 leads/);
      assert.match(out, /step 1 delivered to 10 members/);
      assert.match(out, /enrollments: \{"ACTIVE":9,"REPLIED":1\}/);
      assert.match(out, /analytics: \{"sent":10,"opened":0,"replied":1,/);
      assert.match(out, /inbox: 2 mails in 1 thread\(s\)/);
    }

    // What the service and the demo hold afterwards, read back from each.
    const key = fs.readFileSync(keyFile, 'utf8').trim();
    const api = (url: string) =>
      fetch(`http://127.0.0.1:${port}${url}`, { headers: { authorization: `Bearer ${key}` } }).then(
        (r) => r.json() as Promise<{ data: Record<string, never> }>,
      );
    const campaigns = (await api('/api/outreach/campaigns')).data.campaigns as Array<{ leads: object }>;
    assert.deepEqual(
      campaigns.map((c) => c.leads),
      [
        { ACTIVE: 9, REPLIED: 1 },
        { ACTIVE: 9, REPLIED: 1 },
      ],
    );
    const auth = { authorization: `Basic ${Buffer.from(`${DEMO_MAILBOX}:${password}`).toString('base64')}` };
    const mail = (await (await fetch(`${site}/mail`, { headers: { ...auth, accept: 'application/json' } })).json()) as {
      messages: Array<{ to: string; replies: string[] }>;
    };
    assert.deepEqual(
      mail.messages.map((m) => m.to).sort(),
      members.flatMap((m) => [m.email, m.email]).sort(),
      'each member got step 1 once per run, and step 2 is not due yet',
    );
    const replied = mail.messages.filter((m) => m.replies.length);
    assert.equal(replied.length, 2);
    for (const [i, out] of runs.entries()) assert.match(out, new RegExp(`${replied[1 - i]!.to} replied`));
  } finally {
    for (const p of [service, demo]) p?.signalGroup('SIGKILL');
    await Promise.all([service?.exited, demo.exited]);
    await database?.drop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
