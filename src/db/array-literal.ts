import { type AnyColumn, type SQL, sql } from 'drizzle-orm';

/**
 * A PostgreSQL array literal of `items`, bound as ONE parameter (drizzle's `sql` spreads a JS array into one
 * parameter per element): strings quoted and escaped, numbers as they are, null and undefined as NULL.
 */
export const arrayLiteral = (items: ReadonlyArray<string | number | null | undefined>): string =>
  `{${items
    .map((x) =>
      x === null || x === undefined
        ? 'NULL'
        : typeof x === 'number'
          ? String(x)
          : `"${x.replace(/[\\"]/g, (c) => `\\${c}`)}"`,
    )
    .join(',')}}`;

/**
 * `column = ANY(values)` with the values as ONE array parameter of `type`: drizzle's `inArray` binds one parameter
 * per value, which costs the service more than the query itself for the batches of a thousand the sequencer reads
 * and writes. Uses the same indexes as `IN`.
 */
export const equalsAny = (column: AnyColumn | SQL, values: readonly string[], type: 'uuid' | 'text'): SQL =>
  sql`${column} = ANY(${arrayLiteral(values)}::${sql.raw(type)}[])`;

/** `column = ANY(ids)` for uuid columns (see `equalsAny`). */
export const inUuids = (column: AnyColumn | SQL, ids: readonly string[]): SQL => equalsAny(column, ids, 'uuid');
