import { z } from 'zod';
import { paginationQuery } from '../../shared/pagination.ts';

export const MAX_MESSAGE_CHARS = 8000;

// Strict bodies: the client sends its words and its decision, nothing else (no history, no tool input).
export const createConversationBody = z
  .object({ title: z.string().trim().min(1).max(200).optional().describe('Default: the start of the first message') })
  .strict();

export const listConversationsQuery = paginationQuery;

export const sendMessageBody = z
  .object({ content: z.string().trim().min(1).max(MAX_MESSAGE_CHARS).describe(`1–${MAX_MESSAGE_CHARS} characters`) })
  .strict()
  .describe('Only the new message: the history is kept by the server and cannot be sent.');

export const decideApprovalBody = z
  .object({
    approvalId: z.string().min(1).max(200).describe('A PENDING approval of this conversation'),
    approved: z.boolean(),
    note: z
      .string()
      .trim()
      .max(2000)
      .optional()
      .describe('Passed to the assistant with the outcome (e.g. why it was rejected)'),
  })
  .strict()
  .describe('The action and its input are the stored ones; the body cannot change them.');

// ---- views

export const conversationView = z
  .object({
    id: z.string(),
    title: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Conversation' });

export const conversationListItem = conversationView
  .extend({
    lastMessageAt: z.string().nullable(),
    pendingApprovals: z.number().int().describe('Write actions waiting for a decision'),
  })
  .meta({ id: 'ConversationListItem' });

export const toolCallStatuses = ['COMPLETED', 'FAILED', 'PENDING', 'APPROVED', 'REJECTED', 'EXECUTED'] as const;

export const toolCallView = z
  .object({
    toolCallId: z.string(),
    toolName: z.string(),
    input: z.unknown(),
    status: z
      .enum(toolCallStatuses)
      .describe(
        'Read tools: COMPLETED or FAILED. Write tools: PENDING (awaiting approval), APPROVED (running), ' +
          'REJECTED, EXECUTED or FAILED',
      ),
    approvalId: z.string().optional().describe('Write tools: the approval that decides this call'),
    result: z.unknown().optional(),
    error: z.string().optional(),
  })
  .meta({ id: 'ToolCall' });

export const messageView = z
  .object({
    id: z.string(),
    role: z.enum(['user', 'assistant']),
    text: z.string(),
    toolCalls: z.array(toolCallView),
    createdAt: z.string(),
  })
  .meta({ id: 'ChatMessage' });

export const pendingApprovalView = z
  .object({
    id: z.string(),
    toolName: z.string(),
    input: z.unknown(),
    summary: z
      .string()
      .describe('What approving does, e.g. "Create STATIC source \'Team\' for https://example.com/team"'),
    createdAt: z.string(),
  })
  .meta({ id: 'PendingApproval' });

export const approvalView = pendingApprovalView
  .extend({
    status: z.enum(['PENDING', 'APPROVED', 'REJECTED', 'EXECUTED', 'FAILED']),
    result: z.unknown().nullable(),
    error: z.string().nullable(),
    decidedAt: z.string().nullable(),
  })
  .meta({ id: 'Approval' });

export const conversationDetail = z
  .object({
    conversation: conversationView,
    messages: z
      .array(messageView)
      .describe('User and assistant messages; tool results are folded into the calls that asked for them'),
    pendingApprovals: z.array(pendingApprovalView),
  })
  .meta({ id: 'ConversationDetail' });

export const turnResult = z.object({
  message: messageView.describe("The assistant's answer: every step since the user's message, tool calls included"),
  pendingApprovals: z.array(pendingApprovalView),
});

export const decisionResult = z.object({
  approval: approvalView,
  message: messageView.describe(
    'The assistant message holding the call, with the outcome and (once nothing is pending) the reply',
  ),
  pendingApprovals: z.array(pendingApprovalView),
});

export type ConversationView = z.infer<typeof conversationView>;
export type MessageView = z.infer<typeof messageView>;
export type ToolCallView = z.infer<typeof toolCallView>;
export type PendingApprovalView = z.infer<typeof pendingApprovalView>;
export type ApprovalView = z.infer<typeof approvalView>;
export type DecideApprovalInput = z.infer<typeof decideApprovalBody>;

/** Server-Sent Events of a turn (`Accept: text/event-stream`), documented in OpenAPI. */
export const chatStreamEvents = {
  'text-delta': "{delta}: a piece of the assistant's text",
  'tool-call': '{toolCallId, toolName, input}: the assistant called a tool',
  'tool-result': "{toolCallId, toolName, output, isError?}: a read tool's result, or an approved action's outcome",
  'approval-required':
    '{approvalId, toolName, input, summary}: a write action waits for POST …/approvals (sent once stored)',
  done: '{messageId}: the turn is stored; GET the conversation for the whole message',
  error: '{code, message}: the turn failed (nothing of it is stored); the stream ends',
} as const;

export const describeStream = (intro: string) =>
  `${intro}\n\nWith \`Accept: text/event-stream\` the answer is a stream of Server-Sent Events instead of JSON:\n` +
  Object.entries(chatStreamEvents)
    .map(([event, data]) => `- \`${event}\` ${data}`)
    .join('\n');
