import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { MEMBERS } from '../demo/site.ts';
import type { GroupProcess } from './helpers/process.ts';
import { freePort, pollUntil, repoRoot, shellEnv, startGroup, waitHealthy } from './helpers/process.ts';

// The README's walk-through, run as a newcomer would paste it: its first block starts the demo site and
// the service (here on free ports, with their own DATA_DIR), the other blocks run in bash against them.
const SECTION = '## A walk through with curl';

function walkthroughBlocks(): string[] {
  const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
  const start = readme.indexOf(`\n${SECTION}\n`);
  assert.ok(start >= 0, `README.md has a "${SECTION}" section`);
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

/** Replaces `from` (which must be there) everywhere in `text`. */
function retarget(text: string, from: string, to: string): string {
  assert.ok(text.includes(from), `the walk-through uses ${from}`);
  return text.replaceAll(from, to);
}

const demoEmails = MEMBERS.flat()
  .map((m) => m.email)
  .sort();

const title = "the README walk-through runs end to end, twice, and ends showing the demo site's leads";
test(title, { timeout: 600_000 }, async () => {
  const [startBlock, ...shellBlocks] = walkthroughBlocks();
  assert.ok(startBlock && shellBlocks.length, 'a block starting the servers, then the shell session');
  const startLines = startBlock.split('\n').filter((line) => line.trim() && !line.trim().startsWith('#'));
  assert.deepEqual(
    startLines.map((line) => line.replace(/\s+#.*$/, '')),
    ['npm run demo-site', 'ALLOW_PRIVATE_NETWORK=true npm start'],
  );

  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-walkthrough-'));
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-walkthrough-cwd-'));
  const [port, demoPort] = [await freePort(), await freePort()];
  const env = shellEnv({ DATA_DIR: dataDir, PORT: String(port), DEMO_SITE_PORT: String(demoPort) });
  // Each line of the start block as written (in bash, like a terminal), each in its own process group.
  const servers = startLines.map((line) => startGroup('bash', ['-c', line], { env }));
  const [demo, service] = servers as [GroupProcess, GroupProcess];
  let session: GroupProcess | undefined;
  try {
    await waitHealthy(port, service);
    await pollUntil(
      () =>
        fetch(`http://127.0.0.1:${demoPort}/members`).then(
          (r) => r.status,
          () => 0,
        ),
      (status) => status === 200,
    );

    let script = shellBlocks.join('\n');
    script = retarget(script, 'http://127.0.0.1:3000', `http://127.0.0.1:${port}`);
    script = retarget(script, 'http://127.0.0.1:3001', `http://127.0.0.1:${demoPort}`);
    // Twice: the second run finds the account (signup 409) and must log in instead; it runs in plain sh
    // (dash on Debian), as the README promises any POSIX shell will do.
    for (const [run, shell, strict] of [
      [1, 'bash', 'set -eo pipefail'],
      [2, 'sh', 'set -e'],
    ] as const) {
      session = startGroup(shell, ['-c', `${strict}\n${script}`], { env: shellEnv({}), cwd: workDir });
      const timer = setTimeout(() => session!.signalGroup('SIGKILL'), 240_000);
      const code = await session.exited;
      clearTimeout(timer);
      const out = session.output();
      assert.equal(code, 0, `run ${run} failed:\n${out}`);

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

    // Stopped as a terminal's Ctrl-C would (the signal reaches npm and node): gracefully, lock removed.
    service.signalGroup('SIGINT');
    await service.exited;
    assert.match(service.output(), /"msg":"stopped"/);
    assert.ok(!fs.existsSync(path.join(dataDir, 'quarry.lock')));
  } finally {
    session?.signalGroup('SIGKILL');
    for (const server of [demo, service]) server.signalGroup('SIGKILL');
    await Promise.all(servers.map((s) => s.exited));
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(workDir, { recursive: true, force: true });
  }
});
