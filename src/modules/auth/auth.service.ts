import { consentEvents, users } from '../../db/schema/index.ts';
import type { AppDeps } from '../../deps.ts';
import { hashPassword, verifyPassword } from '../../shared/crypto.ts';
import { isUniqueViolation } from '../../shared/db-errors.ts';
import { AppError, accountSuspended } from '../../shared/errors.ts';
import { joinByInvitation } from '../organizations/index.ts';
import { findUserByEmail, toUserView } from '../users/index.ts';

// Verified against when the email is unknown, so both failures take the same time.
const DUMMY_HASH = hashPassword('quarry-timing-equaliser');

export interface SignupInput {
  email: string;
  password: string;
  name?: string;
  termsAccepted: true;
  privacyAccepted: true;
  marketingConsent?: boolean;
  invitationToken?: string;
}

export function createAuthService(deps: Pick<AppDeps, 'db' | 'clock' | 'apiKeys' | 'credits'>) {
  return {
    /** The user, first consent records, credit account (signup grant) and an all-scopes key, in one transaction. */
    async signup(input: SignupInput, ipAddress: string | undefined) {
      const passwordHash = await hashPassword(input.password);
      const now = deps.clock.now();
      try {
        return await deps.db.transaction(async (tx) => {
          const [user] = await tx
            .insert(users)
            .values({
              email: input.email,
              name: input.name ?? null,
              passwordHash,
              termsAcceptedAt: now,
              privacyAcceptedAt: now,
              marketingConsent: input.marketingConsent ?? false,
              consentUpdatedAt: now,
              createdAt: now,
              updatedAt: now,
            })
            .returning();
          await tx.insert(consentEvents).values(
            (['terms', 'privacy', 'marketing'] as const).map((consentType) => ({
              userId: user!.id,
              consentType,
              granted: consentType === 'marketing' ? (input.marketingConsent ?? false) : true,
              ipAddress: ipAddress ?? null,
              changedAt: now,
            })),
          );
          await deps.credits.openAccount(tx, user!.id);
          // A refused invitation refuses the signup: nothing is written.
          if (input.invitationToken) {
            await joinByInvitation(
              tx,
              input.invitationToken,
              { id: user!.id, email: input.email },
              now,
              'invitationToken',
            );
          }
          const { key } = await deps.apiKeys.mint(user!.id, { name: 'signup', scopes: ['*'] }, tx);
          return { user: toUserView(user!), apiKey: key };
        });
      } catch (err) {
        if (isUniqueViolation(err)) {
          throw new AppError('CONFLICT', 'An account with this email already exists', {
            details: [{ field: 'email', message: 'already registered' }],
          });
        }
        throw err;
      }
    },

    /** Checks the password and mints a new all-scopes key. */
    async login(email: string, password: string) {
      const user = await findUserByEmail(deps.db, email);
      const valid = await verifyPassword(user?.passwordHash ?? (await DUMMY_HASH), password);
      if (!user || !valid) throw new AppError('INVALID_CREDENTIALS', 'Email or password is incorrect');
      if (user.status !== 'active') throw accountSuspended();
      const { key } = await deps.apiKeys.mint(user.id, {
        name: `login ${deps.clock.now().toISOString()}`,
        scopes: ['*'],
      });
      return { user: toUserView(user), apiKey: key };
    },
  };
}
