import type { ModelMessage, ToolResultPart } from 'ai';
import type { ApprovalRow, MessageRow } from './chat.repository.ts';
import type { MessageView, ToolCallView } from './chat.schemas.ts';
import { approvalSummary } from './chat.tools.ts';

/** How much history the model sees: the newest messages, cut at a user message, within a size budget. */
export const MAX_HISTORY_MESSAGES = 60;
/** About 12k tokens at ~4 characters a token. */
export const MAX_HISTORY_CHARS = 48_000;

type Part = { type: string; [key: string]: unknown };
const partsOf = (content: unknown): Part[] => (Array.isArray(content) ? (content as Part[]) : []);

const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : partsOf(content)
        .filter((p) => p.type === 'text' && typeof p.text === 'string')
        .map((p) => p.text as string)
        .join('');

/**
 * The model's view of the stored history: at most MAX_HISTORY_MESSAGES and MAX_HISTORY_CHARS,
 * always starting at a user message (never with a tool result whose call was cut off).
 */
export function boundHistory(rows: Array<Pick<MessageRow, 'role' | 'content'>>): ModelMessage[] {
  let start = rows.findIndex((r) => r.role === 'user');
  if (start < 0) return [];
  const sizes = rows.map((r) => JSON.stringify(r.content).length);
  let total = sizes.slice(start).reduce((a, b) => a + b, 0);
  for (let i = start + 1; i < rows.length && total > MAX_HISTORY_CHARS; i++) {
    if (rows[i]!.role !== 'user') continue;
    total -= sizes.slice(start, i).reduce((a, b) => a + b, 0);
    start = i;
  }
  return closeDanglingCalls(rows.slice(start).map((r) => ({ role: r.role, content: r.content }) as ModelMessage));
}

/**
 * A tool call without a result (a process died between approving and recording the outcome) would
 * make the provider refuse the whole history: the model is told the outcome is unknown instead.
 */
export function closeDanglingCalls(messages: ModelMessage[]): ModelMessage[] {
  const answered = new Set<string>();
  for (const m of messages) {
    if (m.role === 'tool')
      for (const p of partsOf(m.content)) if (p.type === 'tool-result') answered.add(p.toolCallId as string);
  }
  const out: ModelMessage[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    out.push(m);
    if (m.role !== 'assistant') continue;
    const missing = partsOf(m.content).filter((p) => p.type === 'tool-call' && !answered.has(p.toolCallId as string));
    if (!missing.length) continue;
    while (i + 1 < messages.length && messages[i + 1]!.role === 'tool') out.push(messages[++i]!);
    const content: ToolResultPart[] = missing.map((p) => ({
      type: 'tool-result',
      toolCallId: p.toolCallId as string,
      toolName: p.toolName as string,
      output: {
        type: 'error-text',
        value: 'No outcome was recorded for this call (it was interrupted); check the current state before retrying.',
      },
    }));
    out.push({ role: 'tool', content });
  }
  return out;
}

/** A stored tool-result output as the API shows it. */
function outcomeOf(output: unknown): { result?: unknown; error?: string } {
  const o = output as { type?: string; value?: unknown; reason?: string } | undefined;
  switch (o?.type) {
    case 'json':
    case 'text':
      return { result: o.value };
    case 'error-text':
      return { error: String(o.value) };
    case 'error-json':
      return { error: JSON.stringify(o.value) };
    case 'execution-denied':
      return { error: o.reason ?? 'rejected' };
    default:
      return { result: o };
  }
}

/**
 * The conversation as the API shows it: user messages, and assistant messages each covering a run of
 * model steps (tool results folded into the calls that asked for them; write calls carry their approval).
 */
export function messageViews(rows: MessageRow[], approvals: ApprovalRow[]): MessageView[] {
  const byCall = new Map(approvals.map((a) => [a.toolCallId, a]));
  const results = new Map<string, unknown>();
  for (const r of rows) {
    if (r.role === 'tool')
      for (const p of partsOf(r.content)) if (p.type === 'tool-result') results.set(p.toolCallId as string, p.output);
  }
  const views: MessageView[] = [];
  let run: MessageView | undefined;
  for (const r of rows) {
    if (r.role === 'user') {
      run = undefined;
      views.push({
        id: r.id,
        role: 'user',
        text: textOf(r.content),
        toolCalls: [],
        createdAt: r.createdAt.toISOString(),
      });
      continue;
    }
    if (r.role !== 'assistant') continue;
    if (!run)
      views.push(
        (run = { id: r.id, role: 'assistant', text: '', toolCalls: [], createdAt: r.createdAt.toISOString() }),
      );
    const text = textOf(r.content);
    if (text) run.text = run.text ? `${run.text}\n\n${text}` : text;
    for (const p of partsOf(r.content))
      if (p.type === 'tool-call') run.toolCalls.push(toolCallView(p, byCall.get(p.toolCallId as string), results));
  }
  return views;
}

function toolCallView(part: Part, approval: ApprovalRow | undefined, results: Map<string, unknown>): ToolCallView {
  const base = { toolCallId: part.toolCallId as string, toolName: part.toolName as string, input: part.input };
  if (approval) {
    return {
      ...base,
      status: approval.status,
      approvalId: approval.id,
      ...(approval.result != null ? { result: approval.result } : {}),
      ...(approval.error ? { error: approval.error } : {}),
    };
  }
  if (!results.has(base.toolCallId)) return { ...base, status: 'FAILED', error: 'No result was recorded' };
  const outcome = outcomeOf(results.get(base.toolCallId));
  return { ...base, status: outcome.error !== undefined ? 'FAILED' : 'COMPLETED', ...outcome };
}

export const pendingApprovalViewOf = (a: ApprovalRow) => ({
  id: a.id,
  toolName: a.toolName,
  input: a.input,
  summary: approvalSummary(a.toolName, a.input),
  createdAt: a.createdAt.toISOString(),
});

export const approvalViewOf = (a: ApprovalRow) => ({
  ...pendingApprovalViewOf(a),
  status: a.status,
  result: a.result ?? null,
  error: a.error,
  decidedAt: a.decidedAt?.toISOString() ?? null,
});
