import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { freePort, loggedPid, shellEnv, startGroup, waitGone, waitHealthy } from './helpers/process.ts';

// What the README starts is `npm start`: npm runs the script through `sh -c`, and forwards SIGTERM and
// SIGINT to that child only. Signalling npm must stop the service itself, gracefully.
const title = 'SIGTERM to the `npm start` process stops the service gracefully (node exits, lock removed)';
test(title, { timeout: 400_000 }, async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-npm-start-'));
  const port = await freePort();
  // The npm that runs the tests (npm_execpath under `npm test`), else the one on PATH.
  const npmCli = process.env.npm_execpath;
  const npm = startGroup(npmCli ? process.execPath : 'npm', npmCli ? [npmCli, 'start'] : ['start'], {
    env: shellEnv({ DATA_DIR: dataDir, PORT: String(port) }),
  });
  try {
    await waitHealthy(port, npm);
    const nodePid = loggedPid(npm.output());
    assert.ok(nodePid && nodePid !== npm.child.pid, `the service runs in its own node process: ${npm.output()}`);
    assert.ok(fs.existsSync(path.join(dataDir, 'quarry.lock')));

    npm.child.kill('SIGTERM'); // npm alone, as a process manager or `kill <pid>` would
    assert.equal(await npm.exited, 0, npm.output());
    await waitGone(nodePid!);
    assert.ok(!fs.existsSync(path.join(dataDir, 'quarry.lock')), 'lock removed');
    assert.match(npm.output(), /"signal":"SIGTERM","msg":"shutting down"/);
    assert.match(npm.output(), /"msg":"stopped"/);
  } finally {
    npm.signalGroup('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
