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
  const jsonSchema = z.toJSONSchema(schema, { io: 'output', target: 'draft-7', unrepresentable: 'any' });
  delete (jsonSchema as { $schema?: string }).$schema;
  return fastJson(jsonSchema as Parameters<typeof fastJson>[0]) as (data: unknown) => string;
};
