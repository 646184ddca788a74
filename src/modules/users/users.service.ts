import type { Db, Tx } from '../../db/client.ts';
import type { AppDeps } from '../../deps.ts';
import { hashPassword, verifyPassword } from '../../shared/crypto.ts';
import { AppError } from '../../shared/errors.ts';
import { type UserRow, userRepository } from './users.repository.ts';
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
      if (!user?.passwordHash || !(await verifyPassword(user.passwordHash, currentPassword))) {
        throw new AppError('INVALID_PASSWORD', 'Current password is incorrect', {
          details: [{ field: 'currentPassword', message: 'incorrect' }],
        });
      }
      await repo.updatePassword(userId, await hashPassword(newPassword), deps.clock.now());
    },
  };
}

/** The user with this email, if any (sign-in). */
export const findUserByEmail = (db: Db | Tx, email: string) => userRepository(db).findByEmail(email);

/** The account's status ('active' | 'suspended'), undefined once it is deleted: for credentials that outlive a check. */
export const accountStatusOf = async (db: Db | Tx, id: string) => (await userRepository(db).findById(id))?.status;

/** Locks the user's row in the caller's transaction, so account changes to one user apply one after the other. */
export const lockUser = (tx: Db | Tx, id: string) => userRepository(tx).lockById(id);

/** Sets status and/or role in the caller's transaction (an admin's change). */
export const setUserAccountState = (
  tx: Db | Tx,
  id: string,
  values: { status?: UserRow['status']; role?: UserRow['role'] },
  at: Date,
) => userRepository(tx).setAccountState(id, values, at);

/** Creates an organization's account in the caller's transaction; what the organization owns is keyed by its id. */
export const insertOrganizationAccount = async (tx: Db | Tx, name: string, at: Date) =>
  (await userRepository(tx).insertOrganization(name, at)).id;
