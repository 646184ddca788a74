import type { ToolResultPart } from 'ai';
import { and, asc, desc, eq, isNull, lt, or, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { type ChatApprovalStatus, chatApprovals, chatConversations, chatMessages } from '../../db/schema/index.ts';

export type ConversationRow = typeof chatConversations.$inferSelect;
export type MessageRow = typeof chatMessages.$inferSelect;
export type NewMessage = typeof chatMessages.$inferInsert;
export type ApprovalRow = typeof chatApprovals.$inferSelect;
export type NewApproval = typeof chatApprovals.$inferInsert;
export type ConversationListRow = ConversationRow & { lastMessageAt: Date | null; pendingApprovals: number };

const dateOrNull = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string));

/** What a finished turn writes at once: its messages, the approvals it asks for, the conversation's new state. */
export interface TurnWrite {
  messages: NewMessage[];
  approvals?: NewApproval[];
  /** An approval decided in this turn: its final status and outcome. */
  decided?: { id: string; status: ChatApprovalStatus; result: unknown; error: string | null };
  title?: string;
  at: Date;
}

export function chatRepository(db: Db) {
  return {
    async insertConversation(userId: string, title: string | null, at: Date): Promise<ConversationRow> {
      const [row] = await db
        .insert(chatConversations)
        .values({ userId, title, createdAt: at, updatedAt: at })
        .returning();
      return row!;
    },

    async findConversation(userId: string, id: string): Promise<ConversationRow | undefined> {
      const [row] = await db
        .select()
        .from(chatConversations)
        .where(and(eq(chatConversations.userId, userId), eq(chatConversations.id, id)))
        .limit(1);
      return row;
    },

    /** Newest first, `limit + 1` rows, each with its last message time and open approvals. */
    async listConversations(userId: string, limit: number, before?: string): Promise<ConversationListRow[]> {
      return db
        .select({
          id: chatConversations.id,
          userId: chatConversations.userId,
          title: chatConversations.title,
          turnLeaseUntil: chatConversations.turnLeaseUntil,
          createdAt: chatConversations.createdAt,
          updatedAt: chatConversations.updatedAt,
          // Spelled out: inside a field subquery drizzle would not qualify the outer column.
          lastMessageAt: sql<Date | null>`(SELECT max(m.created_at) FROM chat_messages m
                                          WHERE m.conversation_id = "chat_conversations"."id")`.mapWith(dateOrNull),
          pendingApprovals: sql<number>`(SELECT count(*) FROM chat_approvals a
                                         WHERE a.conversation_id = "chat_conversations"."id"
                                           AND a.status = 'PENDING')::int`.mapWith(Number),
        })
        .from(chatConversations)
        .where(and(eq(chatConversations.userId, userId), before ? lt(chatConversations.id, before) : undefined))
        .orderBy(desc(chatConversations.id))
        .limit(limit + 1);
    },

    /**
     * Takes the conversation's turn lease (compare-and-set): the lease it set (the holder's token for
     * releaseTurn), or undefined while another turn holds an unexpired one, in this process or another.
     */
    async claimTurn(userId: string, id: string, now: Date, until: Date): Promise<Date | undefined> {
      const rows = await db
        .update(chatConversations)
        .set({ turnLeaseUntil: until })
        .where(
          and(
            eq(chatConversations.userId, userId),
            eq(chatConversations.id, id),
            or(isNull(chatConversations.turnLeaseUntil), lt(chatConversations.turnLeaseUntil, now)),
          ),
        )
        .returning({ lease: chatConversations.turnLeaseUntil });
      return rows[0]?.lease ?? undefined;
    },

    /** Clears the lease only if it is still `lease`: a turn that outlived its lease leaves the next turn's alone. */
    async releaseTurn(id: string, lease: Date): Promise<void> {
      await db
        .update(chatConversations)
        .set({ turnLeaseUntil: null })
        .where(and(eq(chatConversations.id, id), eq(chatConversations.turnLeaseUntil, lease)));
    },

    /** Every message of a conversation, oldest first (ids are time-ordered). */
    messages(conversationId: string): Promise<MessageRow[]> {
      return db
        .select()
        .from(chatMessages)
        .where(eq(chatMessages.conversationId, conversationId))
        .orderBy(asc(chatMessages.id));
    },

    /** The newest `limit` messages, oldest first: the model's bounded view of the history. */
    async recentMessages(conversationId: string, limit: number): Promise<MessageRow[]> {
      const rows = await db
        .select()
        .from(chatMessages)
        .where(eq(chatMessages.conversationId, conversationId))
        .orderBy(desc(chatMessages.id))
        .limit(limit);
      return rows.reverse();
    },

    approvals(conversationId: string): Promise<ApprovalRow[]> {
      return db
        .select()
        .from(chatApprovals)
        .where(eq(chatApprovals.conversationId, conversationId))
        .orderBy(asc(chatApprovals.id));
    },

    pendingApprovals(conversationId: string): Promise<ApprovalRow[]> {
      return db
        .select()
        .from(chatApprovals)
        .where(and(eq(chatApprovals.conversationId, conversationId), eq(chatApprovals.status, 'PENDING')))
        .orderBy(asc(chatApprovals.id));
    },

    async findApproval(userId: string, conversationId: string, id: string): Promise<ApprovalRow | undefined> {
      const [row] = await db
        .select()
        .from(chatApprovals)
        .where(
          and(
            eq(chatApprovals.userId, userId),
            eq(chatApprovals.conversationId, conversationId),
            eq(chatApprovals.id, id),
          ),
        )
        .limit(1);
      return row;
    },

    /** PENDING → `status`, only if still PENDING: of two concurrent decisions exactly one gets the row. */
    async claimApproval(id: string, status: 'APPROVED' | 'REJECTED', now: Date): Promise<ApprovalRow | undefined> {
      const [row] = await db
        .update(chatApprovals)
        .set({ status, decidedAt: now, updatedAt: now })
        .where(and(eq(chatApprovals.id, id), eq(chatApprovals.status, 'PENDING')))
        .returning();
      return row;
    },

    /**
     * APPROVED approvals decided before `cutoff` (their turn's lease has expired, so the process that
     * ran them died between claiming and recording) → FAILED with `error`, and a tool result telling the
     * model so for each whose call has none, in one transaction. Returns the approvals it closed.
     */
    async failStaleApprovals(conversationId: string, cutoff: Date, error: string, at: Date): Promise<ApprovalRow[]> {
      return db.transaction(async (tx) => {
        const stale = await tx
          .update(chatApprovals)
          .set({ status: 'FAILED', error, updatedAt: at })
          .where(
            and(
              eq(chatApprovals.conversationId, conversationId),
              eq(chatApprovals.status, 'APPROVED'),
              lt(chatApprovals.decidedAt, cutoff),
            ),
          )
          .returning();
        if (!stale.length) return stale;
        const toolMessages = await tx
          .select({ content: chatMessages.content })
          .from(chatMessages)
          .where(and(eq(chatMessages.conversationId, conversationId), eq(chatMessages.role, 'tool')));
        const answered = new Set(
          toolMessages.flatMap((m) =>
            (Array.isArray(m.content) ? (m.content as Array<{ type?: string; toolCallId?: string }>) : [])
              .filter((p) => p.type === 'tool-result')
              .map((p) => p.toolCallId),
          ),
        );
        const missing = stale.filter((a) => !answered.has(a.toolCallId));
        if (missing.length) {
          const content: ToolResultPart[] = missing.map((a) => ({
            type: 'tool-result',
            toolCallId: a.toolCallId,
            toolName: a.toolName,
            output: { type: 'error-text', value: error },
          }));
          await tx
            .insert(chatMessages)
            .values({ conversationId, userId: missing[0]!.userId, role: 'tool', content, createdAt: at });
        }
        return stale;
      });
    },

    /** A turn's messages, approvals and outcome in one transaction: a turn is stored whole or not at all. */
    async writeTurn(conversationId: string, turn: TurnWrite): Promise<void> {
      await db.transaction(async (tx) => {
        if (turn.messages.length) await tx.insert(chatMessages).values(turn.messages);
        if (turn.approvals?.length) await tx.insert(chatApprovals).values(turn.approvals);
        if (turn.decided) {
          const { id, status, result, error } = turn.decided;
          await tx
            .update(chatApprovals)
            .set({ status, result: result ?? null, error, updatedAt: turn.at })
            .where(eq(chatApprovals.id, id));
        }
        await tx
          .update(chatConversations)
          .set({
            updatedAt: turn.at,
            ...(turn.title ? { title: sql`coalesce(${chatConversations.title}, ${turn.title})` } : {}),
          })
          .where(eq(chatConversations.id, conversationId));
      });
    },
  };
}
