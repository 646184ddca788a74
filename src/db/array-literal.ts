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
