import { z } from 'zod';
import { isoDate } from '../../../shared/http.ts';
import { paginationQuery } from '../../../shared/pagination.ts';
import { clientRefSchema, metadata } from '../sessions/sessions.schemas.ts';

const name = z.string().trim().min(1).max(200);

export const createProfileBody = z.strictObject({
  name,
  metadata: metadata.default({}),
  clientRef: clientRefSchema
    .optional()
    .describe('Defaults to X-Client-Ref; a different one is 400 CLIENT_REF_MISMATCH'),
});
export type CreateProfileBody = z.infer<typeof createProfileBody>;

export const listProfilesQuery = paginationQuery;

export const saveProfileBody = z
  .strictObject({
    profileId: z.string().min(1).max(100).optional().describe('Save into this profile (of the caller)'),
    name: name.optional().describe('Create a profile of this name and save into it'),
    metadata: metadata.optional().describe('With `name`: the new profile’s metadata'),
  })
  .refine((b) => b.profileId === undefined || b.name === undefined, {
    path: ['name'],
    message: 'give profileId or name, not both',
  })
  .default({});
export type SaveProfileBody = z.infer<typeof saveProfileBody>;

export const profileView = z
  .object({
    id: z.string(),
    name: z.string(),
    metadata: z.record(z.string(), z.string()),
    clientRef: z.string().nullable(),
    version: z.number().int().describe('Saves so far (0: empty, never saved)'),
    sizeBytes: z.number().int().describe('Bytes of the state (its JSON, as exported; BROWSER_PROFILE_MAX_MB caps it)'),
    savedAt: isoDate.nullable(),
    writer: z
      .object({ sessionId: z.string(), leaseExpiresAt: isoDate })
      .nullable()
      .describe('The persistProfile session holding the writer lease, while it holds it'),
    createdAt: isoDate,
    updatedAt: isoDate,
  })
  .meta({ id: 'BrowserProfile' });
export type ProfileView = z.infer<typeof profileView>;
