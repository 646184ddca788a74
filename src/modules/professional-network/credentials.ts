/**
 * Professional-network credentials (docs/professional-network.md): a session cookie sealed at rest, its daily
 * request allowance, and its status computed from what the network last answered.
 */
import type { AppDeps } from '../../deps.ts';
import { createSecretBox, secretKeyMaterial } from '../../shared/crypto.ts';
import { AppError, notFound } from '../../shared/errors.ts';
import { storedId } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { type CredentialRow, networkRepository } from './network.repository.ts';
import type { CreateCredentialInput, CredentialStatus, CredentialView, ListQuery } from './network.schemas.ts';

/** How long a credential stays SOFT_BANNED after the network challenged it. */
export const SOFT_BAN_COOLDOWN_MS = 24 * 3600_000;

/** The UTC date a daily allowance counts in. */
export const utcDay = (at: Date): string => at.toISOString().slice(0, 10);

/** Requests spent today (a count of another day is 0). */
const spentToday = (row: CredentialRow, now: Date) => (row.requestsDay === utcDay(now) ? row.requestsToday : 0);

export function credentialStatus(row: CredentialRow, now: Date): CredentialStatus {
  if (row.invalidAt) return 'INVALID';
  if (row.softBannedAt && now.getTime() - row.softBannedAt.getTime() < SOFT_BAN_COOLDOWN_MS) return 'SOFT_BANNED';
  if (spentToday(row, now) >= row.dailyLimit) return 'RATE_LIMITED';
  return 'ACTIVE';
}

export function toCredentialView(row: CredentialRow, now: Date): CredentialView {
  const spent = spentToday(row, now);
  const status = credentialStatus(row, now);
  return {
    id: row.id,
    name: row.name,
    cookieName: row.cookieName,
    cookie: `••••${row.cookieHint}`,
    status,
    statusReason: status === 'ACTIVE' || status === 'RATE_LIMITED' ? null : row.statusReason,
    dailyLimit: row.dailyLimit,
    requestsToday: spent,
    requestsRemaining: Math.max(0, row.dailyLimit - spent),
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
  };
}

/** Seconds to the next UTC midnight, when a daily allowance starts again. */
const untilTomorrow = (now: Date) => Math.ceil((86_400_000 - (now.getTime() % 86_400_000)) / 1000);

/** A credential in use: its row, and its cookie opened. */
export interface OpenCredential {
  row: CredentialRow;
  cookieName: string;
  cookie: string;
}

export function createCredentials(deps: Pick<AppDeps, 'db' | 'clock' | 'config'>) {
  const repo = networkRepository(deps.db);
  const box = createSecretBox(secretKeyMaterial(deps.config));
  const now = () => deps.clock.now();

  /** Why a credential cannot make a request now, as the answer to the caller. */
  function refusal(row: CredentialRow, status: CredentialStatus): AppError {
    if (status === 'RATE_LIMITED') {
      return new AppError('RATE_LIMIT_EXCEEDED', `The credential has used its ${row.dailyLimit} requests of today`, {
        headers: { 'retry-after': String(untilTomorrow(now())) },
        details: [{ field: 'credentialId', message: 'RATE_LIMITED' }],
      });
    }
    return new AppError('INVALID_STATE', `The credential is ${status}: ${row.statusReason ?? ''}`.trim(), {
      details: [{ field: 'credentialId', message: status }],
    });
  }

  return {
    async create(userId: string, input: CreateCredentialInput): Promise<CredentialView> {
      const at = now();
      const row = await repo.insertCredential({
        userId,
        name: input.name ?? null,
        cookieName: input.cookieName,
        cookieSealed: box.seal(input.cookie),
        cookieHint: input.cookie.slice(-4),
        dailyLimit: input.dailyLimit ?? deps.config.LINKEDIN_DAILY_LIMIT,
        createdAt: at,
        updatedAt: at,
      });
      return toCredentialView(row, at);
    },

    async list(userId: string, query: ListQuery) {
      const rows = await repo.listCredentials(userId, decodeCursor(query.cursor), query.limit);
      const { items, nextCursor } = pageOf(rows, query.limit);
      const at = now();
      return { credentials: items.map((row) => toCredentialView(row, at)), nextCursor };
    },

    /**
     * The credential a request asks for (404 when not the caller's), or the caller's newest ACTIVE one; refused
     * (400 INVALID_STATE, 429 when only out of requests) when none can make a request now.
     */
    async pick(userId: string, credentialId: string | undefined): Promise<CredentialRow> {
      const at = now();
      if (credentialId !== undefined) {
        const key = storedId(credentialId);
        const row = key ? await repo.findCredential(userId, key) : undefined;
        if (!row) throw notFound('Credential', 'credentialId');
        const status = credentialStatus(row, at);
        if (status !== 'ACTIVE') throw refusal(row, status);
        return row;
      }
      const rows = await repo.listCredentials(userId, undefined, 100);
      const active = rows.find((row) => credentialStatus(row, at) === 'ACTIVE');
      if (active) return active;
      const limited = rows.find((row) => credentialStatus(row, at) === 'RATE_LIMITED');
      if (limited) throw refusal(limited, 'RATE_LIMITED');
      throw new AppError(
        'INVALID_STATE',
        rows.length
          ? 'None of your professional-network credentials is ACTIVE'
          : 'Add a professional-network credential first (POST /api/linkedin/credentials)',
        { details: [{ field: 'credentialId', message: 'no ACTIVE credential' }] },
      );
    },

    /**
     * Spends one of today's requests; the cookie when one was left and the credential is usable, undefined when the
     * day's are spent or it became INVALID or SOFT_BANNED meanwhile (`refusal` says which).
     */
    async spend(id: string): Promise<OpenCredential | undefined> {
      const at = now();
      const row = await repo.consumeRequest(id, utcDay(at), at, new Date(at.getTime() - SOFT_BAN_COOLDOWN_MS));
      if (!row) return undefined;
      return { row, cookieName: row.cookieName, cookie: box.open(row.cookieSealed) };
    },

    /** Why a credential refused a spend: its status now, or DELETED. */
    async whyRefused(userId: string, id: string): Promise<CredentialStatus | 'DELETED'> {
      const row = await repo.findCredential(userId, id);
      return row ? credentialStatus(row, now()) : 'DELETED';
    },

    /** The network challenged the credential (SOFT_BANNED) or rejected its login (INVALID). */
    mark(id: string, kind: 'challenge' | 'rejected', reason: string): Promise<void> {
      return repo.markCredential(id, kind === 'challenge' ? 'softBannedAt' : 'invalidAt', reason, now());
    },

    async view(userId: string, id: string): Promise<CredentialView> {
      const row = await repo.findCredential(userId, id);
      if (!row) throw notFound('Credential');
      return toCredentialView(row, now());
    },
  };
}

export type Credentials = ReturnType<typeof createCredentials>;
