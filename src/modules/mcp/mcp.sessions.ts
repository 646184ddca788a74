/**
 * Which MCP sessions exist, as every API process sees them: the rows are the truth; each process keeps the ones it
 * served lately for a few seconds, so a tool call costs no session round trip (an MCP call otherwise makes three
 * statements where its REST route makes one). Ending a session is broadcast (PostgreSQL NOTIFY), so no process
 * serves it after its DELETE; a lost listener connection empties the cache. `lastSeenAt` is written at most once a
 * minute per session and process, without waiting for it.
 */
import type { Db } from '../../db/client.ts';
import type { Clock } from '../../shared/clock.ts';
import { isUuid } from '../../shared/ids.ts';
import type { Notifier } from '../../shared/notify.ts';
import { mcpSessionsRepository } from './mcp.sessions.repository.ts';

export const MCP_SESSION_CLOSED_CHANNEL = 'quarry_mcp_session_closed';
/** A session unused this long is forgotten; the client then gets 404 and initializes again, as the protocol says. */
export const MCP_SESSION_IDLE_MS = 24 * 60 * 60 * 1000;
/** How long a process trusts what it read of a session. */
const TRUST_MS = 10_000;
const TOUCH_MS = 60_000;
const MAX_CACHED = 10_000;
/** Live sessions per key: a client that initializes in a loop pushes out its own oldest sessions, nothing more. */
export const MAX_SESSIONS_PER_KEY = 50;

interface Known {
  keyId: string;
  checkedAt: number;
  touchedAt: number;
}

export function createMcpSessions(deps: { db: Db; clock: Clock; notifier: Notifier }) {
  const repo = mcpSessionsRepository(deps.db);
  const known = new Map<string, Known>();
  let listening: Promise<unknown> | undefined;
  const listen = () =>
    (listening ??= Promise.all([
      deps.notifier.subscribe(MCP_SESSION_CLOSED_CHANNEL, (id) => known.delete(id)),
      Promise.resolve(deps.notifier.onReconnect(() => known.clear())),
    ]));

  return {
    repo,
    /** The session if it exists for this key and is not idle past its limit, else undefined (answer 404). */
    async find(id: string, keyId: string): Promise<string | undefined> {
      if (!isUuid(id)) return undefined;
      const key = id.toLowerCase();
      const now = deps.clock.now().getTime();
      await listen();
      let entry = known.get(key);
      if (!entry || now - entry.checkedAt > TRUST_MS) {
        const row = await repo.find(key);
        if (!row || row.lastSeenAt.getTime() < now - MCP_SESSION_IDLE_MS) {
          known.delete(key);
          return undefined;
        }
        entry = { keyId: row.keyId, checkedAt: now, touchedAt: row.lastSeenAt.getTime() };
        if (known.size >= MAX_CACHED) known.delete(known.keys().next().value!);
        known.set(key, entry);
      }
      if (entry.keyId !== keyId) return undefined;
      if (now - entry.touchedAt > TOUCH_MS) {
        entry.touchedAt = now;
        repo.touch(key, new Date(now)).catch(() => {});
      }
      return key;
    },
    async create(values: { id: string; userId: string; keyId: string; clientName: string | null }) {
      const now = deps.clock.now();
      await repo.deleteIdle(values.keyId, new Date(now.getTime() - MCP_SESSION_IDLE_MS));
      await repo.insert(values);
      for (const id of await repo.trim(values.keyId, MAX_SESSIONS_PER_KEY)) {
        known.delete(id);
        await deps.notifier.publish(MCP_SESSION_CLOSED_CHANNEL, id);
      }
    },
    async close(id: string) {
      known.delete(id);
      await repo.delete(id);
      await deps.notifier.publish(MCP_SESSION_CLOSED_CHANNEL, id);
    },
  };
}
