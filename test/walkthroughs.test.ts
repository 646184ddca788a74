/**
 * Every walk-through is a script CI runs (docs/walkthroughs/README.md), so none can rot: each
 * `docs/walkthroughs/*.sh` runs against a fresh service and a fresh demo site on free ports, several times in a
 * row (the quickstart ten times, which is more than the signup/login limit allows logins). The quickstart's
 * servers are started with the README's own start commands, and the README shows the script as it is. A script's
 * `<name>.env` reaches the demo site, the service and the script: outreach.sh's sets up the demo mail side (SMTP,
 * IMAP, DNS) and its password; what `npm run demo-site` prints for it is checked in test/demo-outreach.test.ts.
 * Every run's demo gets free mail ports (the defaults, 2525/2143/2053, may be taken by another run or a person).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { DEMO_MAILBOX, MEMBERS } from '../demo/site.ts';
import { createTestDatabase } from './helpers/db.ts';
import type { GroupProcess } from './helpers/process.ts';
import { freePort, freeUdpPort, pollUntil, repoRoot, shellEnv, startGroup, waitHealthy } from './helpers/process.ts';

const dir = path.join(repoRoot, 'docs/walkthroughs');
const scripts = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.sh') && f !== 'lib.sh')
  .sort();
const RUNS: Record<string, number> = { 'quickstart.sh': 10 };
const DEFAULT_RUNS = 2;
const RUN_TIMEOUT_MS = 240_000;

const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');

/** The README's block that starts the demo site and the service, as a newcomer pastes it. */
function startCommands(): string[] {
  const block = /^```sh\n(npm run demo-site[^\n]*\n[^`]*?)^```$/m.exec(readme)?.[1];
  assert.ok(block, 'the README has a block starting `npm run demo-site`');
  const lines = block
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter(Boolean);
  assert.deepEqual(lines, ['npm run demo-site', 'ALLOW_PRIVATE_NETWORK=true npm start']);
  return lines;
}

/** Free ports for the demo's mail side, which `npm run demo-site` starts for every script; DNS is UDP. */
async function demoMailPorts(): Promise<Record<string, string>> {
  return {
    DEMO_SMTP_PORT: String(await freePort()),
    DEMO_IMAP_PORT: String(await freePort()),
    DEMO_DNS_PORT: String(await freeUdpPort()),
  };
}

/**
 * A script's own settings (`<name>.env`, shell syntax): every `*_PORT` in it gets a free port (those of `given`
 * when it names them), the rest is evaluated by bash with those ports set (e.g.
 * `DNS_SERVERS=127.0.0.1:${DEMO_DNS_PORT}`).
 */
async function scriptEnv(script: string, given: Record<string, string>): Promise<Record<string, string>> {
  const file = path.join(dir, script.replace(/\.sh$/, '.env'));
  if (!fs.existsSync(file)) return {};
  const ports = new Map<string, string>(Object.entries(given));
  const names: string[] = [];
  const lines: string[] = [];
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const name = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=/.exec(line)?.[1];
    if (name && !names.includes(name)) names.push(name);
    if (name?.endsWith('_PORT')) {
      if (!ports.has(name)) ports.set(name, String(await freePort()));
      lines.push(`${name}=${ports.get(name)}`); // the file's value is the default for people
    } else lines.push(line);
  }
  const dump = execFileSync(
    'bash',
    ['-c', `set -a\n${lines.join('\n')}\nnode -e 'console.log(JSON.stringify(process.env))'`],
    { env: shellEnv({}), encoding: 'utf8' },
  );
  const all = JSON.parse(dump) as Record<string, string>;
  return Object.fromEntries(names.map((name) => [name, all[name] ?? '']));
}

for (const script of scripts) {
  const runs = RUNS[script] ?? DEFAULT_RUNS;
  test(`docs/walkthroughs/${script} runs against a fresh service, ${runs} times in a row`, {
    timeout: 120_000 + runs * RUN_TIMEOUT_MS,
  }, async () => {
    const quickstart = script === 'quickstart.sh';
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-walkthrough-'));
    const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-walkthrough-cwd-'));
    const stateDir = path.join(workDir, 'state');
    const [port, demoPort] = [await freePort(), await freePort()];
    // A fresh database: an empty DATA_DIR (PGlite), or a new PostgreSQL database on the PostgreSQL pass.
    const testDb = process.env.TEST_DATABASE_URL ? await createTestDatabase() : undefined;
    await testDb?.database.close();
    const mailPorts = await demoMailPorts();
    const own = await scriptEnv(script, mailPorts);
    const env = shellEnv({
      DATA_DIR: dataDir,
      PORT: String(port),
      DEMO_SITE_PORT: String(demoPort),
      ...mailPorts,
      ...(testDb?.url ? { DATABASE_URL: testDb.url } : {}),
      ...own,
    });
    const commands = quickstart ? startCommands() : ['npm run demo-site', 'ALLOW_PRIVATE_NETWORK=true npm start'];
    // Each start command as written (in bash, like a terminal), each in its own process group.
    const servers = commands.map((line) => startGroup('bash', ['-c', line], { env }));
    const [demo, service] = servers as [GroupProcess, GroupProcess];
    let session: GroupProcess | undefined;
    const outputs: string[] = [];
    try {
      await waitHealthy(port, service);
      const demoUp = () =>
        fetch(`http://127.0.0.1:${demoPort}/`).then(
          (r) => r.status,
          () => 0,
        );
      await pollUntil(demoUp, (status) => status === 200);
      // Its mail side started on the free ports given, not on ports another run holds.
      const demoSays = await pollUntil(
        async () => demo.output(),
        (out) => /demo mail: mailbox|demo mail is off/.test(out),
      );
      assert.match(demoSays, /demo mail: mailbox/, demoSays);

      for (let run = 1; run <= runs; run++) {
        // Run 2 starts without the kept key: the account exists, so it must log in.
        if (run === 2) fs.rmSync(stateDir, { recursive: true, force: true });
        session = startGroup('bash', [path.join(dir, script)], {
          env: shellEnv({
            QUARRY_URL: `http://127.0.0.1:${port}`,
            DEMO_URL: `http://127.0.0.1:${demoPort}`,
            QUARRY_STATE_DIR: stateDir,
            ...own,
          }),
          cwd: workDir,
        });
        const timer = setTimeout(() => session!.signalGroup('SIGKILL'), RUN_TIMEOUT_MS);
        const code = await session.exited;
        clearTimeout(timer);
        const out = session.output();
        outputs.push(out);
        assert.equal(code, 0, `${script}, run ${run} of ${runs}, failed:\n${out}`);
        if (run === 2) assert.match(out, /exists: logging in/, 'run 2 logs in to the existing account');
        if (run > 2) assert.match(out, /using the key kept in/, `run ${run} reuses the kept key`);
        if (quickstart) checkQuickstart(out, workDir, run);
        if (script === 'outreach.sh') checkOutreachRun(out, run);
      }
      if (script === 'outreach.sh')
        await checkOutreachMail(`http://127.0.0.1:${demoPort}`, own.DEMO_MAIL_PASSWORD!, outputs);

      if (quickstart) {
        // Stopped as a terminal's Ctrl-C would (the signal reaches npm and node): gracefully, lock removed.
        service.signalGroup('SIGINT');
        await service.exited;
        assert.match(service.output(), /"msg":"stopped"/);
        assert.ok(!fs.existsSync(path.join(dataDir, 'quarry.lock')));
      }
    } finally {
      session?.signalGroup('SIGKILL');
      for (const server of [demo, service]) server.signalGroup('SIGKILL');
      await Promise.all(servers.map((s) => s.exited));
      await testDb?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
      fs.rmSync(workDir, { recursive: true, force: true });
    }
  });
}

const demoEmails = MEMBERS.flat()
  .map((m) => m.email)
  .sort();

function checkQuickstart(out: string, workDir: string, run: number): void {
  assert.match(out, /"status":"COMPLETED"/, `run ${run}: the job's events end with COMPLETED`);
  assert.match(out, /export 200: quarry-export\.zip/);
  assert.equal(fs.readFileSync(path.join(workDir, 'quarry-export.zip')).subarray(0, 2).toString(), 'PK');
  const last = JSON.parse(out.trim().split('\n').at(-1)!);
  assert.equal(last.success, true);
  const leads = last.data.leads as { email: string; company: string; jobTitle: string; phone: string }[];
  assert.deepEqual(leads.map((l) => l.email).sort(), demoEmails, `run ${run} ends showing the demo site's leads`);
  const maren = leads.find((l) => l.email === 'maren.holt@holt-castings.example');
  assert.deepEqual(
    { company: maren?.company, jobTitle: maren?.jobTitle, phone: maren?.phone },
    { company: 'Holt Precision Castings', jobTitle: 'Managing Director', phone: '+441614960001' },
  );
}

const members = MEMBERS.flat();

function checkOutreachRun(out: string, run: number): void {
  const n = members.length;
  const says = (line: string) => assert.ok(out.includes(line), `run ${run} says "${line}":\n${out}`);
  says(`crawled ${n} leads with an email`);
  says(`validated ${n} leads`);
  says('mailbox DNS: mx pass, spf pass, dkim pass, dmarc pass');
  says(`step 1 delivered to ${n} members`);
  says(`enrollments: {"ACTIVE":${n - 1},"REPLIED":1}`); // one reply stops one sequence
  says('inbox: 2 mails in 1 thread(s)');
  const totals = JSON.parse(/^analytics: (.*)$/m.exec(out)?.[1] ?? '{}') as Record<string, number>;
  assert.deepEqual(
    { sent: totals.sent, unconfirmed: totals.unconfirmed, opened: totals.opened, replied: totals.replied },
    { sent: n, unconfirmed: 0, opened: 0, replied: 1 },
    `run ${run}:\n${out}`,
  );
}

/** What the demo's members hold after the runs, read from its /mail as the mailbox. */
async function checkOutreachMail(site: string, password: string, outputs: string[]): Promise<void> {
  const auth = `Basic ${Buffer.from(`${DEMO_MAILBOX}:${password}`).toString('base64')}`;
  const res = await fetch(`${site}/mail`, { headers: { authorization: auth, accept: 'application/json' } });
  const mail = (await res.json()) as { messages: Array<{ to: string; replies: string[] }> };
  assert.deepEqual(
    mail.messages.map((m) => m.to).sort(),
    members.flatMap((m) => Array(outputs.length).fill(m.email)).sort(),
    'each member got step 1 once per run, and step 2 is not due yet',
  );
  const repliers = mail.messages.filter((m) => m.replies.length).map((m) => m.to);
  const said = outputs.map((out) => /^(\S+) replied$/m.exec(out)?.[1]);
  assert.deepEqual(repliers.sort(), said.sort(), 'one reply per run, from the member each run says replied');
}

test('the README shows the quickstart walk-through as it is in docs/walkthroughs/quickstart.sh', () => {
  const script = fs.readFileSync(path.join(dir, 'quickstart.sh'), 'utf8');
  assert.ok(readme.includes(`\`\`\`bash\n${script}\`\`\``), 'the README has a ```bash block equal to the script');
  startCommands();
});
