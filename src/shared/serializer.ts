import fastJson from 'fast-json-stringify';
import type { FastifySerializerCompiler } from 'fastify/types/schema.js';
import { z } from 'zod';

/**
 * Response serializer: each route's zod response schema is turned into JSON Schema once and
 * compiled with fast-json-stringify (what Fastify itself uses). Only declared properties are
 * written, so a stray column never leaks, and no zod parse runs per response: on the hot read
 * paths that parse cost as much as the handler. Request validation still uses zod.
 */
export const responseSerializerCompiler: FastifySerializerCompiler<z.ZodType> = ({ schema }) => {
  // Compiled by the first response that uses it: a start does not compile the serializers of some 200 routes and
  // their error statuses, most of which a process never answers (docs/scaling-out.md "Start-up").
  let serialize: ((data: unknown) => string) | undefined;
  const compiled = () => {
    if (!serialize) {
      serialize = compileSerializer(schema);
      pending.delete(compiled);
    }
    return serialize;
  };
  pending.add(compiled);
  return (data: unknown) => compiled()(data);
};

/** Serializers handed to routes and not compiled yet: a test compiles them all at once. */
const pending = new Set<() => unknown>();

/** Compiles every response serializer not compiled yet (of every app built so far); throws the first failure. */
export function compileAllResponseSerializers(): number {
  const all = [...pending];
  for (const compile of all) compile();
  return all.length;
}

function compileSerializer(schema: z.ZodType): (data: unknown) => string {
  const jsonSchema = z.toJSONSchema(schema, { io: 'output', target: 'draft-7', unrepresentable: 'any' });
  delete (jsonSchema as { $schema?: string }).$schema;
  return fastJson(jsonSchema as Parameters<typeof fastJson>[0]) as (data: unknown) => string;
}
