import type { AppDeps } from '../../deps.ts';
import { AppError, notFound } from '../../shared/errors.ts';
import { findOwned } from '../../shared/ids.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { type ProjectRow, projectRepository } from './projects.repository.ts';
import type { CreateProjectInput, UpdateProjectInput } from './projects.schemas.ts';

export const toProjectView = (row: ProjectRow) => ({
  id: row.id,
  name: row.name,
  description: row.description,
  color: row.color,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});

const forbidden = () => new AppError('FORBIDDEN', 'This project belongs to another user');

export type ProjectService = ReturnType<typeof createProjectService>;

export function createProjectService(deps: Pick<AppDeps, 'db' | 'clock'>) {
  const repo = projectRepository(deps.db);

  /**
   * The caller's project for a write. Another user's project is 403 FORBIDDEN (docs/api.md, API conventions);
   * an unknown or malformed id is 404.
   */
  async function ownedForWrite(userId: string, id: string): Promise<ProjectRow> {
    const row = await findOwned(id, 'Project', (key) => repo.findAny(key));
    if (row.userId !== userId) throw forbidden();
    return row;
  }

  return {
    async list(userId: string, query: { limit: number; cursor?: string }) {
      const rows = await repo.list(userId, query.limit, decodeCursor(query.cursor));
      const { items, nextCursor } = pageOf(rows, query.limit);
      return { projects: items.map(toProjectView), nextCursor };
    },

    /** Reads: someone else's project answers 404, as if it did not exist. */
    async get(userId: string, id: string) {
      const row = await findOwned(id, 'Project', async (key) => {
        const found = await repo.findAny(key);
        return found?.userId === userId ? found : undefined;
      });
      return toProjectView(row);
    },

    async create(userId: string, input: CreateProjectInput) {
      const now = deps.clock.now();
      const row = await repo.insert({
        userId,
        name: input.name,
        description: input.description || null,
        color: input.color ?? null,
        createdAt: now,
        updatedAt: now,
      });
      return toProjectView(row);
    },

    async update(userId: string, id: string, input: UpdateProjectInput) {
      await ownedForWrite(userId, id);
      const row = await repo.update(userId, id, {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.description !== undefined ? { description: input.description || null } : {}),
        ...(input.color !== undefined ? { color: input.color } : {}),
        updatedAt: deps.clock.now(),
      });
      if (!row) throw notFound('Project');
      return toProjectView(row);
    },

    async remove(userId: string, id: string) {
      await ownedForWrite(userId, id);
      if (!(await repo.deleteWithData(userId, id))) throw notFound('Project');
    },
  };
}
