import { validate, version } from 'uuid';
import { notFound } from './errors.ts';

export { newId } from '../db/ids.ts';

/** True when `value` is a UUID the database can compare without a cast error. */
export const isUuid = (value: unknown): value is string =>
  typeof value === 'string' && validate(value) && version(value) <= 8;

/** A client-supplied id in the form the database stores (lower case), or undefined when it cannot name a row. */
export const storedId = (value: unknown): string | undefined => (isUuid(value) ? value.toLowerCase() : undefined);

/**
 * The one guard for ids that come from clients: an id that is not a UUID names nothing (404, never a
 * database cast error); otherwise `find` runs on its stored form, and a miss is a 404 too. `field` names
 * the body field for ids that arrive in a body.
 */
export async function findOwned<T>(
  id: unknown,
  what: string,
  find: (id: string) => Promise<T | undefined | null | false>,
  field?: string,
): Promise<Exclude<T, undefined | null | false>> {
  const key = storedId(id);
  const row = key === undefined ? undefined : await find(key);
  if (!row) throw notFound(what, field);
  return row as Exclude<T, undefined | null | false>;
}
