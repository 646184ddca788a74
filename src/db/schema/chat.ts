import { index, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { createdAt, idColumn, tsColumn, updatedAt } from './columns.ts';
import { users } from './users.ts';

export const chatConversations = pgTable(
  'chat_conversations',
  {
    id: idColumn(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    title: text('title'),
    /** Set while the assistant answers (message or approval): one turn at a time across processes; expires on crash. */
    turnLeaseUntil: tsColumn('turn_lease_until'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('chat_conversations_user_idx').on(t.userId, t.id)],
);

export const chatMessageRoles = ['user', 'assistant', 'tool'] as const;

/** The server-side history: AI SDK model messages in order (ids are time-ordered UUIDv7). */
export const chatMessages = pgTable(
  'chat_messages',
  {
    id: idColumn(),
    conversationId: uuid('conversation_id')
      .notNull()
      .references(() => chatConversations.id, { onDelete: 'cascade' }),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    role: text('role', { enum: chatMessageRoles }).notNull(),
    /** The AI SDK ModelMessage `content` (string or parts: text, tool-call, tool-result). */
    content: jsonb('content').$type<unknown>().notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('chat_messages_conversation_idx').on(t.conversationId, t.id)],
);

export const chatApprovalStatuses = ['PENDING', 'APPROVED', 'REJECTED', 'EXECUTED', 'FAILED'] as const;
export type ChatApprovalStatus = (typeof chatApprovalStatuses)[number];

/** A write action the model asked for; it runs only when its owner approves it (stored input, never the client's). */
export const chatApprovals = pgTable(
  'chat_approvals',
  {
    id: idColumn(),
    conversationId: uuid('conversation_id')
      .notNull()
      .references(() => chatConversations.id, { onDelete: 'cascade' }),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    toolCallId: text('tool_call_id').notNull(),
    toolName: text('tool_name').notNull(),
    input: jsonb('input').$type<unknown>().notNull(),
    status: text('status', { enum: chatApprovalStatuses }).notNull().default('PENDING'),
    result: jsonb('result').$type<unknown>(),
    error: text('error'),
    decidedAt: tsColumn('decided_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex('chat_approvals_call_key').on(t.conversationId, t.toolCallId),
    index('chat_approvals_conversation_idx').on(t.conversationId, t.status),
  ],
);
