import { DAY_MS } from '../../shared/clock.ts';
import type { WarmupDomainRow } from './warmup.repository.ts';

/** Mails a day in weeks 1 to 5 (docs/outreach.md "Warmup domains"). */
export const WEEKLY_VOLUMES = [5, 10, 25, 50, 100] as const;
export const WARMUP_DAYS = WEEKLY_VOLUMES.length * 7;

/** Rates above these auto-pause a domain (fractions: 10 % and 0.5 %). */
export const LIMITS = { bounceRate: 0.1, spamRate: 0.005 } as const;

export const SCHEDULE = WEEKLY_VOLUMES.map((dailyVolume, i) => ({
  week: i + 1,
  days: `${i * 7 + 1}-${i * 7 + 7}`,
  dailyVolume,
}));

export const volumeOf = (day: number): number => WEEKLY_VOLUMES[Math.floor((day - 1) / 7)] ?? 0;

/** Days since the epoch, in UTC. */
export const utcDay = (at: Date): number => Math.floor(at.getTime() / DAY_MS);
export const utcDate = (at: Date): string => at.toISOString().slice(0, 10);

/**
 * The schedule day `at` falls on: UTC days since the start, less the days spent paused. A paused domain stays on
 * the day it was paused; null before the start.
 */
export function scheduleDay(row: WarmupDomainRow, at: Date): number | null {
  if (!row.startedAt) return null;
  const until = row.status === 'WARMING' || !row.pausedAt ? at : row.pausedAt;
  const day = utcDay(until) - utcDay(row.startedAt) - row.pausedDays + 1;
  return Math.max(1, row.status === 'COMPLETED' ? Math.min(day, WARMUP_DAYS) : day);
}

/**
 * Days a pause from `pausedAt` to `resumedAt` adds to `pausedDays`: the UTC days it covered, less the pause day
 * itself when that day's mail was already sent (so the next day goes on with the next schedule day).
 */
export function pausedDaysOf(pausedAt: Date, resumedAt: Date, pauseDaySent: boolean): number {
  return Math.max(0, utcDay(resumedAt) - utcDay(pausedAt) - (pauseDaySent ? 1 : 0));
}

/** The first rate over its limit, named; null when both are within them. */
export function overLimit(rates: { bounceRate: number | null; spamRate: number | null }): string | null {
  if (rates.bounceRate !== null && rates.bounceRate > LIMITS.bounceRate)
    return `bounce rate ${pct(rates.bounceRate)} is above ${pct(LIMITS.bounceRate)}`;
  if (rates.spamRate !== null && rates.spamRate > LIMITS.spamRate)
    return `spam rate ${pct(rates.spamRate)} is above ${pct(LIMITS.spamRate)}`;
  return null;
}

const pct = (rate: number) => `${Number((rate * 100).toFixed(2))} %`;
