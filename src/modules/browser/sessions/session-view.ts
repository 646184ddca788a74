/** A session's API view: its row, with a fresh cdpUrl while it is live and the clients connected to it here. */
import type { FastifyRequest } from 'fastify';
import { CDP_TOKEN_TTL_MS, signCdpToken } from '../cdp/token.ts';
import type { BrowserHost } from './host.ts';
import type { SessionRow } from './sessions.repository.ts';
import type { SessionStatus, SessionView } from './sessions.schemas.ts';

export interface ViewContext {
  hostId: string;
  host: BrowserHost | undefined;
  tokenKey: Parameters<typeof signCdpToken>[0];
  now: () => number;
  /** The API key of the request the view answers: the cdpUrl's token is bound to it. */
  keyId: string | null;
}

function cdpUrl(
  row: SessionRow,
  base: string,
  { tokenKey, now, keyId }: ViewContext,
): { cdpUrl: string | null; cdpUrlExpiresAt: string | null } {
  // A sleeping session's cdpUrl wakes it.
  if (row.status !== 'LIVE' && row.status !== 'SLEEPING') return { cdpUrl: null, cdpUrlExpiresAt: null };
  const expiresAt = now() + CDP_TOKEN_TTL_MS;
  const token = signCdpToken(tokenKey, {
    sessionId: row.id,
    userId: row.userId,
    clientRef: row.clientRef,
    keyId,
    expiresAt,
  });
  return {
    cdpUrl: `${base}/api/browser/sessions/${row.id}/cdp?token=${token}`,
    cdpUrlExpiresAt: new Date(expiresAt).toISOString(),
  };
}

export function sessionView(row: SessionRow, base: string, context: ViewContext): SessionView {
  const { hostId, host } = context;
  const live = row.hostId === hostId ? host?.get(row.id) : undefined;
  return {
    id: row.id,
    status: row.status as SessionStatus,
    endReason: row.endReason,
    ...cdpUrl(row, base, context),
    expiresAt: row.expiresAt.toISOString(),
    viewport: { width: row.viewportWidth, height: row.viewportHeight },
    keepAlive: row.keepAlive,
    timeoutMs: row.timeoutMs,
    idleTimeoutMs: row.idleTimeoutMs,
    autoSleepMs: row.autoSleepMs,
    snapshotId: row.status === 'SLEEPING' ? row.snapshotId : null,
    profileId: row.profileId,
    persistProfile: row.persistProfile,
    proxyProfileId: row.proxyProfileId,
    record: row.record,
    extensionIds: row.extensionIds,
    metadata: row.metadata,
    clientRef: row.clientRef,
    connectedClients: live ? live.clients : row.hostId === hostId || row.status !== 'LIVE' ? 0 : null,
    createdAt: row.createdAt.toISOString(),
    endedAt: row.endedAt?.toISOString() ?? null,
  };
}

/** ws(s)://… of the service as this request reached it, or PUBLIC_URL. */
export function webSocketBase(publicUrl: string | undefined, request: FastifyRequest): string {
  const base = publicUrl ? publicUrl.replace(/\/+$/, '') : `${request.protocol}://${request.host}`;
  return base.replace(/^http/, 'ws');
}
