/** The MCP SDK's own client, connected to a running Quarry over Streamable HTTP with an API key. */
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export async function connectMcp(
  base: string,
  apiKey: string,
  headers: Record<string, string> = {},
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'quarry-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', base), {
    requestInit: { headers: { authorization: `Bearer ${apiKey}`, ...headers } },
  });
  await client.connect(transport);
  return { client, transport };
}

/** A tool result as the tests read it (the SDK's type also admits a legacy `toolResult` form). */
type ToolAnswer = Record<string, unknown>;

/** The text of a tool result's first content block. */
export const textOf = (result: ToolAnswer): string =>
  ((result.content as Array<{ type: string; text?: string }> | undefined)?.[0]?.text ?? '') as string;

/** The structured content of a successful tool result (fails the test, with the error text, otherwise). */
export function dataOf<T>(result: ToolAnswer): T {
  assert.equal(result.isError, undefined, textOf(result));
  return result.structuredContent as T;
}
