/**
 * A route tool's MCP definition from its route's zod schemas: the input is the path parameters, the query and
 * the body's fields side by side (one flat object, as a model writes arguments), the output is the route's
 * `data`. `argumentsToRequest` undoes the merge: each argument goes back where its route reads it.
 */
import { z } from 'zod';
import type { CatalogRoute } from './mcp.catalog.ts';
import type { RouteTool, ToolAnnotations } from './mcp.tools.ts';

type JsonSchema = Record<string, unknown> & {
  type?: unknown;
  properties?: Record<string, unknown>;
  required?: string[];
  $defs?: Record<string, unknown>;
};

export interface ToolDefinition {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema & { type: 'object' };
  outputSchema?: JsonSchema & { type: 'object' };
  annotations: ToolAnnotations & { title: string };
}

export type ArgumentPart = 'params' | 'querystring' | 'body';

export interface ToolPlan {
  tool: RouteTool;
  route: CatalogRoute;
  definition: ToolDefinition;
  /** Which part of the request each argument belongs to. */
  parts: Map<string, ArgumentPart>;
  /** The body is not an object of fields (a list, a union): the tool takes it whole as `body`. */
  wholeBody: boolean;
  /** `data` of the answer is not an object: structured content wraps it as `{ result }`. */
  wrapResult: boolean;
}

/** JSON Schema of a zod schema; a named schema at the root (`.meta({ id })` gives `$ref` + `$defs`) is inlined there. */
const toJson = (schema: z.ZodType, io: 'input' | 'output'): JsonSchema => {
  const { $schema: _drop, ...json } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  const ref = typeof json.$ref === 'string' ? /^#\/\$defs\/(.+)$/.exec(json.$ref)?.[1] : undefined;
  if (!ref || !json.$defs?.[ref]) return json;
  const { $ref: _ref, $defs, ...rest } = json;
  const { [ref]: root, ...others } = $defs as Record<string, JsonSchema>;
  // The root may still be referred to from inside (a recursive schema): keep it under its name then.
  const stillUsed =
    JSON.stringify(others).includes(`#/$defs/${ref}"`) || JSON.stringify(root).includes(`#/$defs/${ref}"`);
  const defs = stillUsed ? $defs : others;
  return { ...rest, ...root, ...(Object.keys(defs).length ? { $defs: defs } : {}) };
};

const isFieldObject = (json: JsonSchema) => json.type === 'object' && json.properties !== undefined;

/** The route answer's `data` schema, if it has one (`successOnly` answers have none). */
function dataSchema(success: z.ZodType | undefined): z.ZodType | undefined {
  const shape = (success as { shape?: Record<string, z.ZodType> } | undefined)?.shape;
  return shape?.data;
}

export function planTool(tool: RouteTool, route: CatalogRoute): ToolPlan {
  const parts = new Map<string, ArgumentPart>();
  const properties: Record<string, unknown> = {};
  const required = new Set<string>();
  let defs: Record<string, unknown> = {};
  let wholeBody = false;
  const fixed = new Set(Object.keys(tool.fixed ?? {}));
  for (const part of ['params', 'querystring', 'body'] as const) {
    const schema = route[part];
    if (!schema) continue;
    const json = toJson(schema, 'input');
    defs = { ...defs, ...json.$defs };
    if (part === 'body' && !isFieldObject(json)) {
      wholeBody = true;
      const { $defs: _defs, ...bodySchema } = json;
      properties.body = bodySchema;
      required.add('body');
      continue;
    }
    for (const [name, property] of Object.entries(json.properties ?? {})) {
      if (fixed.has(name)) continue;
      if (parts.has(name)) throw new Error(`MCP tool ${tool.name}: argument ${name} is in two parts of its route`);
      parts.set(name, part);
      properties[name] = property;
    }
    for (const name of json.required ?? []) if (!fixed.has(name)) required.add(name);
  }
  const inputSchema: ToolDefinition['inputSchema'] = { type: 'object', properties };
  if (required.size) inputSchema.required = [...required];
  if (Object.keys(defs).length) inputSchema.$defs = defs;

  const data = dataSchema(route.success);
  let outputSchema: ToolDefinition['outputSchema'];
  let wrapResult = false;
  if (data && !tool.image) {
    const json = toJson(data, 'output');
    if (json.type === 'object') outputSchema = json as ToolDefinition['outputSchema'];
    else {
      wrapResult = true;
      const { $defs, ...result } = json;
      outputSchema = { type: 'object', properties: { result }, required: ['result'], ...($defs ? { $defs } : {}) };
    }
  }
  const description = [route.summary, tool.hint, route.description].filter(Boolean).join('\n\n');
  return {
    tool,
    route,
    parts,
    wholeBody,
    wrapResult,
    definition: {
      name: tool.name,
      title: tool.title,
      description,
      inputSchema,
      ...(outputSchema ? { outputSchema } : {}),
      annotations: { title: tool.title, ...tool.annotations },
    },
  };
}

export type RouteRequest =
  | {
      method: string;
      url: string;
      body?: unknown;
      /** The path parameters and the query as the route reads them (Fastify's parse of `url`). */
      params: Record<string, string>;
      query: Record<string, string | string[]>;
    }
  | { invalid: string };

/**
 * The route request a tool call makes. Path parameters are encoded into the path; unknown arguments go to the body
 * (or the query of a body-less route) so the route's own validation names them.
 */
export function argumentsToRequest(plan: ToolPlan, args: Record<string, unknown>): RouteRequest {
  const all = { ...args, ...plan.tool.fixed };
  const search = new URLSearchParams();
  const params: Record<string, string> = {};
  // As Fastify's querystring parser answers: a name given once is a string, given more often an array.
  const query: Record<string, string | string[]> = Object.create(null);
  let body: Record<string, unknown> | undefined = plan.route.body && !plan.wholeBody ? {} : undefined;
  let url = plan.route.url;
  for (const [name, value] of Object.entries(all)) {
    if (value === undefined) continue;
    if (plan.wholeBody && name === 'body') {
      body = value as Record<string, unknown>;
      continue;
    }
    const part = plan.parts.get(name) ?? (body ? 'body' : 'querystring');
    if (part === 'params') {
      const segment = String(value);
      // `.` and `..` survive encodeURIComponent and would move the call to another route: no id is spelled so.
      if (segment === '' || segment === '.' || segment === '..') return { invalid: name };
      url = url.replace(`:${name}`, encodeURIComponent(segment));
      params[name] = segment;
    } else if (part === 'querystring') {
      const items = (Array.isArray(value) ? value : [value]).map(String);
      for (const item of items) search.append(name, item);
      if (items.length) query[name] = items.length === 1 ? items[0]! : items;
    } else if (body) body[name] = value;
  }
  const qs = search.toString();
  return { method: plan.route.method, url: qs ? `${url}?${qs}` : url, body, params, query };
}
