/**
 * CSV (RFC 4180) writing and reading, shared by every export.
 *
 * - Fields holding a comma, a double quote, CR or LF are quoted; inner quotes are doubled.
 * - Lines end with CRLF.
 * - Text cells that a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, tab or
 *   CR) are prefixed with `'` (OWASP "CSV injection"). Numbers are written as they are.
 * - null/undefined → empty; Date → ISO 8601; arrays and objects → JSON.
 */

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

export interface CsvOptions {
  /** Neutralise spreadsheet formulas (default true). */
  escapeFormulas?: boolean;
}

/** One cell's text, quoted when needed. */
export function csvCell(value: unknown, options: CsvOptions = {}): string {
  let text: string;
  if (value === null || value === undefined) return '';
  if (typeof value === 'bigint') return String(value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  if (typeof value === 'boolean') text = value ? 'true' : 'false';
  else if (value instanceof Date) text = Number.isNaN(value.getTime()) ? '' : value.toISOString();
  else if (typeof value === 'object') text = JSON.stringify(value);
  else text = String(value);
  if ((options.escapeFormulas ?? true) && FORMULA_START.test(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One record, CRLF-terminated. */
export const csvRow = (values: readonly unknown[], options?: CsvOptions): string =>
  `${values.map((v) => csvCell(v, options)).join(',')}\r\n`;

/** A column: a key of the row, or a header with a function reading the value. */
export type CsvColumn<T> = (keyof T & string) | { header: string; value: (row: T) => unknown };

export interface ToCsvOptions extends CsvOptions {
  /** Prefix a UTF-8 byte-order mark so Excel reads the file as UTF-8. */
  bom?: boolean;
}

/** A header line and one line per row. */
export function toCsv<T>(columns: readonly CsvColumn<T>[], rows: Iterable<T>, options: ToCsvOptions = {}): string {
  const headers = columns.map((c) => (typeof c === 'string' ? c : c.header));
  const readers = columns.map((c) => (typeof c === 'string' ? (row: T) => row[c as keyof T] : c.value));
  // Headers go through the same escaping: some are user-defined (custom field names).
  let out = (options.bom ? '\uFEFF' : '') + csvRow(headers, options);
  for (const row of rows)
    out += csvRow(
      readers.map((read) => read(row)),
      options,
    );
  return out;
}

/** Parses RFC 4180 text into records (arrays of strings); accepts CRLF or LF line ends. */
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  for (; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else field += ch;
    } else if (ch === '"' && field === '') quoted = true;
    else if (ch === ',') {
      record.push(field);
      field = '';
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      record.push(field);
      records.push(record);
      record = [];
      field = '';
    } else field += ch;
  }
  if (field !== '' || record.length) {
    record.push(field);
    records.push(record);
  }
  return records;
}

/** Records as objects keyed by the header line. */
export function parseCsvObjects(text: string): Record<string, string>[] {
  const [header, ...rows] = parseCsv(text);
  if (!header) return [];
  return rows.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i] ?? ''])));
}
