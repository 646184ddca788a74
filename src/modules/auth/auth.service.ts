import { consentEvents, users } from '../../db/schema/index.ts';
import type { AppDeps } from '../../deps.ts';
import { hashPassword, verifyPassword } from '../../shared/crypto.ts';
import { isUniqueViolation } from '../../shared/db-errors.ts';
import { AppError, accountSuspended } from '../../shared/errors.ts';
import { joinByInvitation } from '../organizations/index.ts';
import { findUserByEmail, toUserView } from '../users/index.ts';

/** A web console sign-in lasts this long (docs/console.md); signing out ends it sooner. */
export const CONSOLE_SESSION_MS = 14 * 24 * 60 * 60_000;

/**
 * What a signup or login hands out: an API key for programs (the API's routes), or a console session's key, which
 * the console carries in an HttpOnly cookie and which never appears among the user's API keys.
 */
export type Credential = 'api-key' | 'console-session';

const mintOptions = (credential: Credential, name: string, now: Date) =>
  credential === 'console-session'
    ? {
        name: 'console session',
        scopes: ['*'],
        kind: 'console' as const,
        expiresAt: new Date(now.getTime() + CONSOLE_SESSION_MS),
      }
    : { name, scopes: ['*'] };

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
    async signup(input: SignupInput, ipAddress: string | undefined, credential: Credential = 'api-key') {
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
          const { key } = await deps.apiKeys.mint(user!.id, mintOptions(credential, 'signup', now), tx);
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
    async login(email: string, password: string, credential: Credential = 'api-key') {
      const user = await findUserByEmail(deps.db, email);
      const valid = await verifyPassword(user?.passwordHash ?? (await DUMMY_HASH), password);
      if (!user || !valid) throw new AppError('INVALID_CREDENTIALS', 'Email or password is incorrect');
      if (user.status !== 'active') throw accountSuspended();
      const now = deps.clock.now();
      const { key } = await deps.apiKeys.mint(user.id, mintOptions(credential, `login ${now.toISOString()}`, now));
      return { user: toUserView(user), apiKey: key };
    },
  };
}
