import {
  type OutreachStep,
  outreachCampaigns,
  outreachConnections,
  outreachEnrollments,
  outreachMailboxes,
  type SendingWindow,
} from '../../src/db/schema/index.ts';
import { createSecretBox, secretKeyMaterial } from '../../src/shared/crypto.ts';
import type { TestContext, TestUser } from './app.ts';

/**
 * Outreach rows written straight to the database, for tests of the sequencer and the inbox that do not exercise
 * the connection and campaign endpoints (those have their own tests through the API).
 */
export async function seedSmtpConnection(
  ctx: TestContext,
  user: TestUser,
  mailboxes: Array<{ email: string; smtpUrl: string; imapUrl?: string; dailyLimit?: number; fromName?: string }>,
) {
  const box = createSecretBox(secretKeyMaterial(ctx.config));
  const now = ctx.deps.clock.now();
  const [connection] = await ctx.deps.db
    .insert(outreachConnections)
    .values({ userId: user.id, provider: 'smtp', name: 'test mailboxes', verifiedAt: now })
    .returning();
  const rows = await ctx.deps.db
    .insert(outreachMailboxes)
    .values(
      mailboxes.map((m) => {
        const smtp = new URL(m.smtpUrl);
        const imap = m.imapUrl ? new URL(m.imapUrl) : undefined;
        return {
          userId: user.id,
          connectionId: connection!.id,
          email: m.email.toLowerCase(),
          fromName: m.fromName ?? null,
          dailyLimit: m.dailyLimit ?? 50,
          smtpUrlEncrypted: box.seal(m.smtpUrl),
          imapUrlEncrypted: m.imapUrl ? box.seal(m.imapUrl) : null,
          smtpHost: smtp.hostname,
          smtpPort: Number(smtp.port),
          imapHost: imap?.hostname ?? null,
          imapPort: imap ? Number(imap.port) : null,
          username: decodeURIComponent(smtp.username) || null,
        };
      }),
    )
    .returning();
  return { connection: connection!, mailboxes: rows };
}

export const ALWAYS_OPEN: SendingWindow = { timezone: 'UTC', days: [1, 2, 3, 4, 5, 6, 7], startHour: 0, endHour: 24 };

export async function seedCampaign(
  ctx: TestContext,
  user: TestUser,
  input: {
    connectionId: string;
    mailboxIds: string[];
    steps: OutreachStep[];
    window?: SendingWindow;
    dailyLimit?: number;
    status?: 'DRAFT' | 'ACTIVE' | 'PAUSED';
    stopOnReply?: boolean;
    trackOpens?: boolean;
    minGapSeconds?: number;
    maxGapSeconds?: number;
  },
) {
  const [row] = await ctx.deps.db
    .insert(outreachCampaigns)
    .values({
      userId: user.id,
      connectionId: input.connectionId,
      name: 'seeded campaign',
      status: input.status ?? 'ACTIVE',
      steps: input.steps,
      window: input.window ?? ALWAYS_OPEN,
      dailyLimit: input.dailyLimit ?? 1000,
      mailboxIds: input.mailboxIds,
      stopOnReply: input.stopOnReply ?? true,
      trackOpens: input.trackOpens ?? false,
      minGapSeconds: input.minGapSeconds ?? 0,
      maxGapSeconds: input.maxGapSeconds ?? 0,
    })
    .returning();
  return row!;
}

/** Enrolls leads (ids with their address) with their first step due at `dueAt` (default now). */
export async function seedEnrollments(
  ctx: TestContext,
  user: TestUser,
  campaignId: string,
  leads: Array<{ id: string; email: string }>,
  dueAt: Date = ctx.deps.clock.now(),
) {
  if (!leads.length) return [];
  return ctx.deps.db
    .insert(outreachEnrollments)
    .values(
      leads.map((l) => ({
        userId: user.id,
        campaignId,
        leadId: l.id,
        email: l.email.toLowerCase(),
        nextSendAt: dueAt,
      })),
    )
    .returning();
}
