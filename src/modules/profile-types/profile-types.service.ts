import type { AppDeps } from '../../deps.ts';
import { isUniqueViolation } from '../../shared/db-errors.ts';
import { AppError, notFound } from '../../shared/errors.ts';
import { findOwned } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { type ProfileTypeRow, profileTypeRepository } from './profile-types.repository.ts';
import type { CreateProfileTypeInput, UpdateProfileTypeInput } from './profile-types.schemas.ts';
import { profileTypeTemplates } from './profile-types.templates.ts';

export const toProfileTypeView = (row: ProfileTypeRow) => ({
  id: row.id,
  name: row.name,
  slug: row.slug,
  description: row.description,
  fields: row.fields,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});

const slugConflict = (slug: string) =>
  new AppError('CONFLICT', `A profile type with slug "${slug}" already exists`, {
    details: [{ field: 'slug', message: `slug "${slug}" is already used by another of your profile types` }],
  });

export type ProfileTypeService = ReturnType<typeof createProfileTypeService>;

export function createProfileTypeService(deps: Pick<AppDeps, 'db' | 'clock'>) {
  const repo = profileTypeRepository(deps.db);

  /** The caller's type, or 404 (unknown, malformed or another user's id). */
  async function get(userId: string, id: string, field?: string): Promise<ProfileTypeRow> {
    return findOwned(id, 'Profile type', (key) => repo.find(userId, key), field);
  }

  return {
    get,

    /** The type, or undefined when it is gone (the job runner: a source's type may be deleted while it runs). */
    find: (userId: string, id: string): Promise<ProfileTypeRow | undefined> => repo.find(userId, id),

    async list(userId: string, query: { limit: number; cursor?: string }) {
      const rows = await repo.list(userId, query.limit, decodeCursor(query.cursor));
      const { items, nextCursor } = pageOf(rows, query.limit);
      return { profileTypes: items.map(toProfileTypeView), nextCursor };
    },

    /** Every type of the user, oldest first. */
    all: (userId: string) => repo.all(userId),

    async create(userId: string, input: CreateProfileTypeInput) {
      const now = deps.clock.now();
      try {
        const row = await repo.insert({
          userId,
          name: input.name,
          slug: input.slug,
          description: input.description || null,
          fields: input.fields,
          createdAt: now,
          updatedAt: now,
        });
        return toProfileTypeView(row);
      } catch (err) {
        if (isUniqueViolation(err)) throw slugConflict(input.slug);
        throw err;
      }
    },

    async update(userId: string, id: string, input: UpdateProfileTypeInput) {
      await get(userId, id);
      const row = await repo.update(userId, id, {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.description !== undefined ? { description: input.description || null } : {}),
        ...(input.fields !== undefined ? { fields: input.fields } : {}),
        updatedAt: deps.clock.now(),
      });
      if (!row) throw notFound('Profile type');
      return toProfileTypeView(row);
    },

    async remove(userId: string, id: string) {
      await findOwned(id, 'Profile type', (key) => repo.delete(userId, key));
    },

    templates: () => profileTypeTemplates,
  };
}
