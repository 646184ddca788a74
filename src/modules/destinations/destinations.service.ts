import type { Db, Tx } from '../../db/client.ts';
import type { AppDeps } from '../../deps.ts';
import { QUEUES } from '../../queue/queues.ts';
import { AppError, notFound } from '../../shared/errors.ts';
import { emitEvent } from '../../shared/events.ts';
import { findOwned, newId } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { leadsForSending } from '../leads/index.ts';
import { newSigningSecret } from '../webhooks/index.ts';
import { checkDestination, destinationSecrets } from './destinations.open.ts';
import { type DestinationRow, destinationRepository, type PushRow } from './destinations.repository.ts';
import {
  type CreateDestinationInput,
  type DestinationView,
  type PushInput,
  type PushView,
  SECRET_FIELDS,
} from './destinations.schemas.ts';
import { TargetError } from './destinations.target.ts';

export interface DestinationPushMessage {
  pushId: string;
}

/** Which secret fields a row holds is kept in its config (`secretFields`), so reading it never opens them. */
function viewOf(row: DestinationRow): DestinationView {
  const { secretFields = [], ...config } = row.config as { secretFields?: string[] };
  return {
    id: row.id,
    name: row.name,
    type: row.type,
    config,
    secretSet: Object.fromEntries(SECRET_FIELDS[row.type].map((f) => [f, secretFields.includes(f)])),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export const toPushView = (r: PushRow): PushView => ({
  id: r.id,
  destinationId: r.destinationId,
  mode: r.mode,
  status: r.status,
  progress: { total: r.total, pushed: r.pushed, failed: r.failed, parts: r.parts },
  error: r.error,
  attempts: r.attempts,
  startedAt: r.startedAt?.toISOString() ?? null,
  finishedAt: r.finishedAt?.toISOString() ?? null,
  createdAt: r.createdAt.toISOString(),
});

/** `destination.push.completed` / `.failed`, in the transaction that finishes the push. */
export function emitPushFinished(tx: Db | Tx, row: PushRow): Promise<void> {
  const type = row.status === 'COMPLETED' ? 'destination.push.completed' : 'destination.push.failed';
  return emitEvent(tx, row.userId, type, {
    destinationId: row.destinationId,
    pushId: row.id,
    mode: row.mode,
    pushed: row.pushed,
    failed: row.failed,
    error: row.error,
    finishedAt: (row.finishedAt ?? row.updatedAt).toISOString(),
  });
}

export type DestinationService = ReturnType<typeof createDestinationService>;

export function createDestinationService(deps: Pick<AppDeps, 'db' | 'clock' | 'boss' | 'config'>) {
  const repo = destinationRepository(deps.db);
  const secrets = destinationSecrets(deps.config);
  const enqueue = (pushId: string) =>
    deps.boss.send(QUEUES.destinationPush, { pushId } satisfies DestinationPushMessage);
  const owned = (userId: string, id: string) => findOwned(id, 'Destination', (key) => repo.find(userId, key));
  const ownedPush = async (userId: string, id: string, pushId: string) => {
    const destination = await owned(userId, id);
    return findOwned(pushId, 'Push', (key) => repo.findPush(destination.id, key));
  };

  return {
    enqueue,

    /** Stores the destination (secrets sealed) once its connection works, unless `skipTest`. */
    async create(
      userId: string,
      input: CreateDestinationInput,
    ): Promise<{ destination: DestinationView; signingSecret?: string }> {
      const given: Record<string, unknown> = { ...input.config };
      const made = input.type === 'webhook' && !given.secret ? newSigningSecret() : undefined;
      if (made) given.secret = made;
      const sealed: Record<string, string> = {};
      const config: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(given)) {
        if ((SECRET_FIELDS[input.type] as readonly string[]).includes(key)) sealed[key] = String(value);
        else if (value !== undefined) config[key] = value;
      }
      const id = newId();
      if (!input.skipTest) {
        try {
          await checkDestination({ id, type: input.type, config: given }, deps.config);
        } catch (error) {
          if (!(error instanceof TargetError)) throw error;
          throw new AppError('CONNECTION_FAILED', error.message, {
            details: [{ field: 'config', message: error.message }],
          });
        }
      }
      const now = deps.clock.now();
      const row = await repo.insert({
        id,
        userId,
        name: input.name,
        type: input.type,
        config: { ...config, secretFields: Object.keys(sealed) },
        secrets: secrets.seal(sealed),
        createdAt: now,
        updatedAt: now,
      });
      return { destination: viewOf(row), ...(made ? { signingSecret: made } : {}) };
    },

    async list(userId: string, query: { limit: number; cursor?: string }) {
      const rows = await repo.list(userId, query.limit, decodeCursor(query.cursor));
      const { items, nextCursor } = pageOf(rows, query.limit);
      return { destinations: items.map(viewOf), nextCursor };
    },

    get: async (userId: string, id: string) => viewOf(await owned(userId, id)),

    /** Deletes the destination and its pushes (a running push stops at its next batch). */
    async delete(userId: string, id: string): Promise<void> {
      const row = await owned(userId, id);
      if (!(await repo.delete(userId, row.id))) throw notFound('Destination');
    },

    /**
     * A push of the caller's leads: `leadIds` must all be the caller's (any other id is a 404 naming `leadIds`,
     * whether it exists or not), or `filter` selects as the leads list does.
     */
    async push(userId: string, id: string, input: PushInput): Promise<PushView> {
      const destination = await owned(userId, id);
      let selection: PushRow['selection'];
      let total: number | null = null;
      if (input.leadIds) {
        const ids = [...new Set(input.leadIds.map((i) => i.toLowerCase()))];
        const found = new Set<string>();
        for (let i = 0; i < ids.length; i += 1000)
          for (const lead of await leadsForSending(deps.db, userId, ids.slice(i, i + 1000))) found.add(lead.id);
        if (found.size < ids.length) throw notFound('Lead', 'leadIds');
        selection = { leadIds: ids };
        total = ids.length;
      } else {
        const filter = Object.fromEntries(Object.entries(input.filter ?? {}).filter(([, v]) => v !== undefined));
        selection = { filter: filter as Record<string, string> };
      }
      const now = deps.clock.now();
      const row = await repo.insertPush({
        destinationId: destination.id,
        userId,
        mode: input.mode,
        selection,
        total,
        createdAt: now,
        updatedAt: now,
      });
      await enqueue(row.id);
      return toPushView(row);
    },

    async pushes(userId: string, id: string, query: { limit: number; cursor?: string }) {
      const destination = await owned(userId, id);
      const rows = await repo.listPushes(userId, destination.id, query.limit, decodeCursor(query.cursor));
      const { items, nextCursor } = pageOf(rows, query.limit);
      return { pushes: items.map(toPushView), nextCursor };
    },

    getPush: async (userId: string, id: string, pushId: string) => toPushView(await ownedPush(userId, id, pushId)),

    /** A FAILED push runs again from where it stopped (its cursor): nothing delivered is delivered twice. */
    async retry(userId: string, id: string, pushId: string): Promise<PushView> {
      const push = await ownedPush(userId, id, pushId);
      if (push.status !== 'FAILED')
        throw new AppError('INVALID_STATUS', `The push is ${push.status}; only a FAILED push can be retried`);
      const row = await repo.requeue(push.id, deps.clock.now());
      if (!row) throw new AppError('INVALID_STATUS', 'The push changed meanwhile; read it again');
      await enqueue(row.id);
      return toPushView(row);
    },
  };
}
