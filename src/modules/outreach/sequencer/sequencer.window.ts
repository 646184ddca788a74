import type { SendingWindow } from '../../../db/schema/index.ts';

/**
 * Sending windows (docs/outreach.md "Outreach", Sequencer): local days (1 = Monday … 7 = Sunday) and hours
 * [startHour, endHour) in the campaign's time zone.
 */
const formatters = new Map<string, Intl.DateTimeFormat>();
const WEEKDAYS: Record<string, number> = { Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6, Sun: 7 };

function localParts(at: Date, timeZone: string): { weekday: number; hour: number } {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'short', hour: 'numeric', hourCycle: 'h23' });
    formatters.set(timeZone, format);
  }
  const parts = format.formatToParts(at);
  const weekday = WEEKDAYS[parts.find((p) => p.type === 'weekday')?.value ?? ''] ?? 0;
  const hour = Number(parts.find((p) => p.type === 'hour')?.value ?? 0);
  return { weekday, hour };
}

export function inWindow(at: Date, window: SendingWindow): boolean {
  const { weekday, hour } = localParts(at, window.timezone);
  return window.days.includes(weekday) && hour >= window.startHour && hour < window.endHour;
}

const QUARTER_HOUR = 15 * 60_000;

/** The first moment at or after `from` inside the window (found on quarter hours, so half-hour zones work too). */
export function nextWindowOpening(from: Date, window: SendingWindow): Date {
  if (inWindow(from, window)) return from;
  let t = Math.ceil(from.getTime() / QUARTER_HOUR) * QUARTER_HOUR;
  for (let i = 0; i < 8 * 24 * 4; i++, t += QUARTER_HOUR) {
    if (inWindow(new Date(t), window)) return new Date(t);
  }
  // A window that never opens cannot be saved (days and hours are checked); a day later is a safe answer.
  return new Date(from.getTime() + 86_400_000);
}

export const startOfUtcDay = (at: Date) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
export const startOfNextUtcDay = (at: Date) => new Date(startOfUtcDay(at).getTime() + 86_400_000);
