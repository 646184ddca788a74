import { type ProfileFieldDefinition, type ProfileStatus, profileStatuses } from '../../db/schema/index.ts';
import type { AppDeps } from '../../deps.ts';
import { AppError, type ErrorDetail, notFound } from '../../shared/errors.ts';
import { findOwned, isUuid } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { coerceData, coerceFieldValue, createProfileTypeService, isEmptyValue } from '../profile-types/index.ts';
import { type ProfileRow, type ProfileWithType, profileRepository } from './profiles.repository.ts';
import type { ListProfilesQuery, UpdateProfileInput } from './profiles.schemas.ts';

export const toProfileView = ({ profile: p, type }: ProfileWithType) => ({
  id: p.id,
  profileTypeId: p.profileTypeId,
  profileType: type,
  status: p.status,
  data: p.data,
  sourceId: p.sourceId,
  jobId: p.jobId,
  leadId: p.leadId,
  sourceUrl: p.sourceUrl,
  createdAt: p.createdAt.toISOString(),
  updatedAt: p.updatedAt.toISOString(),
});
export type ProfileView = ReturnType<typeof toProfileView>;

/** One scraped record for `createProfiles`. */
export interface ProfileInput {
  data: unknown;
  sourceId?: string | null;
  jobId?: string | null;
  leadId?: string | null;
  sourceUrl?: string | null;
}

export interface CreateProfilesResult {
  created: ProfileView[];
  /** Items not stored at all: a required field had no usable value, nothing usable was left, or a bad provenance id. */
  skipped: Array<{ index: number; reason: string }>;
  /** Values left out of stored items: unknown keys, or values that did not fit their field. */
  dropped: Array<{ index: number; field: string; reason: string }>;
}

const MAX_SOURCE_URL = 2048;

/** What all profiles of one scrape job share. */
export interface ScrapedProfileOwner {
  userId: string;
  profileTypeId: string;
  sourceId: string;
  jobId: string;
}
export interface ScrapedLeadProfile {
  leadId: string;
  data: Record<string, unknown>;
  sourceUrl: string;
}

export type ProfileService = ReturnType<typeof createProfileService>;

export function createProfileService(deps: Pick<AppDeps, 'db' | 'clock'>) {
  const repo = profileRepository(deps.db);
  const types = createProfileTypeService(deps);

  async function get(userId: string, id: string): Promise<ProfileWithType> {
    return findOwned(id, 'Profile', (key) => repo.find(userId, key));
  }

  return {
    /**
     * Stores scraped records as profiles of one type (used by the scraping engine). Each item's
     * `data` is fitted to the type's fields: unknown keys are dropped, values coerced where sensible
     * ("$1,200" → 1200, "yes" → true, "FHA, VA" → ["FHA", "VA"]) and values that still do not fit
     * are dropped; an item is skipped (not the batch) when a required field is left without a value.
     * An unknown type is a 404 naming `profileTypeId`. The stored items go in one transaction.
     */
    async createProfiles(
      userId: string,
      profileTypeId: string,
      items: readonly ProfileInput[],
    ): Promise<CreateProfilesResult> {
      const type = await types.get(userId, profileTypeId, 'profileTypeId');
      const now = deps.clock.now();
      const result: CreateProfilesResult = { created: [], skipped: [], dropped: [] };
      const rows: Array<{ index: number; values: Parameters<typeof repo.insertMany>[0][number] }> = [];
      for (const [index, item] of items.entries()) {
        const badId = (['sourceId', 'jobId', 'leadId'] as const).find((k) => item[k] != null && !isUuid(item[k]));
        if (badId) {
          result.skipped.push({ index, reason: `${badId} is not a UUID` });
          continue;
        }
        const { data, dropped, missing } = coerceData(type.fields, item.data);
        for (const d of dropped) result.dropped.push({ index, ...d });
        if (missing.length) {
          result.skipped.push({ index, reason: `missing required field(s): ${missing.join(', ')}` });
          continue;
        }
        if (!Object.keys(data).length) {
          result.skipped.push({ index, reason: 'no value fits a field of the profile type' });
          continue;
        }
        let sourceUrl = typeof item.sourceUrl === 'string' ? item.sourceUrl.trim() || null : null;
        if (sourceUrl && sourceUrl.length > MAX_SOURCE_URL) {
          result.dropped.push({ index, field: 'sourceUrl', reason: `longer than ${MAX_SOURCE_URL} characters` });
          sourceUrl = null;
        }
        rows.push({
          index,
          values: {
            userId,
            profileTypeId: type.id,
            data,
            sourceId: item.sourceId ?? null,
            jobId: item.jobId ?? null,
            leadId: item.leadId ?? null,
            sourceUrl,
            createdAt: now,
            updatedAt: now,
          },
        });
      }
      const inserted = await repo.insertMany(rows.map((r) => r.values));
      const ref = { id: type.id, name: type.name, slug: type.slug };
      result.created = inserted.map((profile) => toProfileView({ profile, type: ref }));
      return result;
    },

    /**
     * Profiles of leads a scrape job has just inserted, `data` already fitted to the type's fields.
     * Made on a transaction's handle (`createProfileService({ db: tx, clock })`), the profiles
     * commit with their leads. Answers how many were stored (one per type and lead at most).
     */
    async createForScrapedLeads(owner: ScrapedProfileOwner, items: readonly ScrapedLeadProfile[]): Promise<number> {
      const now = deps.clock.now();
      return repo.insertForLeads(
        items.map((item) => ({
          ...owner,
          leadId: item.leadId,
          data: item.data,
          sourceUrl: item.sourceUrl.slice(0, MAX_SOURCE_URL),
          createdAt: now,
          updatedAt: now,
        })),
      );
    },

    async list(userId: string, query: ListProfilesQuery) {
      const { limit, cursor, q, ...filter } = query;
      const rows = await repo.list(userId, { ...filter, q: q || undefined }, limit, decodeCursor(cursor));
      const { items, nextCursor } = pageOf(rows.map(toProfileView), limit);
      return { profiles: items, nextCursor };
    },

    get: async (userId: string, id: string) => toProfileView(await get(userId, id)),

    /** Merges `data` (validated against the type's fields) and/or sets `status`. */
    async update(userId: string, id: string, input: UpdateProfileInput) {
      const current = await get(userId, id);
      const type = await types.get(userId, current.type.id);
      const byName = new Map<string, ProfileFieldDefinition>(type.fields.map((f) => [f.name, f]));
      const set: Record<string, unknown> = {};
      const remove: string[] = [];
      const errors: ErrorDetail[] = [];
      for (const [key, value] of Object.entries(input.data ?? {})) {
        const field = byName.get(key);
        if (!field) {
          errors.push({ field: `data.${key}`, message: `not a field of profile type ${type.slug}` });
        } else if (isEmptyValue(value)) {
          if (field.required) errors.push({ field: `data.${key}`, message: 'is required and cannot be removed' });
          else remove.push(key);
        } else {
          const r = coerceFieldValue(field, value, true);
          if (r.ok) set[key] = r.value;
          else errors.push({ field: `data.${key}`, message: r.reason });
        }
      }
      if (errors.length) {
        throw new AppError('VALIDATION_ERROR', `Invalid ${errors.map((e) => e.field).join(', ')}`, { details: errors });
      }
      const row = await repo.patch(userId, id, { set, remove, status: input.status, updatedAt: deps.clock.now() });
      if (!row) throw notFound('Profile');
      return toProfileView({ profile: row, type: current.type });
    },

    /** Totals by status and by type, with per-field completeness; all aggregated in SQL. */
    async stats(userId: string) {
      const [statusCounts, rows] = await Promise.all([repo.countByStatus(userId), repo.completeness(userId)]);
      const byStatus = Object.fromEntries(profileStatuses.map((s) => [s, 0])) as Record<ProfileStatus, number>;
      for (const r of statusCounts) byStatus[r.status] = r.count;
      const byType = new Map<
        string,
        {
          profileTypeId: string;
          name: string;
          slug: string;
          count: number;
          fieldCompleteness: Array<{ field: string; filled: number; ratio: number }>;
        }
      >();
      for (const r of rows) {
        let entry = byType.get(r.id);
        if (!entry)
          byType.set(
            r.id,
            (entry = { profileTypeId: r.id, name: r.name, slug: r.slug, count: r.total, fieldCompleteness: [] }),
          );
        if (r.field === null) continue;
        const ratio = r.total ? Math.round((r.filled / r.total) * 10_000) / 10_000 : 0;
        entry.fieldCompleteness.push({ field: r.field, filled: r.filled, ratio });
      }
      return {
        total: statusCounts.reduce((n, r) => n + r.count, 0),
        byStatus,
        byProfileType: [...byType.values()],
      };
    },
  };
}

export type { ProfileRow };
