import { z } from 'zod';
import { validationError } from './errors.ts';
import { isUuid } from './ids.ts';

/** Cursor pagination (docs/api.md, API conventions): `limit` + opaque `cursor` → `nextCursor` (null at the end). */
export const paginationQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(50),
  cursor: z.string().max(200).optional(),
});

/** `nextCursor` of every list answer (one named schema in the OpenAPI document, so clients share the type). */
export const nextCursor = z
  .string()
  .nullable()
  .meta({ id: 'NextCursor', description: 'Pass as `cursor` to get the next page; null on the last page' });

export const encodeCursor = (id: string): string => Buffer.from(id, 'utf8').toString('base64url');

/** The id a cursor stands for; a cursor that isn't one of ours is a 400 naming `cursor`. */
export function decodeCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!isUuid(id)) throw validationError('cursor', 'invalid cursor');
  return id;
}

/** Given `limit + 1` rows fetched in order, the page and the cursor to the next one. */
export function pageOf<T extends { id: string }>(rows: T[], limit: number): { items: T[]; nextCursor: string | null } {
  if (rows.length <= limit) return { items: rows, nextCursor: null };
  const items = rows.slice(0, limit);
  return { items, nextCursor: encodeCursor(items[items.length - 1]!.id) };
}

/** A composite keyset cursor (sort value + id, …): opaque base64url JSON. */
export const encodeJsonCursor = (value: unknown): string =>
  Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

/**
 * The value a composite cursor stands for, checked by `schema` (which should bound every value to
 * what its column can hold, so the query cannot fail on it); anything else is a 400 naming `cursor`.
 */
export function decodeJsonCursor<T>(cursor: string | undefined, schema: z.ZodType<T>): T | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw validationError('cursor', 'invalid cursor');
  }
  const result = schema.safeParse(parsed);
  if (!result.success) throw validationError('cursor', 'invalid cursor');
  return result.data;
}
