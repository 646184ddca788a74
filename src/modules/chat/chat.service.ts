import type { ToolResultPart } from 'ai';
import type { z } from 'zod';
import type { Principal } from '../../shared/auth.ts';
import { AppError } from '../../shared/errors.ts';
import { findOwned, newId } from '../../shared/ids.ts';
import { decodeCursor, pageOf, type paginationQuery } from '../../shared/pagination.ts';
import { type AgentDeps, type AgentEvents, runAgent } from './chat.agent.ts';
import {
  approvalViewOf,
  boundHistory,
  MAX_HISTORY_MESSAGES,
  messageViews,
  pendingApprovalViewOf,
} from './chat.history.ts';
import {
  type ApprovalRow,
  type ConversationListRow,
  type ConversationRow,
  chatRepository,
  type NewApproval,
  type NewMessage,
} from './chat.repository.ts';
import type { ConversationView, DecideApprovalInput, MessageView, PendingApprovalView } from './chat.schemas.ts';
import { executeWriteTool, type WriteOutcome } from './chat.tools.ts';

export type ChatDeps = AgentDeps;

/** Streamed turns also learn when write actions wait and when the turn is stored. */
export interface TurnEvents extends AgentEvents {
  approvalRequired(approval: { approvalId: string; toolName: string; input: unknown; summary: string }): void;
}

/** A turn whose checks passed and whose lease is held; `run` does the work and always releases it. */
export interface Turn<T> {
  run(signal: AbortSignal, events?: TurnEvents): Promise<T>;
}

export interface TurnOutcome {
  message: MessageView;
  pendingApprovals: PendingApprovalView[];
}

const toConversationView = (r: ConversationRow): ConversationView => ({
  id: r.id,
  title: r.title,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});

const titleFrom = (content: string) => {
  const line = content.replace(/\s+/g, ' ').trim();
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
};

/** The error of an approved action whose outcome was never recorded (the process stopped mid-action). */
export const INTERRUPTED = 'outcome unknown: the service stopped while running this action; check before retrying';

const aiNotConfigured = () =>
  new AppError(
    'AI_NOT_CONFIGURED',
    'The chat needs an AI provider: set AI_BASE_URL and AI_MODEL (and AI_API_KEY if the endpoint needs one)',
  );

const turnBusy = () =>
  new AppError(
    'CONFLICT',
    'The assistant is still answering in this conversation; send again when that turn has finished',
    {
      details: [{ field: 'id', message: 'a turn is in progress' }],
    },
  );

/** What the model is told about a decided write action (the stored tool result). */
function toolOutput(
  outcome: WriteOutcome | { status: 'REJECTED' },
  note: string | undefined,
): ToolResultPart['output'] {
  const userNote = note ? { userNote: note } : {};
  if (outcome.status === 'EXECUTED')
    return { type: 'json', value: { status: 'executed', result: outcome.result as never, ...userNote } };
  if (outcome.status === 'FAILED') return { type: 'error-text', value: `The action failed: ${outcome.error}` };
  return { type: 'execution-denied', reason: `Rejected by the user${note ? `: ${note}` : ''}` };
}

export type ChatService = ReturnType<typeof createChatService>;

export function createChatService(deps: ChatDeps) {
  const repo = chatRepository(deps.db);
  // A turn makes up to MAX_STEPS calls of AI_TIMEOUT_MS plus tools; a dead process's lease expires after that.
  const leaseMs = () => deps.config.AI_TIMEOUT_MS * 10 + 60_000;

  async function owned(userId: string, id: string): Promise<ConversationRow> {
    return findOwned(id, 'Conversation', (key) => repo.findConversation(userId, key));
  }

  /** The lease this turn holds (its token for releaseTurn); 409 while another turn holds one. */
  async function claimTurn(userId: string, conversationId: string): Promise<Date> {
    const now = deps.clock.now();
    const lease = await repo.claimTurn(userId, conversationId, now, new Date(now.getTime() + leaseMs()));
    if (!lease) throw turnBusy();
    return lease;
  }

  /**
   * An approval still APPROVED a lease after it was decided was claimed by a turn that died before
   * recording the outcome: it becomes FAILED (outcome unknown) with a tool result saying so.
   */
  async function closeInterruptedApprovals(conversationId: string): Promise<void> {
    const now = deps.clock.now();
    await repo.failStaleApprovals(conversationId, new Date(now.getTime() - leaseMs()), INTERRUPTED, now);
  }

  async function pendingViews(conversationId: string) {
    return (await repo.pendingApprovals(conversationId)).map(pendingApprovalViewOf);
  }

  /** The view of the assistant message that `pick` selects, read back after the turn is stored. */
  async function outcome(
    conversationId: string,
    pick: (views: MessageView[]) => MessageView | undefined,
  ): Promise<TurnOutcome> {
    const [rows, approvals] = await Promise.all([repo.messages(conversationId), repo.approvals(conversationId)]);
    const views = messageViews(rows, approvals);
    const message = pick(views) ?? views.at(-1)!;
    return { message, pendingApprovals: approvals.filter((a) => a.status === 'PENDING').map(pendingApprovalViewOf) };
  }

  /**
   * Runs the agent over the stored history (plus `extra`, not yet stored) and stores what it said, the
   * write actions it asked for and `extra` in one transaction. Returns the first stored assistant id.
   */
  async function agentTurn(
    principal: Principal,
    conversation: ConversationRow,
    extra: NewMessage[],
    signal: AbortSignal,
    events?: TurnEvents,
  ): Promise<string> {
    const stored = await repo.recentMessages(conversation.id, MAX_HISTORY_MESSAGES);
    const history = boundHistory([...stored, ...extra]);
    const result = await runAgent(deps, {
      actor: principal,
      history,
      signal,
      events,
    });
    const at = deps.clock.now();
    const messages: NewMessage[] = result.messages.map((m) => ({
      id: newId(),
      conversationId: conversation.id,
      userId: principal.userId,
      role: m.role as NewMessage['role'],
      content: m.content,
      createdAt: at,
    }));
    if (!messages.some((m) => m.role === 'assistant')) {
      messages.unshift({
        id: newId(),
        conversationId: conversation.id,
        userId: principal.userId,
        role: 'assistant',
        content: [],
        createdAt: at,
      });
    }
    const approvals: NewApproval[] = result.approvalRequests.map((r) => ({
      id: newId(),
      conversationId: conversation.id,
      userId: principal.userId,
      toolCallId: r.toolCallId,
      toolName: r.toolName,
      input: r.input ?? {},
      createdAt: at,
      updatedAt: at,
    }));
    const userText = extra.find((m) => m.role === 'user')?.content;
    await repo.writeTurn(conversation.id, {
      messages: [...extra, ...messages],
      approvals,
      at,
      title: !conversation.title && typeof userText === 'string' ? titleFrom(userText) : undefined,
    });
    for (const a of approvals)
      events?.approvalRequired({ ...pendingApprovalViewOf(a as ApprovalRow), approvalId: a.id! });
    return messages.find((m) => m.role === 'assistant')!.id!;
  }

  return {
    async create(userId: string, title: string | undefined): Promise<ConversationView> {
      return toConversationView(await repo.insertConversation(userId, title ?? null, deps.clock.now()));
    },

    async list(userId: string, query: z.infer<typeof paginationQuery>) {
      const rows = await repo.listConversations(userId, query.limit, decodeCursor(query.cursor));
      const { items, nextCursor } = pageOf(rows, query.limit);
      return {
        conversations: items.map((r: ConversationListRow) => ({
          ...toConversationView(r),
          lastMessageAt: r.lastMessageAt?.toISOString() ?? null,
          pendingApprovals: r.pendingApprovals,
        })),
        nextCursor,
      };
    },

    async get(userId: string, id: string) {
      const conversation = await owned(userId, id);
      // While a turn holds the lease it may be recording an outcome right now: only a free conversation is repaired.
      if (!conversation.turnLeaseUntil || conversation.turnLeaseUntil < deps.clock.now())
        await closeInterruptedApprovals(conversation.id);
      const [rows, approvals] = await Promise.all([repo.messages(conversation.id), repo.approvals(conversation.id)]);
      return {
        conversation: toConversationView(conversation),
        messages: messageViews(rows, approvals),
        pendingApprovals: approvals.filter((a) => a.status === 'PENDING').map(pendingApprovalViewOf),
      };
    },

    /**
     * Checks (404, 503, 409 APPROVAL_PENDING, 409 turn in progress) before anything is written; the
     * returned turn stores the user's message together with the answer, or nothing if the model fails.
     */
    async beginMessage(principal: Principal, id: string, content: string): Promise<Turn<TurnOutcome>> {
      const conversation = await owned(principal.userId, id);
      if (!deps.ai.configured) throw aiNotConfigured();
      await deps.ai.assertCredits(principal.userId);
      const pending = await pendingViews(conversation.id);
      if (pending.length) {
        const list = pending.map((p) => `${p.id} (${p.summary})`).join('; ');
        throw new AppError('APPROVAL_PENDING', `Decide the pending action first (POST …/approvals): ${list}`, {
          details: pending.map((p) => ({ field: 'approvalId', message: `${p.id} is pending: ${p.summary}` })),
        });
      }
      const lease = await claimTurn(principal.userId, conversation.id);
      // Before the user's message gets its (time-ordered) id: a repaired call's result comes first.
      await closeInterruptedApprovals(conversation.id).catch(async (error: unknown) => {
        await repo.releaseTurn(conversation.id, lease);
        throw error;
      });
      const userMessage: NewMessage = {
        id: newId(),
        conversationId: conversation.id,
        userId: principal.userId,
        role: 'user',
        content,
        createdAt: deps.clock.now(),
      };
      return {
        async run(signal, events) {
          try {
            const firstId = await agentTurn(principal, conversation, [userMessage], signal, events);
            return await outcome(conversation.id, (views) => views.find((v) => v.id === firstId));
          } finally {
            await repo.releaseTurn(conversation.id, lease);
          }
        },
      };
    },

    /**
     * Claims the approval (PENDING → APPROVED/REJECTED, compare-and-set) under the turn lease; the
     * returned turn executes the stored action, stores its outcome, and lets the assistant reply once
     * nothing of the conversation is pending any more.
     */
    async beginDecision(
      principal: Principal,
      id: string,
      body: DecideApprovalInput,
    ): Promise<Turn<TurnOutcome & { approval: ReturnType<typeof approvalViewOf> }>> {
      const conversation = await owned(principal.userId, id);
      const found = await findOwned(
        body.approvalId,
        'Approval',
        (key) => repo.findApproval(principal.userId, conversation.id, key),
        'approvalId',
      );
      const decided = () =>
        new AppError('CONFLICT', `This action was already decided (${found.status})`, {
          details: [{ field: 'approvalId', message: 'already decided' }],
        });
      if (found.status !== 'PENDING') throw decided();
      if (!deps.ai.configured) throw aiNotConfigured();
      await deps.ai.assertCredits(principal.userId);
      const lease = await claimTurn(principal.userId, conversation.id);
      const claimed = await repo
        .claimApproval(found.id, body.approved ? 'APPROVED' : 'REJECTED', deps.clock.now())
        .catch(async (error: unknown) => {
          await repo.releaseTurn(conversation.id, lease);
          throw error;
        });
      if (!claimed) {
        await repo.releaseTurn(conversation.id, lease);
        throw decided();
      }
      return {
        async run(signal, events) {
          try {
            await closeInterruptedApprovals(conversation.id);
            const result = body.approved
              ? await executeWriteTool(deps, principal, claimed.toolName, claimed.input)
              : ({ status: 'REJECTED' } as const);
            const output = toolOutput(result, body.note);
            const at = deps.clock.now();
            await repo.writeTurn(conversation.id, {
              messages: [
                {
                  id: newId(),
                  conversationId: conversation.id,
                  userId: principal.userId,
                  role: 'tool',
                  content: [
                    { type: 'tool-result', toolCallId: claimed.toolCallId, toolName: claimed.toolName, output },
                  ] satisfies ToolResultPart[],
                  createdAt: at,
                },
              ],
              decided: {
                id: claimed.id,
                status: result.status,
                result: result.status === 'EXECUTED' ? result.result : null,
                error:
                  result.status === 'FAILED'
                    ? result.error
                    : result.status === 'REJECTED'
                      ? body.note
                        ? `Rejected: ${body.note}`
                        : null
                      : null,
              },
              at,
            });
            const isError = result.status !== 'EXECUTED';
            events?.toolResult({
              toolCallId: claimed.toolCallId,
              toolName: claimed.toolName,
              output: outcomeForEvent(result),
              isError,
            });
            // Several write calls of one step: the model continues once every one of them is decided.
            if (!(await repo.pendingApprovals(conversation.id)).length) {
              await agentTurn(principal, conversation, [], signal, events).catch((error: unknown) => {
                if (!(error instanceof AppError)) throw error;
                throw new AppError(
                  error.code,
                  `The decision was recorded (${result.status}), but the assistant could not reply: ${error.message}`,
                );
              });
            }
            const approval = await repo.findApproval(principal.userId, conversation.id, claimed.id);
            const turn = await outcome(conversation.id, (views) =>
              views.find((v) => v.toolCalls.some((c) => c.toolCallId === claimed.toolCallId)),
            );
            return { ...turn, approval: approvalViewOf(approval!) };
          } finally {
            await repo.releaseTurn(conversation.id, lease);
          }
        },
      };
    },
  };
}

const outcomeForEvent = (r: WriteOutcome | { status: 'REJECTED' }) =>
  r.status === 'EXECUTED' ? r.result : r.status === 'FAILED' ? { error: r.error } : { error: 'rejected by the user' };
