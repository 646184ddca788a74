/** The MCP SDK's own client, connected to a running Quarry over Streamable HTTP with an API key. */
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

/** The text of a tool result's first content block. */
export const textOf = (result: { content?: unknown }): string =>
  ((result.content as Array<{ type: string; text?: string }>)[0]?.text ?? '') as string;
