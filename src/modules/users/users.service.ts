import type { AppDeps } from '../../deps.ts';
import { hashPassword, verifyPassword } from '../../shared/crypto.ts';
import { AppError } from '../../shared/errors.ts';
import { userRepository } from './users.repository.ts';
import { toUserView } from './users.schemas.ts';

export function createUserService(deps: Pick<AppDeps, 'db' | 'clock'>) {
  const repo = userRepository(deps.db);
  return {
    async profile(userId: string) {
      const [user, stats] = await Promise.all([repo.findById(userId), repo.stats(userId)]);
      if (!user) throw new AppError('UNAUTHORIZED', 'Unknown user');
      return { user: toUserView(user), stats };
    },
    async changePassword(userId: string, currentPassword: string, newPassword: string) {
      const user = await repo.findById(userId);
      if (!user || !(await verifyPassword(user.passwordHash, currentPassword))) {
        throw new AppError('INVALID_PASSWORD', 'Current password is incorrect', {
          details: [{ field: 'currentPassword', message: 'incorrect' }],
        });
      }
      await repo.updatePassword(userId, await hashPassword(newPassword), deps.clock.now());
    },
  };
}
