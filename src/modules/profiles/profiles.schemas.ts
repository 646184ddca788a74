import { z } from 'zod';
import { profileStatuses } from '../../db/schema/profiles.ts';
import { isUuid } from '../../shared/ids.ts';
import { paginationQuery } from '../../shared/pagination.ts';

const uuidFilter = (what: string) => z.string().refine(isUuid, 'must be a UUID').describe(what);

export const profileFilters = {
  profileTypeId: uuidFilter('Only profiles of this profile type').optional(),
  status: z.enum(profileStatuses).optional(),
};

export const listProfilesQuery = paginationQuery.extend({
  ...profileFilters,
  sourceId: uuidFilter('Only profiles extracted from this source').optional(),
  jobId: uuidFilter('Only profiles extracted by this job').optional(),
  q: z
    .string()
    .trim()
    .max(200)
    .optional()
    .describe('Case-insensitive substring search in the values of `data` (array elements included)'),
});

export const exportProfilesQuery = z.object({
  ...profileFilters,
  ruleId: uuidFilter(
    'Only profiles a matching rule (yours) matched in its latest execution, with matchScore and aiReasoning columns',
  ).optional(),
  includeUnmatched: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional()
    .describe('With ruleId: every profile the rule evaluated, plus a `matched` column'),
});

export const updateProfileBody = z
  .object({
    data: z
      .record(z.string(), z.unknown())
      .optional()
      .describe(
        'Merged into the stored data: each key must be a field of the profile type and its value must fit the field ' +
          '(numbers may be sent as text such as "$1,200"); ' +
          'null or "" removes the value (not allowed for required fields).',
      ),
    status: z.enum(profileStatuses).optional(),
  })
  .refine((b) => b.data !== undefined || b.status !== undefined, 'at least one of data, status is required');

const typeRef = z.object({ id: z.string(), name: z.string(), slug: z.string() });

export const profileView = z
  .object({
    id: z.string(),
    profileTypeId: z.string(),
    profileType: typeRef,
    status: z.enum(profileStatuses),
    data: z.record(z.string(), z.unknown()),
    sourceId: z.string().nullable(),
    jobId: z.string().nullable(),
    leadId: z.string().nullable(),
    sourceUrl: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Profile' });

export const profileStatsView = z
  .object({
    total: z.number().int(),
    byStatus: z.record(z.enum(profileStatuses), z.number().int()).describe('Every status, zero included'),
    byProfileType: z.array(
      z.object({
        profileTypeId: z.string(),
        name: z.string(),
        slug: z.string(),
        count: z.number().int(),
        fieldCompleteness: z
          .array(z.object({ field: z.string(), filled: z.number().int(), ratio: z.number().min(0).max(1) }))
          .describe(
            'Per field of the type: profiles with a non-empty value, ' +
              'and their share of `count` (0 when there are none)',
          ),
      }),
    ),
  })
  .meta({ id: 'ProfileStats' });

export type ListProfilesQuery = z.infer<typeof listProfilesQuery>;
export type ExportProfilesQuery = z.infer<typeof exportProfilesQuery>;
export type UpdateProfileInput = z.infer<typeof updateProfileBody>;
