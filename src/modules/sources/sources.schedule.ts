import type { scheduleTypes } from '../../db/schema/index.ts';

export type ScheduleType = (typeof scheduleTypes)[number];

const PERIOD_MS: Record<ScheduleType, number | null> = {
  MANUAL: null,
  HOURLY: 3_600_000,
  DAILY: 86_400_000,
  WEEKLY: 7 * 86_400_000,
};

export const schedulePeriodMs = (type: ScheduleType): number | null => PERIOD_MS[type];

/**
 * When a scheduled source runs next: one period after `from` (activation, a schedule change, or
 * the run just started). MANUAL sources and sources that are not ACTIVE never run by themselves.
 */
export function nextRunAt(type: ScheduleType, status: string, from: Date): Date | null {
  const period = PERIOD_MS[type];
  return period !== null && status === 'ACTIVE' ? new Date(from.getTime() + period) : null;
}
