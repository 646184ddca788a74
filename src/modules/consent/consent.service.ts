import type { AppDeps } from '../../deps.ts';
import { AppError } from '../../shared/errors.ts';
import { decodeCursor, pageOf } from '../../shared/pagination.ts';
import { consentRepository } from './consent.repository.ts';
import { toConsentEventView, toConsentView } from './consent.schemas.ts';

const unknownUser = () => new AppError('UNAUTHORIZED', 'Unknown user');

export function createConsentService(deps: Pick<AppDeps, 'db' | 'clock'>) {
  const repo = consentRepository(deps.db);
  return {
    async get(userId: string) {
      const row = await repo.current(userId);
      if (!row) throw unknownUser();
      return toConsentView(row);
    },

    /** Records the new marketing choice (every call is an auditable event, repeated choices included). */
    async updateMarketing(userId: string, granted: boolean, ipAddress: string | undefined) {
      const row = await repo.setMarketing(userId, granted, ipAddress || null, deps.clock.now());
      if (!row) throw unknownUser();
      return toConsentView(row);
    },

    async history(userId: string, limit: number, cursor: string | undefined) {
      const rows = await repo.history(userId, limit, decodeCursor(cursor));
      const { items, nextCursor } = pageOf(rows, limit);
      return { history: items.map(toConsentEventView), nextCursor };
    },
  };
}
