/**
 * `npm run mcp`: Quarry's MCP server on stdio, for desktop clients that start their servers as child processes.
 * It is a bridge to a running service's `/mcp` (`QUARRY_URL`, default `http://127.0.0.1:$PORT`), authenticated
 * with `QUARRY_API_KEY`: every tool runs in the service, where the database, the workers and the browsers are.
 * (Opening the database here instead would fail on the embedded default: PGlite admits one process.)
 * stdout carries the protocol only; anything said to a person goes to stderr.
 */
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

const apiKey = process.env.QUARRY_API_KEY;
if (!apiKey) {
  console.error('QUARRY_API_KEY is not set: give the API key the tools act as (docs/mcp.md)');
  process.exit(1);
}
const base = process.env.QUARRY_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`;
let endpoint: URL;
try {
  endpoint = new URL('/mcp', base);
} catch {
  console.error(`QUARRY_URL is not a URL: ${base}`);
  process.exit(1);
}

const headers: Record<string, string> = { authorization: `Bearer ${apiKey}` };
if (process.env.QUARRY_CLIENT_REF) headers['x-client-ref'] = process.env.QUARRY_CLIENT_REF;
const upstream = new StreamableHTTPClientTransport(endpoint, { requestInit: { headers } });
const local = new StdioServerTransport();

const isRequest = (message: JSONRPCMessage): message is JSONRPCMessage & { id: string | number; method: string } =>
  'method' in message && 'id' in message;

local.onmessage = (message) => {
  upstream.send(message).catch((err: Error) => {
    console.error(`quarry mcp: ${endpoint.origin} did not answer: ${err.message}`);
    // A request must get an answer, or the client waits for ever.
    if (isRequest(message)) {
      void local.send({
        jsonrpc: '2.0',
        id: message.id,
        error: { code: -32000, message: `Quarry at ${endpoint.origin} did not answer: ${err.message}` },
      });
    }
  });
};
upstream.onmessage = (message) => {
  // What the SDK's Client does after initialize: later requests carry the negotiated version.
  const result = (message as { result?: { protocolVersion?: unknown } }).result;
  if (typeof result?.protocolVersion === 'string') upstream.setProtocolVersion(result.protocolVersion);
  void local.send(message);
};
upstream.onerror = (err) => console.error(`quarry mcp: ${err.message}`);
local.onclose = () => {
  void upstream
    .terminateSession()
    .catch(() => {})
    .finally(() => upstream.close().finally(() => process.exit(0)));
};

await upstream.start();
await local.start();
