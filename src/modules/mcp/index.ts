/**
 * The MCP module's face (docs/CONVENTIONS.md "A module's face"): the Model Context Protocol server over the same
 * routes, for the app (`/mcp`) and the stdio entry point (`npm run mcp`).
 */
export { mcpRoutes } from './mcp.routes.ts';
