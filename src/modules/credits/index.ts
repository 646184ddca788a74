/**
 * The credits module's face (docs/CONVENTIONS.md "A module's face"): what other modules, the app and the
 * runtime may use. `deps.credits` (assert, spend, adjust inside the caller's transaction) is built here.
 */
export { createCredits, creditsMode, insufficientCredits } from './credits.core.ts';
export { creditRoutes } from './credits.routes.ts';
export { type CreditsService, createCreditsService } from './credits.service.ts';
export { loadStripe, paymentsNotConfigured, STRIPE_SIGNATURE_TOLERANCE_S, stripeSignedAt } from './credits.stripe.ts';
