import { z } from 'zod';
import { emailInput, password, userView } from '../users/index.ts';

export const signupBody = z.object({
  email: emailInput,
  password,
  name: z
    .string()
    .trim()
    .max(200)
    .nullish()
    .transform((v) => v || undefined)
    .describe('Display name; empty or null means none'),
  termsAccepted: z.literal(true, { error: 'must be true' }),
  privacyAccepted: z.literal(true, { error: 'must be true' }),
  marketingConsent: z.boolean().optional(),
  invitationToken: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe("An organization's invitation to this email: the new account joins it (docs/organizations.md)"),
});

export const loginBody = z.object({ email: emailInput, password: z.string().min(1).max(1024) });

export const sessionView = z
  .object({
    user: userView,
    apiKey: z.string().describe('Bearer credential with every scope; shown once, stored only as a hash'),
  })
  .meta({ id: 'Session' });
