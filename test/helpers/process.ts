import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { watchOutputForConcurrentQueries } from './pg-warnings.ts';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface ServiceProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** Starts `src/server.ts` (or another entry) as its own process, as `npm start` would. */
export function startService(env: Record<string, string>, entry = 'src/server.ts'): ServiceProcess {
  const child = spawn(process.execPath, [path.join(repoRoot, entry)], {
    cwd: repoRoot,
    // --trace-deprecation: a deprecation warning names its caller in the output.
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', NODE_OPTIONS: '--trace-deprecation', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  watchOutputForConcurrentQueries(() => out);
  return { child, output: () => out, exited };
}

/** Resolves once GET /api/health answers 200, or rejects when the process exits or time runs out. */
export async function waitHealthy(port: number, service: ServiceProcess, timeoutMs = 150_000): Promise<number> {
  const started = Date.now();
  let exited = false;
  void service.exited.then(() => (exited = true));
  while (Date.now() - started < timeoutMs) {
    if (exited) throw new Error(`service exited: ${service.output()}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/api/health`);
      if (res.status === 200) return Date.now() - started;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`not healthy within ${timeoutMs} ms: ${service.output()}`);
}

export const freePort = async (): Promise<number> => {
  const net = await import('node:net');
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
};

/** A UDP port free on 127.0.0.1 now (freePort checks TCP; a DNS server listens on UDP). */
export const freeUdpPort = async (): Promise<number> => {
  const dgram = await import('node:dgram');
  const s = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => s.bind(0, '127.0.0.1', resolve));
  const { port } = s.address();
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
};

/** Polls `read` until `done` holds for its value, or rejects after `timeoutMs`. */
export async function pollUntil<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 60_000) {
  const started = Date.now();
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`still ${JSON.stringify(value)} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Resolves once the process `pid` is gone (it may not be our child), or rejects after `timeoutMs`. */
export async function waitGone(pid: number, timeoutMs = 40_000): Promise<void> {
  const alive = async () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  await pollUntil(alive, (isAlive) => !isAlive, timeoutMs);
}

/** The pid a service process writes in its JSON log lines (also when started through npm and sh). */
export function loggedPid(output: string): number | undefined {
  const match = /"pid":(\d+)/.exec(output);
  return match ? Number(match[1]) : undefined;
}

export interface GroupProcess extends ServiceProcess {
  /** Signals the whole process group (the command and whatever it started); no-op once it is gone. */
  signalGroup(signal: NodeJS.Signals): void;
}

/** Spawns a command as the leader of its own process group, so that it can be cleaned up with its children. */
export function startGroup(command: string, args: string[], options: { env: Record<string, string>; cwd?: string }) {
  const child = spawn(command, args, {
    cwd: options.cwd ?? repoRoot,
    env: options.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      /* the group is gone */
    }
  };
  return { child, output: () => out, exited, signalGroup } satisfies GroupProcess;
}

/** The environment a user's shell gives `npm start`: node_modules/.bin first on PATH (npm adds it too). */
export function shellEnv(extra: Record<string, string>): Record<string, string> {
  return {
    PATH: `${path.join(repoRoot, 'node_modules/.bin')}${path.delimiter}${process.env.PATH ?? ''}`,
    HOME: process.env.HOME ?? '/tmp',
    npm_config_update_notifier: 'false',
    LOG_LEVEL: 'info',
    ...extra,
  };
}
