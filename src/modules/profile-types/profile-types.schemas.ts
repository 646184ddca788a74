import { z } from 'zod';
import { paginationQuery } from '../../shared/pagination.ts';
import { profileFieldList, profileFieldView } from './profile-fields.ts';

export const SLUG_PATTERN = /^[a-z0-9]+(?:[-_][a-z0-9]+)*$/;

const name = z.string().trim().min(1).max(200);
const description = z.string().trim().max(2000);

export const createProfileTypeBody = z.object({
  name,
  slug: z
    .string()
    .trim()
    .min(1)
    .max(64)
    .regex(
      SLUG_PATTERN,
      'must be lower-case letters and digits separated by single hyphens or underscores, e.g. software-company',
    )
    .describe('URL-safe identifier, unique per user; cannot be changed later'),
  description: description.nullable().optional(),
  fields: profileFieldList,
});

export const updateProfileTypeBody = z
  .object({
    name: name.optional(),
    description: description.nullable().optional(),
    fields: profileFieldList.optional(),
  })
  .describe(
    'Replaces the given attributes (an empty body changes nothing). `fields` replaces the whole list; ' +
      'stored profile data is not rewritten (values of removed fields stay in `data` but are no longer exported, ' +
      'counted or editable).',
  );

export const profileTypeView = z
  .object({
    id: z.string(),
    name: z.string(),
    slug: z.string(),
    description: z.string().nullable(),
    fields: z.array(profileFieldView),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'ProfileType' });

export const profileTypeTemplateView = z
  .object({
    slug: z.string(),
    name: z.string(),
    description: z.string(),
    fields: z.array(profileFieldView),
  })
  .meta({ id: 'ProfileTypeTemplate' });

export const listProfileTypesQuery = paginationQuery;

export type CreateProfileTypeInput = z.infer<typeof createProfileTypeBody>;
export type UpdateProfileTypeInput = z.infer<typeof updateProfileTypeBody>;
