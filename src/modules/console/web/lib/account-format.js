// Number formats of the account pages (webhooks, credits, analytics, organizations): figures as the en-US reader
// writes them, rates as percentages, missing values as a dash.

const numbers = new Intl.NumberFormat('en-US');
const decimals = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });

/** An integer with thousands separators; a dash for null. */
export const count = (n) => (n === null || n === undefined ? '—' : numbers.format(n));

/** A number with at most 2 decimals; a dash for null. */
export const decimal = (n) => (n === null || n === undefined ? '—' : decimals.format(n));

/** A rate 0–1 as a percentage with at most one decimal; a dash for null. */
export const percent = (r) => (r === null || r === undefined ? '—' : `${decimals.format(Math.round(r * 1000) / 10)} %`);

/** Seconds as "1 h 2 min", "3 min 4 s" or "5.2 s"; a dash for null. */
export function duration(seconds) {
  if (seconds === null || seconds === undefined) return '—';
  if (seconds < 60) return `${decimals.format(Math.round(seconds * 10) / 10)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** Unix seconds (UTC midnight) of a `YYYY-MM-DD` day, the x of a daily chart. */
export const dayToUnix = (day) => Date.parse(`${day}T00:00:00Z`) / 1000;
