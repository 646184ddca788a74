import { z } from 'zod';
import { paginationQuery } from '../../shared/pagination.ts';

export const consentView = z
  .object({
    termsAccepted: z.boolean(),
    privacyAccepted: z.boolean(),
    marketingConsent: z.boolean(),
    updatedAt: z.string().describe('When any consent last changed'),
  })
  .meta({ id: 'Consent' });

/**
 * Only marketing consent can change here; any other key is refused, naming it (terms and privacy are required to use
 * the service).
 */
export const updateConsentBody = z
  .looseObject({ marketingConsent: z.boolean().describe('Whether the user agrees to marketing email') })
  .superRefine((body, ctx) => {
    for (const key of Object.keys(body)) {
      if (key !== 'marketingConsent')
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: 'cannot be changed here: only marketingConsent is supported',
        });
    }
  })
  .transform(({ marketingConsent }) => ({ marketingConsent }));

export const consentEventView = z
  .object({
    consentType: z.enum(['terms', 'privacy', 'marketing']),
    granted: z.boolean(),
    changedAt: z.string(),
    ipAddress: z.string().optional().describe('Address the change was made from, when known'),
  })
  .meta({ id: 'ConsentEvent' });

export const consentHistoryQuery = paginationQuery;

export const toConsentView = (u: {
  termsAcceptedAt: Date | null;
  privacyAcceptedAt: Date | null;
  marketingConsent: boolean;
  consentUpdatedAt: Date;
}) => ({
  termsAccepted: u.termsAcceptedAt !== null,
  privacyAccepted: u.privacyAcceptedAt !== null,
  marketingConsent: u.marketingConsent,
  updatedAt: u.consentUpdatedAt.toISOString(),
});

export const toConsentEventView = (e: {
  consentType: 'terms' | 'privacy' | 'marketing';
  granted: boolean;
  changedAt: Date;
  ipAddress: string | null;
}) => ({
  consentType: e.consentType,
  granted: e.granted,
  changedAt: e.changedAt.toISOString(),
  ...(e.ipAddress ? { ipAddress: e.ipAddress } : {}),
});
