/**
 * The analytics figures (README "Analytics") recomputed in plain TypeScript from a model of the seeded
 * rows, so the tests compare the service's SQL against an independent reckoning.
 */
import type { LeadStatus } from '../../src/db/schema/index.ts';

export interface ModelLead {
  id: string;
  day: string;
  status: LeadStatus;
  email: boolean;
  validation?: 'valid' | 'risky' | 'invalid' | 'unknown';
  validatedDay?: string;
  source: string | null;
  project: string | null;
}

export interface ModelJob {
  source: string;
  project: string | null;
  status: 'PENDING' | 'RUNNING' | 'COMPLETED' | 'FAILED' | 'CANCELLED';
  createdAt: Date;
  startedAt?: Date;
  finishedAt?: Date;
  leadsFound: number;
  pages: number;
}

export interface Window {
  from?: string;
  to?: string;
  project?: string;
}

const STAGES: Record<string, LeadStatus[]> = {
  contacted: ['CONTACTED', 'REPLIED', 'QUALIFIED', 'DISQUALIFIED', 'CONVERTED', 'UNSUBSCRIBED'],
  replied: ['REPLIED', 'QUALIFIED', 'DISQUALIFIED', 'CONVERTED'],
  qualified: ['QUALIFIED', 'CONVERTED'],
  converted: ['CONVERTED'],
};

const within = (day: string, w: Window) => (!w.from || day >= w.from) && (!w.to || day <= w.to);
const inProject = (project: string | null, w: Window) => !w.project || project === w.project;
export const dayOf = (d: Date) => d.toISOString().slice(0, 10);
export const addDays = (day: string, n: number) => dayOf(new Date(Date.parse(`${day}T00:00:00Z`) + n * 86_400_000));
/** a ÷ b rounded to `places` decimals; null when b is 0. */
export const ratio = (a: number, b: number, places = 4) =>
  b === 0 ? null : Math.round((a / b) * 10 ** places + 1e-9) / 10 ** places;

export function pipeline(leads: ModelLead[], w: Window) {
  const chosen = leads.filter((l) => within(l.day, w) && inProject(l.project, w));
  const byStatus: Record<string, number> = {};
  for (const l of chosen) byStatus[l.status] = (byStatus[l.status] ?? 0) + 1;
  const total = chosen.length;
  const counts = Object.fromEntries(
    Object.entries(STAGES).map(([stage, statuses]) => [
      stage,
      chosen.filter((l) => statuses.includes(l.status)).length,
    ]),
  );
  const order = ['total', 'contacted', 'replied', 'qualified', 'converted'];
  const leadsOf = (stage: string) => (stage === 'total' ? total : counts[stage]!);
  const funnel = order.map((stage, i) => ({
    stage,
    leads: leadsOf(stage),
    rateFromPrevious: i === 0 ? null : ratio(leadsOf(stage), leadsOf(order[i - 1]!)),
    rateFromTotal: ratio(leadsOf(stage), total),
  }));
  const withEmail = chosen.filter((l) => l.email).length;
  const validated = chosen.filter((l) => l.validation).length;
  const results = Object.fromEntries(
    (['valid', 'risky', 'invalid', 'unknown'] as const).map((v) => {
      const n = chosen.filter((l) => l.validation === v).length;
      return [v, { leads: n, rate: ratio(n, validated) }];
    }),
  );
  return {
    totalLeads: total,
    byStatus,
    funnel,
    emailValidation: { withEmail, validated, validatedRate: ratio(validated, withEmail), results },
  };
}

export function activity(leads: ModelLead[], jobs: ModelJob[], w: Required<Omit<Window, 'project'>> & Window) {
  const days: Array<Record<string, unknown>> = [];
  for (let day = w.from; day <= w.to; day = addDays(day, 1)) {
    const mine = leads.filter((l) => inProject(l.project, w));
    const finished = jobs.filter((j) => inProject(j.project, w) && j.finishedAt && dayOf(j.finishedAt) === day);
    days.push({
      date: day,
      leadsCreated: mine.filter((l) => l.day === day).length,
      leadsValidated: mine.filter((l) => l.validation && l.validatedDay === day).length,
      jobsCompleted: finished.filter((j) => j.status === 'COMPLETED').length,
      jobsFailed: finished.filter((j) => j.status === 'FAILED').length,
    });
  }
  return days;
}

export function sourceFigures(source: string, leads: ModelLead[], jobs: ModelJob[], w: Window) {
  const runs = jobs.filter(
    (j) =>
      j.source === source &&
      ['COMPLETED', 'FAILED', 'CANCELLED'].includes(j.status) &&
      j.finishedAt &&
      within(dayOf(j.finishedAt), w),
  );
  const of = (s: string) => runs.filter((j) => j.status === s);
  const completed = of('COMPLETED');
  const leadsFound = runs.reduce((n, j) => n + j.leadsFound, 0);
  const pages = runs.reduce((n, j) => n + j.pages, 0);
  const seconds = completed.map((j) => (j.finishedAt!.getTime() - j.startedAt!.getTime()) / 1000);
  return {
    leads: leads.filter((l) => l.source === source && within(l.day, w)).length,
    runs: {
      finished: runs.length,
      completed: completed.length,
      failed: of('FAILED').length,
      cancelled: of('CANCELLED').length,
    },
    successRate: ratio(completed.length, completed.length + of('FAILED').length),
    leadsFound,
    leadsPerRun: ratio(leadsFound, runs.length, 2),
    leadsPerPage: ratio(leadsFound, pages),
    avgRunSeconds: seconds.length ? Math.round((seconds.reduce((a, b) => a + b, 0) / seconds.length) * 10) / 10 : null,
  };
}

/** Runs the scheduler starts in [now, now + 24 h), simulated tick by tick of its period arithmetic. */
export function plannedRuns(nextRunAt: Date, periodMs: number, now: Date): number {
  const horizon = now.getTime() + 86_400_000;
  let t = nextRunAt.getTime();
  let runs = 0;
  if (t <= now.getTime()) {
    runs = 1; // started at the next tick; the next run is the first period boundary after now
    t += periodMs * (Math.floor((now.getTime() - t) / periodMs) + 1);
  }
  for (; t < horizon; t += periodMs) runs++;
  return runs;
}

/** Least-squares slope of `ys` against 1, 2, 3… */
export function slope(ys: number[]): number | null {
  const n = ys.length;
  if (n < 2) return null;
  const xs = ys.map((_, i) => i + 1);
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  const sxy = xs.reduce((s, x, i) => s + (x - mx) * (ys[i]! - my), 0);
  const sxx = xs.reduce((s, x) => s + (x - mx) ** 2, 0);
  return sxy / sxx;
}
