/**
 * Enrichment (docs/professional-network.md): a lead's title, company, location and profile URL read from its
 * profile page, loaded in a cloud-browser session of the lead's owner that carries the credential's cookie. One
 * lead answers at once; several are a pg-boss job that goes one profile at a time at a human pace (a least delay
 * plus random jitter), spends one request of the credential's daily allowance per profile, and stops at the first
 * challenge or rejected login, marking the credential.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Browser } from 'playwright-core';
import type { AppDeps } from '../../deps.ts';
import { QUEUES } from '../../queue/queues.ts';
import { AppError, notFound, validationError } from '../../shared/errors.ts';
import { storedId } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { newWorkerId, staleBefore } from '../../shared/recovery-sweep.ts';
import { withServiceSession } from '../browser/index.ts';
import { createLeadService, LEAD_LIMITS, mergeLeadCustomFields } from '../leads/index.ts';
import { createCredentials, type OpenCredential } from './credentials.ts';
import { type EnrichJobRow, networkRepository } from './network.repository.ts';
import type { EnrichInput, EnrichOneView, JobDetailView, JobView, ListQuery } from './network.schemas.ts';
import { type PageVerdict, type ProfileData, profileUrlOf, readProfile, verdictOf } from './profile-page.ts';

/** The message of an enrichment job (QUEUES.networkEnrich). */
export interface NetworkEnrichMessage {
  jobId: string;
}

const PAGE_TIMEOUT_MS = 30_000;

const toJobView = (row: EnrichJobRow): JobView => ({
  id: row.id,
  status: row.status,
  credentialId: row.credentialId,
  total: row.leadIds.length,
  processed: row.processed,
  enriched: row.enriched,
  failed: row.failed,
  progress: row.leadIds.length ? Math.floor((row.processed * 100) / row.leadIds.length) : 100,
  stopReason: row.stopReason,
  createdAt: row.createdAt.toISOString(),
  startedAt: row.startedAt?.toISOString() ?? null,
  finishedAt: row.finishedAt?.toISOString() ?? null,
});

/** Loads a profile in the session with the credential's cookie: what the network answered, and the page's data. */
async function loadProfile(
  browser: Browser,
  base: string,
  credential: OpenCredential,
  url: string,
): Promise<{ verdict: PageVerdict; profile?: ProfileData }> {
  const context = browser.contexts()[0] ?? (await browser.newContext());
  // Bound to the network's own address (host-only, secure on https), as its login would have set it.
  await context.addCookies([{ name: credential.cookieName, value: credential.cookie, url: base, httpOnly: true }]);
  const page = await context.newPage();
  try {
    const response = await page.goto(url, { waitUntil: 'domcontentloaded', timeout: PAGE_TIMEOUT_MS });
    const verdict = verdictOf(response?.status() ?? 0, page.url());
    if (verdict.kind !== 'ok') return { verdict };
    return { verdict, profile: readProfile(await page.content()) };
  } finally {
    await page.close().catch(() => {});
  }
}

export function createEnricher(deps: AppDeps) {
  const repo = networkRepository(deps.db);
  const credentials = createCredentials(deps);
  const leads = createLeadService(deps);
  const base = new URL(deps.config.LINKEDIN_BASE_URL).origin;
  const pace = () => deps.config.LINKEDIN_DELAY_MS + Math.random() * deps.config.LINKEDIN_JITTER_MS;
  const workerId = newWorkerId();
  /** The jobs running here, each with the controller that ends its run (shutdown). */
  const running = new Map<string, AbortController>();
  let stopping = false;

  /** The lead and the profile URL to read for it, or why there is none. */
  async function targetOf(userId: string, leadId: string, profileUrl?: string) {
    const lead = await leads.get(userId, leadId);
    const fields = lead.customFields as Record<string, unknown>;
    const candidates =
      profileUrl !== undefined ? [profileUrl] : [fields.profileUrl, fields.linkedinUrl, lead.sourceUrl];
    for (const candidate of candidates) {
      if (typeof candidate !== 'string' || !candidate) continue;
      const parsed = profileUrlOf(candidate, base);
      if ('url' in parsed) return { lead, url: parsed.url };
      if (profileUrl !== undefined) throw validationError('profileUrl', parsed.error);
    }
    return { lead, url: undefined };
  }

  /** Writes what the profile says into the lead (fields it does not say are left as they are). */
  async function apply(userId: string, leadId: string, url: string, profile: ProfileData) {
    const patch: { jobTitle?: string; company?: string } = {};
    // Within the limits the leads API holds them to.
    if (profile.title) patch.jobTitle = profile.title.slice(0, LEAD_LIMITS.jobTitle);
    if (profile.company) patch.company = profile.company.slice(0, LEAD_LIMITS.company);
    if (Object.keys(patch).length) await leads.update(userId, leadId, patch);
    const fields: Record<string, string> = { profileUrl: url };
    if (profile.location) fields.location = profile.location;
    await mergeLeadCustomFields(deps.db, userId, [{ id: leadId, fields }], deps.clock.now());
    const lead = await leads.get(userId, leadId);
    return {
      id: lead.id,
      jobTitle: lead.jobTitle,
      company: lead.company,
      location: typeof lead.customFields.location === 'string' ? lead.customFields.location : null,
      profileUrl: url,
    };
  }

  /** A challenge or a rejected login marks the credential; answers the reason. */
  async function markIfBlocked(credentialId: string, verdict: PageVerdict): Promise<string | undefined> {
    if (verdict.kind !== 'challenge' && verdict.kind !== 'rejected') return undefined;
    await credentials.mark(credentialId, verdict.kind, verdict.reason);
    return `${verdict.reason}: the credential is now ${verdict.kind === 'challenge' ? 'SOFT_BANNED' : 'INVALID'}`;
  }

  return {
    async enrichOne(userId: string, input: EnrichInput): Promise<EnrichOneView> {
      const credential = await credentials.pick(userId, input.credentialId);
      const { url } = await targetOf(userId, input.leadId!, input.profileUrl);
      if (!url) {
        throw validationError(
          'profileUrl',
          'the lead has no profile URL: give one, or set its customFields.profileUrl',
        );
      }
      const loaded = await withServiceSession(deps, userId, { purpose: 'linkedin.enrich' }, async (browser) => {
        const open = await credentials.spend(credential.id);
        if (!open) {
          // Its last request went to another enrichment meanwhile: the same refusal as before the start.
          await credentials.pick(userId, credential.id);
          throw new AppError('RATE_LIMIT_EXCEEDED', 'The credential has no requests left today');
        }
        return loadProfile(browser, base, open, url);
      });
      const blocked = await markIfBlocked(credential.id, loaded.verdict);
      if (blocked) throw new AppError('PLATFORM_ERROR', blocked);
      if (loaded.verdict.kind === 'not_found') throw notFound('Profile', 'profileUrl');
      if (loaded.verdict.kind !== 'ok' || !loaded.profile) {
        throw new AppError('PLATFORM_ERROR', loaded.verdict.kind === 'error' ? loaded.verdict.reason : 'no profile');
      }
      const lead = await apply(userId, input.leadId!, url, loaded.profile);
      return { lead, profile: loaded.profile, credential: await credentials.view(userId, credential.id) };
    },

    async startJob(userId: string, input: EnrichInput): Promise<JobView> {
      const credential = await credentials.pick(userId, input.credentialId);
      const leadIds = [...new Set(input.leadIds!.map((id) => id.toLowerCase()))];
      const at = deps.clock.now();
      const row = await repo.insertJob({ userId, credentialId: credential.id, leadIds, createdAt: at, updatedAt: at });
      await deps.boss.send(QUEUES.networkEnrich, { jobId: row.id } satisfies NetworkEnrichMessage);
      return toJobView(row);
    },

    async listJobs(userId: string, query: ListQuery) {
      const rows = await repo.listJobs(userId, decodeCursor(query.cursor), query.limit);
      const { items, nextCursor } = pageOf(rows, query.limit);
      return { jobs: items.map(toJobView), nextCursor };
    },

    async getJob(userId: string, id: string): Promise<JobDetailView> {
      const key = storedId(id);
      const row = key ? await repo.findJob(key, userId) : undefined;
      if (!row) throw notFound('Enrichment job');
      return { ...toJobView(row), results: row.results };
    },

    /**
     * The worker: claims the job (PENDING, or RUNNING under a dead worker) and runs it from where it stands (a job
     * taken over resumes after its last recorded lead). It beats while it runs (at each lead, and on a timer through
     * the pace delay and a slow page), and stops at once when the job is no longer its own.
     */
    async run(jobId: string): Promise<void> {
      if (stopping) return;
      const now = deps.clock.now();
      const job = await repo.claimJob(jobId, workerId, now, staleBefore(now, deps.config.LINKEDIN_JOB_STALE_MS));
      if (!job) return; // finished, deleted, or held by a live worker
      const { userId, credentialId } = job;
      const log = deps.logger.child({ jobId, workerId });
      const controller = new AbortController();
      running.set(job.id, controller);
      let lost = false;
      /** Stopped by the shutdown of this process: the job goes back to the queue. */
      let interrupted = false;
      const beat = setInterval(() => {
        repo
          .heartbeat(job.id, workerId, deps.clock.now())
          .then((held) => void (lost ||= !held))
          .catch((err) => log.warn({ err }, 'enrichment heartbeat failed'));
      }, deps.config.LINKEDIN_JOB_HEARTBEAT_MS);
      beat.unref();
      const record = async (at: number, leadId: string, status: 'ENRICHED' | 'FAILED' | 'SKIPPED', error?: string) => {
        const result = { leadId, status, ...(error ? { error } : {}) };
        lost ||= !(await repo.recordResult(job.id, workerId, at, result, deps.clock.now()));
      };
      let end: { status: 'COMPLETED' | 'STOPPED' | 'FAILED'; reason: string | null } = {
        status: 'COMPLETED',
        reason: null,
      };
      try {
        if (!credentialId) throw new Error('its credential was deleted');
        await withServiceSession(deps, userId, { purpose: 'linkedin.enrich', jobId: job.id }, async (browser) => {
          let requested = false;
          for (let at = job.processed; at < job.leadIds.length && !lost; at++) {
            if (stopping) return void (interrupted = true);
            const leadId = job.leadIds[at]!;
            const target = await targetOf(userId, leadId).catch(() => undefined);
            if (!target) {
              await record(at, leadId, 'SKIPPED', 'not one of your leads');
              continue;
            }
            if (!target.url) {
              await record(at, leadId, 'SKIPPED', 'the lead has no profile URL');
              continue;
            }
            if (requested) await sleep(pace(), undefined, { signal: controller.signal }).catch(() => {});
            if (stopping) interrupted = true;
            if (lost || stopping) return;
            const open = await credentials.spend(credentialId);
            if (!open) {
              const status = await credentials.whyRefused(userId, credentialId);
              end = {
                status: 'STOPPED',
                reason:
                  status === 'RATE_LIMITED' || status === 'ACTIVE'
                    ? 'the credential has used its requests of today (RATE_LIMITED)'
                    : `the credential can no longer be used (${status})`,
              };
              return;
            }
            requested = true;
            const loaded = await loadProfile(browser, base, open, target.url);
            const blocked = await markIfBlocked(credentialId, loaded.verdict);
            if (blocked) {
              await record(at, leadId, 'FAILED', blocked);
              end = { status: 'STOPPED', reason: blocked };
              return;
            }
            if (loaded.verdict.kind !== 'ok' || !loaded.profile) {
              await record(at, leadId, 'FAILED', 'reason' in loaded.verdict ? loaded.verdict.reason : 'no profile');
              continue;
            }
            // Taken over meanwhile: the lead is the new worker's. (A shutdown lets the lead in hand finish.)
            if (lost) return;
            try {
              await apply(userId, leadId, target.url, loaded.profile);
              await record(at, leadId, 'ENRICHED');
            } catch (err) {
              await record(at, leadId, 'FAILED', err instanceof AppError ? err.message : 'the lead was not updated');
            }
          }
        });
      } catch (err) {
        // An error while this process shuts down (its browsers closing) is no failure of the job.
        interrupted ||= stopping;
        if (!interrupted) log.warn({ err }, 'a professional-network enrichment job failed');
        end = { status: 'FAILED', reason: err instanceof AppError ? err.message : (err as Error).message };
      } finally {
        clearInterval(beat);
        running.delete(job.id);
      }
      if (lost) log.warn('the enrichment job is no longer run here (taken over or deleted)');
      else if (interrupted && (await repo.releaseJob(job.id, workerId, deps.clock.now())))
        // Handed back: another worker (or the next start) resumes it after its last recorded lead.
        await deps.boss.send(QUEUES.networkEnrich, { jobId } satisfies NetworkEnrichMessage).catch(() => {});
      else await repo.finishJob(job.id, workerId, end.status, end.reason, deps.clock.now());
    },

    /**
     * Shutdown: the jobs running here finish the lead in hand, stop before the next one (or in the pace delay) and go
     * back to the queue; a job still running after 5 s is taken over once its heartbeat goes stale.
     */
    async stop(): Promise<void> {
      stopping = true;
      for (const controller of running.values()) controller.abort();
      const deadline = Date.now() + 5_000;
      while (running.size > 0 && Date.now() < deadline) await sleep(50);
    },
  };
}

export type Enricher = ReturnType<typeof createEnricher>;
