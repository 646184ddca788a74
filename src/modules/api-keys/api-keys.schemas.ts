import { z } from 'zod';
import { SCOPE_PATTERN } from '../../shared/scopes.ts';

export const apiKeyView = z
  .object({
    id: z.string(),
    name: z.string(),
    prefix: z.string().describe('First 12 characters of the key'),
    scopes: z.array(z.string()),
    orgId: z.string().nullable(),
    expiresAt: z.string().nullable(),
    lastUsedAt: z.string().nullable().describe('Updated at most once a minute'),
    createdAt: z.string(),
  })
  .meta({ id: 'ApiKey' });

export const createdApiKeyView = apiKeyView
  .extend({ key: z.string().describe('The key itself: shown once, stored only as a hash') })
  .meta({ id: 'CreatedApiKey' });

export const createApiKeyBody = z.object({
  name: z.string().trim().min(1).max(100),
  scopes: z
    .array(z.string().regex(SCOPE_PATTERN, 'must be `*` or `resource:read|write|*`'))
    .min(1)
    .max(50)
    .describe('e.g. ["leads:read", "browser:write"]; `*` for all'),
  expiresAt: z.iso.datetime({ offset: true }).optional().nullable(),
  orgId: z
    .uuid()
    .optional()
    .nullable()
    .describe('Organization the key acts for, within your role there (docs/organizations.md)'),
});
