/** The decisions of a session's life, as pure functions: when it ends, whether another may start. */

export interface LiveFacts {
  expiresAt: number;
  idleTimeoutMs: number;
  keepAlive: boolean;
  /** CDP clients connected now. */
  clients: number;
  lastActivity: number;
  /** Sleeps instead of ending idle after this long with no client and no action (null/undefined: never). */
  autoSleepMs?: number | null;
}

export type Ending = { status: 'EXPIRED'; reason: 'timeout' | 'idle' };

/**
 * Whether a live session is due to end at `now`: its hard deadline, or idle (no client, no action) for too long. A
 * session that sleeps by itself (autoSleepMs) never ends idle: it sleeps instead (`dueSleep`).
 */
export function dueEnding(session: LiveFacts, now: number): Ending | undefined {
  if (now >= session.expiresAt) return { status: 'EXPIRED', reason: 'timeout' };
  if (session.autoSleepMs) return undefined;
  if (!session.keepAlive && session.clients === 0 && now - session.lastActivity >= session.idleTimeoutMs) {
    return { status: 'EXPIRED', reason: 'idle' };
  }
  return undefined;
}

/** Whether a live session with autoSleepMs is due to sleep at `now`: no client and no action for that long. */
export function dueSleep(session: LiveFacts, now: number): boolean {
  return !!session.autoSleepMs && session.clients === 0 && now - session.lastActivity >= session.autoSleepMs;
}

export interface AdmissionFacts {
  hostLive: number;
  userLive: number;
  /** Live sessions of the clientRef (undefined without one). */
  refLive?: number;
  freeMemoryMb: number;
}

export interface AdmissionLimits {
  maxPerHost: number;
  maxPerUser: number;
  maxPerClientRef: number;
  minFreeMemoryMb: number;
}

export interface Refusal {
  message: string;
  retryAfterSeconds: number;
}

/** The admission limits of a configuration. */
export const admissionLimits = (config: {
  BROWSER_MAX_SESSIONS: number;
  BROWSER_MAX_SESSIONS_PER_USER: number;
  BROWSER_MAX_SESSIONS_PER_CLIENT_REF: number;
  BROWSER_MIN_FREE_MEMORY_MB: number;
}): AdmissionLimits => ({
  maxPerHost: config.BROWSER_MAX_SESSIONS,
  maxPerUser: config.BROWSER_MAX_SESSIONS_PER_USER,
  maxPerClientRef: config.BROWSER_MAX_SESSIONS_PER_CLIENT_REF,
  minFreeMemoryMb: config.BROWSER_MIN_FREE_MEMORY_MB,
});

/** Room for one more session, or why not and when to try again. */
export function admit(facts: AdmissionFacts, limits: AdmissionLimits): Refusal | undefined {
  if (facts.hostLive >= limits.maxPerHost) {
    return { message: `This host runs its maximum of ${limits.maxPerHost} browser sessions`, retryAfterSeconds: 30 };
  }
  if (facts.freeMemoryMb < limits.minFreeMemoryMb) {
    return { message: 'This host is short of memory for another browser session', retryAfterSeconds: 30 };
  }
  if (facts.userLive >= limits.maxPerUser) {
    return { message: `At most ${limits.maxPerUser} live browser sessions per user`, retryAfterSeconds: 60 };
  }
  if (facts.refLive !== undefined && facts.refLive >= limits.maxPerClientRef) {
    return { message: `At most ${limits.maxPerClientRef} live browser sessions per clientRef`, retryAfterSeconds: 60 };
  }
  return undefined;
}

/** Browser minutes charged for a session: started minutes, at least one. */
export const minutesOf = (startedAt: number, endedAt: number): number =>
  Math.max(1, Math.ceil((endedAt - startedAt) / 60_000));
