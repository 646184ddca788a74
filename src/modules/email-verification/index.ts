/**
 * The email-verification module's face (docs/CONVENTIONS.md "A module's face"): address validation (the
 * validator `deps.emailValidator` holds), bounces and spam-trap checks. It imports no outreach code: what
 * it needs of the mail outreach sent comes in through `deps`.
 */

export { parseDsn } from './dsn.ts';
export { emailVerificationRoutes } from './email-verification.routes.ts';
export { bouncesFromSender, createEmailVerificationService, type SentMail } from './email-verification.service.ts';
export { addressFlags, createEmailValidator, type EmailValidator } from './validate.ts';
